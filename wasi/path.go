package wasi

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path"
	"strings"

	"github.com/tetratelabs/wazero/api"
)

// dirFor returns the directory descriptor fd if it carries right.
func (in *Instance) dirFor(fd uint32, right uint64) (*fdEntry, Errno) {
	e, errno := in.get(fd)
	if errno != ErrnoSuccess {
		return nil, errno
	}
	if e.kind != kindDir {
		return nil, ErrnoNotdir
	}
	if e.base&right == 0 {
		return nil, ErrnoNotcapable
	}
	return e, ErrnoSuccess
}

// readPath reads a guest path relative to a directory descriptor. Absolute
// paths name no directory descriptor's contents: ENOTCAPABLE, like "..".
// dirPath resolves a path operand: the directory fd must hold the right,
// and the path must be readable from guest memory.
func (in *Instance) dirPath(m memory, a pathArg) (*fdEntry, string, Errno) {
	dir, errno := in.dirFor(a.fd, a.right)
	if errno != ErrnoSuccess {
		return nil, "", errno
	}
	name, errno := readPath(m, a.ptr, a.len)
	return dir, name, errno
}

func readPath(m memory, ptr, n uint32) (string, Errno) {
	s, ok := m.str(ptr, n)
	switch {
	case !ok:
		return "", ErrnoFault
	case s == "":
		return "", ErrnoNoent
	case strings.IndexByte(s, 0) >= 0:
		return "", ErrnoInval
	case strings.HasPrefix(s, "/"):
		return "", ErrnoNotcapable
	}
	return s, ErrnoSuccess
}

// joinRel appends p to a mount-relative directory path without cleaning it,
// so that ".." keeps its meaning after symbolic links when os.Root resolves
// the result.
func joinRel(dir, p string) string {
	if dir == "." {
		return p
	}
	return dir + "/" + p
}

// lexEscapes reports whether p, read as text, leaves its directory.
func lexEscapes(p string) bool {
	c := path.Clean(p)
	return path.IsAbs(c) || c == ".." || strings.HasPrefix(c, "../")
}

// twoDirs resolves the (root, old, new) of an operation on two directory
// descriptors: the same descriptor resolves beneath it; two descriptors of
// one mount resolve from the mount root, each path first checked not to
// leave its own directory; different mounts are EXDEV.
func (in *Instance) twoDirs(a *fdEntry, oldPath string, b *fdEntry, newPath string) (*os.Root, string, string, Errno) {
	if a == b {
		return a.root, oldPath, newPath, ErrnoSuccess
	}
	if a.mount != b.mount || in.cfg.Mounts == nil {
		return nil, "", "", ErrnoXdev
	}
	if lexEscapes(oldPath) || lexEscapes(newPath) {
		return nil, "", "", ErrnoNotcapable
	}
	// Each directory's real path, not the one it was opened by: it may
	// have been renamed since, and another directory may have its old name.
	return in.mountRoot(a), joinRel(in.realRel(a), oldPath), joinRel(in.realRel(b), newPath), ErrnoSuccess
}

