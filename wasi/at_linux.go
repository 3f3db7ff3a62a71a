package wasi

import (
	"os"
	"strings"
	"syscall"
	"time"
	"unsafe"
)

// parentAt opens the directory holding the last element of name beneath
// root (resolved by os.Root, so confined like every path) and returns it
// with that element, for the *at system calls os.Root does not offer. The
// element is never followed by those calls, so it cannot lead out of root.
// ok is false when name has no plain last element ("", ".", "..", or a
// trailing slash): then no *at call applies.
func parentAt(root *os.Root, name string) (dir *os.File, base string, ok bool, err error) {
	parent, base := ".", name
	if i := strings.LastIndexByte(name, '/'); i >= 0 {
		parent, base = name[:i], name[i+1:]
		if parent == "" {
			parent = "."
		}
	}
	if base == "" || base == "." || base == ".." {
		return nil, "", false, nil
	}
	dir, err = root.Open(parent)
	if err != nil {
		return nil, "", false, err
	}
	return dir, base, true, nil
}

// lchtimes sets the times of name itself, not of what it links to
// (utimensat with AT_SYMLINK_NOFOLLOW); a zero time is left unchanged.
func lchtimes(root *os.Root, name string, atime, mtime time.Time) error {
	dir, base, ok, err := parentAt(root, name)
	if err != nil {
		return err
	}
	if !ok {
		return syscall.EINVAL
	}
	defer dir.Close()
	ts := [2]syscall.Timespec{timespec(atime), timespec(mtime)}
	p, err := syscall.BytePtrFromString(base)
	if err != nil {
		return err
	}
	const atSymlinkNofollow = 0x100
	_, _, errno := syscall.Syscall6(syscall.SYS_UTIMENSAT, dir.Fd(), uintptr(unsafe.Pointer(p)),
		uintptr(unsafe.Pointer(&ts)), atSymlinkNofollow, 0, 0)
	if errno != 0 {
		return errno
	}
	return nil
}

// utimeOmit leaves a time unchanged in utimensat.
const utimeOmit = (1 << 30) - 2

func timespec(t time.Time) syscall.Timespec {
	if t.IsZero() {
		return syscall.Timespec{Nsec: utimeOmit}
	}
	return syscall.NsecToTimespec(t.UnixNano())
}

// renameOntoDir renames oldName onto the existing directory newName as
// rename(2) does: a directory replaces an empty one atomically, anything
// else fails with the kernel's errno (ENOTEMPTY, EISDIR). os.Root refuses
// every rename onto a directory with EEXIST, for portability.
func renameOntoDir(root *os.Root, oldName, newName string) error {
	oldName, newName = strings.TrimRight(oldName, "/"), strings.TrimRight(newName, "/")
	od, ob, ok, err := parentAt(root, oldName)
	if err != nil || !ok {
		return orEINVAL(err)
	}
	defer od.Close()
	nd, nb, ok, err := parentAt(root, newName)
	if err != nil || !ok {
		return orEINVAL(err)
	}
	defer nd.Close()
	return syscall.Renameat(int(od.Fd()), ob, int(nd.Fd()), nb)
}

func orEINVAL(err error) error {
	if err != nil {
		return err
	}
	return syscall.EINVAL
}
