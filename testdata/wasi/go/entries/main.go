// Command entries creates directory entries in /volume/tmp until the host
// refuses one, and prints how many it made and the errno of the refusal:
//
//	entries wide N    N directories side by side
//	entries deep N    a chain N directories deep, each made beneath a
//	                  descriptor of the previous one (constant path length)
//	entries links N   N symbolic links
//
// The output is one line, "<mode> <made> <errno>" (errno 0: all N made).
package main

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"syscall"
	"unsafe"
)

//go:wasmimport wasi_snapshot_preview1 path_create_directory
func pathCreateDirectory(fd int32, path unsafe.Pointer, pathLen uint32) uint32

//go:wasmimport wasi_snapshot_preview1 path_open
func pathOpen(fd int32, dirflags uint32, path unsafe.Pointer, pathLen uint32, oflags uint32, base, inherit uint64, fdflags uint32, res unsafe.Pointer) uint32

//go:wasmimport wasi_snapshot_preview1 fd_close
func fdClose(fd int32) uint32

func main() {
	mode := os.Args[1]
	n, _ := strconv.Atoi(os.Args[2])
	made, errno := 0, uint32(0)
	switch mode {
	case "wide":
		for ; made < n; made++ {
			if err := os.Mkdir("/volume/tmp/d"+strconv.Itoa(made), 0o755); err != nil {
				errno = code(err)
				break
			}
		}
	case "links":
		for ; made < n; made++ {
			if err := os.Symlink("x", "/volume/tmp/l"+strconv.Itoa(made)); err != nil {
				errno = code(err)
				break
			}
		}
	case "deep":
		name := []byte("d")
		fd := int32(3) // /volume/tmp
		for ; made < n; made++ {
			if errno = pathCreateDirectory(fd, unsafe.Pointer(&name[0]), 1); errno != 0 {
				break
			}
			var next int32
			// oflags directory; rights path_create_directory and path_open.
			const oflagDirectory, rights = 2, 1<<9 | 1<<13
			if errno = pathOpen(fd, 0, unsafe.Pointer(&name[0]), 1, oflagDirectory, rights, rights, 0, unsafe.Pointer(&next)); errno != 0 {
				break
			}
			if fd != 3 {
				fdClose(fd)
			}
			fd = next
		}
	}
	fmt.Println(mode, made, errno)
}

func code(err error) uint32 {
	var en syscall.Errno
	if errors.As(err, &en) {
		return uint32(en)
	}
	return 1000
}