func pathOpen(_ context.Context, in *Instance, mod api.Module, p []uint64) Errno {
	m := memOf(mod)
	dir, name, errno := in.dirPath(m, pathArg{fd: uint32(p[0]), right: RightPathOpen, ptr: uint32(p[2]), len: uint32(p[3])})
	if errno != ErrnoSuccess {
		return errno
	}
	resPtr := uint32(p[8])
	if !m.ok(resPtr, 4) {
		return ErrnoFault
	}
	follow := uint32(p[1])&lookupSymlinkFollow != 0
	oflags, fdflags := uint32(p[4]), uint32(p[7])
	if oflags&^0xf != 0 || fdflags&^uint32(fdflagsAll) != 0 {
		return ErrnoInval
	}
	creat, directory := uint16(oflags)&oflagCreat != 0, uint16(oflags)&oflagDirectory != 0
	excl, trunc := uint16(oflags)&oflagExcl != 0, uint16(oflags)&oflagTrunc != 0
	switch {
	case creat && dir.base&RightPathCreateFile == 0:
		return ErrnoNotcapable
	case trunc && dir.base&RightPathFilestatSetSize == 0:
		return ErrnoNotcapable
	case directory && (creat || trunc):
		return ErrnoInval
	}
	base, inherit := p[5]&dir.inherit, p[6]&dir.inherit
	write := base&RightFdWrite != 0
	read := base&(RightFdRead|RightFdReaddir) != 0
	if dir.readOnly && (write || creat || trunc || uint16(fdflags)&fdflagAppend != 0) {
		return ErrnoRofs
	}
	if directory && write {
		return ErrnoIsdir
	}
	if !follow {
		// os.Root follows a final symbolic link; O_NOFOLLOW is ours to do.
		if info, err := dir.root.Lstat(name); err == nil && info.Mode()&fs.ModeSymlink != 0 {
			if creat && excl {
				return ErrnoExist
			}
			return ErrnoLoop
		}
	}
	flag := noBlockOpenFlag
	switch {
	case write && read:
		flag |= os.O_RDWR
	case write:
		flag |= os.O_WRONLY
	}
	if directory {
		flag |= dirOpenFlag
	}
	if creat {
		flag |= os.O_CREATE
	}
	if excl {
		flag |= os.O_EXCL
	}
	if trunc {
		flag |= os.O_TRUNC
	}
	// A file this open creates is a new directory entry for the budget.
	charged := false
	if creat {
		if _, err := dir.root.Stat(name); excl || errors.Is(err, fs.ErrNotExist) {
			if !in.reserveEntry(0) {
				return ErrnoDquot
			}
			charged = true
		}
	}
	f, err := dir.root.OpenFile(name, flag, 0o644)
	if err != nil {
		if charged {
			in.refundEntry(0)
		}
		return errnoOf(err)
	}
	info, err := f.Stat()
	if err != nil {
		f.Close()
		return errnoOf(err)
	}
	e := &fdEntry{
		inherit: inherit, flags: uint16(fdflags), mount: dir.mount,
		rel: joinRel(dir.rel, name), readOnly: dir.readOnly,
	}
	if info.IsDir() {
		f.Close()
		sub, err := dir.root.OpenRoot(name)
		if err != nil {
			return errnoOf(err)
		}
		e.kind, e.base, e.root, e.ownsRoot = kindDir, base&dirRights, sub, true
	} else {
		if directory {
			f.Close()
			return ErrnoNotdir
		}
		if !info.Mode().IsRegular() {
			f.Close()
			return ErrnoNotsup
		}
		e.kind, e.base, e.file = kindFile, base&fileRights, f
	}
	fd, errno := in.add(e)
	if errno != ErrnoSuccess {
		e.close()
		return errno
	}
	m.putU32(resPtr, fd)
	return ErrnoSuccess
}

func pathCreateDirectory(_ context.Context, in *Instance, mod api.Module, p []uint64) Errno {
	dir, name, errno := in.dirPath(memOf(mod), pathArg{fd: uint32(p[0]), right: RightPathCreateDirectory, ptr: uint32(p[1]), len: uint32(p[2])})
	if errno != ErrnoSuccess {
		return errno
	}
	if dir.readOnly {
		return ErrnoRofs
	}
	if !in.reserveEntry(0) {
		if _, err := dir.root.Lstat(name); err == nil {
			return ErrnoExist
		}
		return ErrnoDquot
	}
	err := dir.root.Mkdir(name, 0o755)
	if err != nil {
		in.refundEntry(0)
	}
	return errnoOf(err)
}

func pathFilestatGet(_ context.Context, in *Instance, mod api.Module, p []uint64) Errno {
	m := memOf(mod)
	dir, name, errno := in.dirPath(m, pathArg{fd: uint32(p[0]), right: RightPathFilestatGet, ptr: uint32(p[2]), len: uint32(p[3])})
	if errno != ErrnoSuccess {
		return errno
	}
	b, ok := m.slice(uint32(p[4]), sizeFilestat)
	if !ok {
		return ErrnoFault
	}
	var info fs.FileInfo
	var err error
	if uint32(p[1])&lookupSymlinkFollow != 0 {
		info, err = dir.root.Stat(name)
	} else {
		info, err = dir.root.Lstat(name)
	}
	if err != nil {
		return errnoOf(err)
	}
	st := filestat(info)
	copy(b, st[:])
	return ErrnoSuccess
}

