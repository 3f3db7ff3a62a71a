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

// renameAt renames from to to in the directories the resolution opened
// (renameat(2)), so the move is the one the link rule judged, and behaves
// as rename(2): a directory replaces an empty one, anything else onto a
// directory fails with the kernel's errno (ENOTEMPTY, EISDIR), where
// os.Root refuses every rename onto a directory with EEXIST.
func renameAt(_ *os.Root, from, to resolved) error {
	return twoAt(from, to, func(ofd int, nfd int) error {
		return syscall.Renameat(ofd, from.base, nfd, to.base)
	})
}

// linkAt makes the hard link to of from in the directories the resolution
// opened (linkat(2), never following from).
func linkAt(_ *os.Root, from, to resolved) error {
	return twoAt(from, to, func(ofd int, nfd int) error {
		op, err := syscall.BytePtrFromString(from.base)
		if err != nil {
			return err
		}
		np, err := syscall.BytePtrFromString(to.base)
		if err != nil {
			return err
		}
		_, _, errno := syscall.Syscall6(syscall.SYS_LINKAT, uintptr(ofd), uintptr(unsafe.Pointer(op)),
			uintptr(nfd), uintptr(unsafe.Pointer(np)), 0, 0)
		if errno != 0 {
			return errno
		}
		return nil
	})
}

// twoAt runs act with descriptors of the two resolutions' directories.
func twoAt(from, to resolved, act func(ofd, nfd int) error) error {
	od, err := from.dir.Open(".")
	if err != nil {
		return err
	}
	defer od.Close()
	nd, err := to.dir.Open(".")
	if err != nil {
		return err
	}
	defer nd.Close()
	return act(int(od.Fd()), int(nd.Fd()))
}
