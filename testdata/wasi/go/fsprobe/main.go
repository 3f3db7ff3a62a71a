// Command fsprobe runs the file-system operations named by its arguments,
// one per argument ("op:arg:arg"), and prints one line per operation:
// "<arg> ok[ result]" or "<arg> errno=<n>", n being the raw WASI errno
// (syscall.Errno on wasip1 is the WASI number).
package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"unsafe"
)

//go:wasmimport wasi_snapshot_preview1 fd_prestat_get
func fdPrestatGet(fd int32, buf unsafe.Pointer) uint32

//go:wasmimport wasi_snapshot_preview1 fd_prestat_dir_name
func fdPrestatDirName(fd int32, buf unsafe.Pointer, n uint32) uint32

//go:wasmimport wasi_snapshot_preview1 fd_allocate
func fdAllocate(fd int32, off, n uint64) uint32

//go:wasmimport wasi_snapshot_preview1 sock_accept
func sockAccept(fd int32, flags uint32, res unsafe.Pointer) uint32

//go:wasmimport wasi_snapshot_preview1 sock_recv
func sockRecv(fd int32, iovs unsafe.Pointer, n uint32, flags uint32, res unsafe.Pointer, resFlags unsafe.Pointer) uint32

//go:wasmimport wasi_snapshot_preview1 sock_send
func sockSend(fd int32, iovs unsafe.Pointer, n uint32, flags uint32, res unsafe.Pointer) uint32

//go:wasmimport wasi_snapshot_preview1 path_open
func pathOpen(fd int32, dirflags uint32, path unsafe.Pointer, pathLen uint32, oflags uint32, base, inherit uint64, fdflags uint32, res unsafe.Pointer) uint32

//go:wasmimport wasi_snapshot_preview1 path_link
func pathLink(oldfd int32, flags uint32, old unsafe.Pointer, oldLen uint32, newfd int32, new unsafe.Pointer, newLen uint32) uint32

//go:wasmimport wasi_snapshot_preview1 path_rename
func pathRename(oldfd int32, old unsafe.Pointer, oldLen uint32, newfd int32, new unsafe.Pointer, newLen uint32) uint32

//go:wasmimport wasi_snapshot_preview1 sock_shutdown
func sockShutdown(fd int32, how uint32) uint32

func errno(err error) string {
	var en syscall.Errno
	if errors.As(err, &en) {
		return fmt.Sprintf("errno=%d", uint32(en))
	}
	return "error " + err.Error()
}

func num(s string) int64 {
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		panic(err)
	}
	return n
}

func main() {
	for _, arg := range os.Args[1:] {
		res, err := do(strings.Split(arg, ":"))
		switch {
		case err != nil:
			fmt.Println(arg, errno(err))
		case res != "":
			fmt.Println(arg, "ok", res)
		default:
			fmt.Println(arg, "ok")
		}
	}
}