func pathFilestatSetTimes(_ context.Context, in *Instance, mod api.Module, p []uint64) Errno {
	dir, name, errno := in.dirPath(memOf(mod), pathArg{fd: uint32(p[0]), right: RightPathFilestatSetTimes, ptr: uint32(p[2]), len: uint32(p[3])})
	if errno != ErrnoSuccess {
		return errno
	}
	a, mt, errno := times(p[4], p[5], uint16(p[6]))
	if errno != ErrnoSuccess {
		return errno
	}
	if dir.readOnly {
		return ErrnoRofs
	}
	if uint32(p[1])&lookupSymlinkFollow == 0 {
		info, err := dir.root.Lstat(name)
		if err != nil {
			return errnoOf(err)
		}
		if info.Mode()&fs.ModeSymlink != 0 {
			if uint16(p[6]) == 0 {
				return ErrnoSuccess
			}
			return errnoOf(lchtimes(dir.root, name, a, mt))
		}
	}
	if uint16(p[6]) == 0 {
		_, err := dir.root.Stat(name)
		return errnoOf(err)
	}
	return errnoOf(dir.root.Chtimes(name, a, mt))
}

func pathLink(ctx context.Context, in *Instance, mod api.Module, p []uint64) Errno {
	root, oldName, newName, errno := in.twoWritablePaths(mod,
		pathArg{fd: uint32(p[0]), right: RightPathLinkSource, ptr: uint32(p[2]), len: uint32(p[3])},
		pathArg{fd: uint32(p[4]), right: RightPathLinkTarget, ptr: uint32(p[5]), len: uint32(p[6])})
	if errno != ErrnoSuccess {
		return errno
	}
	if uint32(p[1])&lookupSymlinkFollow != 0 {
		info, err := root.Lstat(oldName)
		if err != nil {
			return errnoOf(err)
		}
		if info.Mode()&fs.ModeSymlink != 0 {
			// os.Root cannot link what a symbolic link names (linkat
			// with AT_SYMLINK_FOLLOW); EINVAL, as wasmtime answers.
			return ErrnoInval
		}
	}
	if errno := in.checkMove(ctx, uint32(p[0]), root, oldName, newName, false); errno != ErrnoSuccess {
		return errno
	}
	if !in.reserveEntry(0) {
		return ErrnoDquot
	}
	err := root.Link(oldName, newName)
	if err != nil {
		in.refundEntry(0)
	}
	return errnoOf(err)
}

func pathReadlink(_ context.Context, in *Instance, mod api.Module, p []uint64) Errno {
	m := memOf(mod)
	dir, name, errno := in.dirPath(m, pathArg{fd: uint32(p[0]), right: RightPathReadlink, ptr: uint32(p[1]), len: uint32(p[2])})
	if errno != ErrnoSuccess {
		return errno
	}
	buf, ok := m.slice(uint32(p[3]), uint32(p[4]))
	if !ok || !m.ok(uint32(p[5]), 4) {
		return ErrnoFault
	}
	target, err := dir.root.Readlink(name)
	if err != nil {
		return errnoOf(err)
	}
	m.putU32(uint32(p[5]), uint32(copy(buf, target)))
	return ErrnoSuccess
}

func pathRemoveDirectory(_ context.Context, in *Instance, mod api.Module, p []uint64) Errno {
	dir, name, errno := in.dirPath(memOf(mod), pathArg{fd: uint32(p[0]), right: RightPathRemoveDirectory, ptr: uint32(p[1]), len: uint32(p[2])})
	if errno != ErrnoSuccess {
		return errno
	}
	if dir.readOnly {
		return ErrnoRofs
	}
	// Root.Remove removes files too; check the kind first.
	info, err := dir.root.Lstat(name)
	if err != nil {
		return errnoOf(err)
	}
	if !info.IsDir() {
		return ErrnoNotdir
	}
	return errnoOf(dir.root.Remove(name))
}

func pathUnlinkFile(_ context.Context, in *Instance, mod api.Module, p []uint64) Errno {
	dir, name, errno := in.dirPath(memOf(mod), pathArg{fd: uint32(p[0]), right: RightPathUnlinkFile, ptr: uint32(p[1]), len: uint32(p[2])})
	if errno != ErrnoSuccess {
		return errno
	}
	if dir.readOnly {
		return ErrnoRofs
	}
	// Root.Remove removes empty directories too; check the kind first.
	info, err := dir.root.Lstat(name)
	if err != nil {
		return errnoOf(err)
	}
	if info.IsDir() {
		return ErrnoIsdir
	}
	if strings.HasSuffix(name, "/") {
		return ErrnoNotdir
	}
	return errnoOf(dir.root.Remove(name))
}

func pathRename(ctx context.Context, in *Instance, mod api.Module, p []uint64) Errno {
	root, oldName, newName, errno := in.twoWritablePaths(mod,
		pathArg{fd: uint32(p[0]), right: RightPathRenameSource, ptr: uint32(p[1]), len: uint32(p[2])},
		pathArg{fd: uint32(p[3]), right: RightPathRenameTarget, ptr: uint32(p[4]), len: uint32(p[5])})
	if errno != ErrnoSuccess {
		return errno
	}
	if errno := in.checkMove(ctx, uint32(p[0]), root, oldName, newName, true); errno != ErrnoSuccess {
		return errno
	}
	err := root.Rename(oldName, newName)
	if errors.Is(err, fs.ErrExist) && isDirAt(root, newName) {
		err = renameOntoDir(root, oldName, newName)
	}
	return errnoOf(err)
}

// isDirAt reports whether name is a directory itself (not a link to one).
func isDirAt(root *os.Root, name string) bool {
	info, err := root.Lstat(strings.TrimRight(name, "/"))
	return err == nil && info.IsDir()
}

// pathArg is one (directory fd, path) operand of a path_* function.
type pathArg struct {
	fd    uint32
	right uint64
	ptr   uint32
	len   uint32
}

// twoWritablePaths resolves the two operands of path_link and path_rename:
// both directories must hold their rights and be writable, and both paths
// must lie in one mount (twoDirs), in whose root they are returned.
func (in *Instance) twoWritablePaths(mod api.Module, from, to pathArg) (*os.Root, string, string, Errno) {
	m := memOf(mod)
	a, oldName, errno := in.dirPath(m, from)
	if errno != ErrnoSuccess {
		return nil, "", "", errno
	}
	b, newName, errno := in.dirPath(m, to)
	if errno != ErrnoSuccess {
		return nil, "", "", errno
	}
	if a.readOnly || b.readOnly {
		return nil, "", "", ErrnoRofs
	}
	return in.twoDirs(a, oldName, b, newName)
}

// pathSymlink creates a symbolic link. Following links is always confined
// by os.Root; the rule of links.go (checkNewLink) keeps every link inside
// its mount for the host as well. The new entry and its target's length are
// charged to the write budget.
func pathSymlink(_ context.Context, in *Instance, mod api.Module, p []uint64) Errno {
	dir, errno := in.dirFor(uint32(p[2]), RightPathSymlink)
	if errno != ErrnoSuccess {
		return errno
	}
	m := memOf(mod)
	target, ok := m.str(uint32(p[0]), uint32(p[1]))
	if !ok {
		return ErrnoFault
	}
	name, errno := readPath(m, uint32(p[3]), uint32(p[4]))
	if errno != ErrnoSuccess {
		return errno
	}
	switch {
	case dir.readOnly:
		return ErrnoRofs
	case target == "":
		return ErrnoNoent
	case strings.IndexByte(target, 0) >= 0:
		return ErrnoInval
	}
	if errno := in.checkNewLink(dir, target, name); errno != ErrnoSuccess {
		return errno
	}
	if !in.reserveEntry(len(target)) {
		return ErrnoDquot
	}
	err := dir.root.Symlink(target, name)
	if err != nil {
		in.refundEntry(len(target))
	}
	return errnoOf(err)
}