func do(a []string) (string, error) {
	switch a[0] {
	case "preopens":
		var names []string
		for fd := int32(3); ; fd++ {
			var st [8]byte
			if e := fdPrestatGet(fd, unsafe.Pointer(&st[0])); e != 0 {
				return strings.Join(names, ","), nil
			}
			n := uint32(st[4]) | uint32(st[5])<<8 | uint32(st[6])<<16 | uint32(st[7])<<24
			buf := make([]byte, n+1)
			if e := fdPrestatDirName(fd, unsafe.Pointer(&buf[0]), n); e != 0 {
				return "", syscall.Errno(e)
			}
			names = append(names, string(buf[:n]))
		}
	case "write": // write:path:n — create/truncate and write n bytes at once
		return "", os.WriteFile(a[1], make([]byte, num(a[2])), 0o644)
	case "writes": // writes:path:size:count — count writes of size bytes
		f, err := os.Create(a[1])
		if err != nil {
			return "", err
		}
		defer f.Close()
		buf := make([]byte, num(a[2]))
		for i := int64(0); i < num(a[3]); i++ {
			if _, err := f.Write(buf); err != nil {
				return "", fmt.Errorf("write %d: %w", i, err)
			}
		}
		return "", nil
	case "append":
		f, err := os.OpenFile(a[1], os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
		if err != nil {
			return "", err
		}
		defer f.Close()
		_, err = f.WriteString(a[2])
		return "", err
	case "pwrite": // pwrite:path:offset:n
		f, err := os.OpenFile(a[1], os.O_RDWR|os.O_CREATE, 0o644)
		if err != nil {
			return "", err
		}
		defer f.Close()
		_, err = f.WriteAt(make([]byte, num(a[3])), num(a[2]))
		return "", err
	case "truncate":
		return "", os.Truncate(a[1], num(a[2]))
	case "allocate":
		f, err := os.OpenFile(a[1], os.O_RDWR|os.O_CREATE, 0o644)
		if err != nil {
			return "", err
		}
		defer f.Close()
		if e := fdAllocate(int32(f.Fd()), 0, 4096); e != 0 {
			return "", syscall.Errno(e)
		}
		return "", nil
	case "read":
		b, err := os.ReadFile(a[1])
		return string(b), err
	case "size":
		fi, err := os.Stat(a[1])
		if err != nil {
			return "", err
		}
		return strconv.FormatInt(fi.Size(), 10), nil
	case "lstat":
		fi, err := os.Lstat(a[1])
		if err != nil {
			return "", err
		}
		return fi.Mode().Type().String(), nil
	case "mkdir":
		return "", os.Mkdir(a[1], 0o755)
	case "rmdir", "unlink":
		if a[0] == "rmdir" {
			return "", syscall.Rmdir(a[1])
		}
		return "", syscall.Unlink(a[1])
	case "rename":
		return "", os.Rename(a[1], a[2])
	case "symlink":
		return "", os.Symlink(a[1], a[2])
	case "link":
		return "", os.Link(a[1], a[2])
	case "readlink":
		return os.Readlink(a[1])
	case "ls":
		es, err := os.ReadDir(a[1])
		if err != nil {
			return "", err
		}
		var names []string
		for _, e := range es {
			n := e.Name()
			if e.IsDir() {
				n += "/"
			}
			names = append(names, n)
		}
		sort.Strings(names)
		return strings.Join(names, ","), nil
	case "seek": // seek:path — write, seek back, read, report size from the end
		f, err := os.OpenFile(a[1], os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
		if err != nil {
			return "", err
		}
		defer f.Close()
		if _, err := f.WriteString("hello world"); err != nil {
			return "", err
		}
		if _, err := f.Seek(6, io.SeekStart); err != nil {
			return "", err
		}
		b := make([]byte, 5)
		if _, err := io.ReadFull(f, b); err != nil {
			return "", err
		}
		end, err := f.Seek(0, io.SeekEnd)
		if err != nil {
			return "", err
		}
		return fmt.Sprintf("%s %d", b, end), nil
	case "chtimes":
		return "", os.Chtimes(a[1], timeZero, timeEpoch)
	case "rawopen", "rawopen-nofollow": // rawopen:dirfd:path — read-only open beneath dirfd
		p := []byte(a[2])
		var fd int32
		flags := uint32(1)
		if a[0] == "rawopen-nofollow" {
			flags = 0
		}
		if e := pathOpen(int32(num(a[1])), flags, unsafe.Pointer(&p[0]), uint32(len(p)), 0, 2, 2, 0, unsafe.Pointer(&fd)); e != 0 {
			return "", syscall.Errno(e)
		}
		b := make([]byte, 64)
		n, _ := syscall.Read(int(fd), b)
		syscall.Close(int(fd))
		return string(b[:max(n, 0)]), nil
	case "rawlink", "rawrename": // rawlink:oldfd:old:newfd:new
		o, n := []byte(a[2]), []byte(a[4])
		var e uint32
		if a[0] == "rawlink" {
			e = pathLink(int32(num(a[1])), 0, unsafe.Pointer(&o[0]), uint32(len(o)), int32(num(a[3])), unsafe.Pointer(&n[0]), uint32(len(n)))
		} else {
			e = pathRename(int32(num(a[1])), unsafe.Pointer(&o[0]), uint32(len(o)), int32(num(a[3])), unsafe.Pointer(&n[0]), uint32(len(n)))
		}
		if e != 0 {
			return "", syscall.Errno(e)
		}
		return "", nil
	case "mkfiles": // mkfiles:dir:n
		for i := int64(0); i < num(a[2]); i++ {
			if err := os.WriteFile(fmt.Sprintf("%s/file-%04d", a[1], i), nil, 0o644); err != nil {
				return "", err
			}
		}
		return "", nil
	case "count":
		es, err := os.ReadDir(a[1])
		return strconv.Itoa(len(es)), err
	case "sock": // sock:fd
		fd := int32(num(a[1]))
		var r [8]byte
		var iov [8]byte
		return fmt.Sprintf("%d,%d,%d,%d",
			sockAccept(fd, 0, unsafe.Pointer(&r[0])),
			sockRecv(fd, unsafe.Pointer(&iov[0]), 0, 0, unsafe.Pointer(&r[0]), unsafe.Pointer(&r[4])),
			sockSend(fd, unsafe.Pointer(&iov[0]), 0, 0, unsafe.Pointer(&r[0])),
			sockShutdown(fd, 0)), nil
	}
	return "", fmt.Errorf("unknown op %q", a[0])
}
