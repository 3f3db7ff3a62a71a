package wasi

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path"
	"strings"

	"github.com/subako/subako-runner/fsmount"
	"github.com/tetratelabs/wazero/api"
)

// dirFor returns the directory descriptor fd if it carries right.
func (in *Instance) dirFor(fd uint32, right uint64) (*fdEntry, errnum) {
	e, errno := in.get(fd)
	if errno != errnoSuccess {
		return nil, errno
	}
	if e.kind != kindDir {
		return nil, errnoNotdir
	}
	if e.base&right == 0 {
		return nil, errnoNotcapable
	}
	return e, errnoSuccess
}

// dirPath resolves a path operand: the directory fd must hold the right,
// and the path must be readable from guest memory. It is resolved beneath
// the directory (resolvePath), following a link in its last component
// with follow; the caller releases what it got.
func (in *Instance) dirPath(ctx context.Context, m memory, a pathArg, follow bool) (dir *fdEntry, at resolved, errno errnum) {
	dir, name, errno := in.dirAndPath(m, a)
	if errno != errnoSuccess {
		return nil, resolved{}, errno
	}
	root, errno := in.dirRoot(dir)
	if errno != errnoSuccess {
		return nil, resolved{}, errno
	}
	at, errno = resolvePath(ctx, root, name, follow)
	return dir, at, errno
}

// readPath reads a guest path: EFAULT out of memory, ENAMETOOLONG from
// fsmount.PathMax bytes on (as Linux), both checked before a byte is
// copied, then ENOENT for "", EINVAL for a NUL, ENOTCAPABLE for an
// absolute path (it names no directory descriptor's contents) and for one
// that climbs out of its directory first (climbsFirst).
func readPath(m memory, ptr, n uint32) (string, errnum) {
	s, errno := readName(m, ptr, n)
	switch {
	case errno != errnoSuccess:
		return "", errno
	case s == "":
		return "", errnoNoent
	case strings.IndexByte(s, 0) >= 0:
		return "", errnoInval
	case strings.HasPrefix(s, "/"), climbsFirst(s):
		return "", errnoNotcapable
	}
	return s, errnoSuccess
}

// climbsFirst reports whether p's first component other than "." is "..":
// such a path leaves its directory whatever the names after it are, so it
// is refused here, before os.Root (the second line, which refuses it too)
// is reached. A ".." after a name is left to os.Root, which resolves it
// through links as the kernel does.
func climbsFirst(p string) bool {
	for p != "" {
		c, rest, _ := strings.Cut(p, "/")
		switch c {
		case "..":
			return true
		case ".", "":
			p = rest
		default:
			return false
		}
	}
	return false
}

// readName copies the guest string [ptr, ptr+n) when it is in memory
// (EFAULT) and shorter than fsmount.PathMax (ENAMETOOLONG): a path or a
// link target. The length is checked first, so a guest-sized operand costs
// the host nothing.
func readName(m memory, ptr, n uint32) (string, errnum) {
	if !m.ok(ptr, n) {
		return "", errnoFault
	}
	if n >= fsmount.PathMax {
		return "", errnoNametoolong
	}
	s, _ := m.str(ptr, n)
	return s, errnoSuccess
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
func (in *Instance) twoDirs(a *fdEntry, oldPath string, b *fdEntry, newPath string) (*os.Root, string, string, errnum) {
	if a == b {
		root, errno := in.dirRoot(a)
		return root, oldPath, newPath, errno
	}
	if a.mount != b.mount || in.cfg.Mounts == nil {
		return nil, "", "", errnoXdev
	}
	if lexEscapes(oldPath) || lexEscapes(newPath) {
		return nil, "", "", errnoNotcapable
	}
	// Each directory's real path, not the one it was opened by: it may
	// have been renamed since, and another directory may have its old name.
	root, errno := in.mountRoot(a.mount)
	if errno != errnoSuccess {
		return nil, "", "", errno
	}
	return root, joinRel(in.realRel(a), oldPath), joinRel(in.realRel(b), newPath), errnoSuccess
}

func pathOpen(ctx context.Context, in *Instance, mod api.Module, p []uint64) errnum {
	m := memOf(mod)
	dir, name, errno := in.dirAndPath(m, pathArg{fd: uint32(p[0]), right: rightPathOpen, ptr: uint32(p[2]), len: uint32(p[3])})
	if errno != errnoSuccess {
		return errno
	}
	dirRoot, errno := in.dirRoot(dir)
	if errno != errnoSuccess {
		return errno
	}
	resPtr := uint32(p[8])
	if !m.ok(resPtr, 4) {
		return errnoFault
	}
	follow := uint32(p[1])&lookupSymlinkFollow != 0
	oflags, fdflags := uint32(p[4]), uint32(p[7])
	if oflags&^0xf != 0 || fdflags&^uint32(fdflagsAll) != 0 {
		return errnoInval
	}
	creat, directory := uint16(oflags)&oflagCreat != 0, uint16(oflags)&oflagDirectory != 0
	excl, trunc := uint16(oflags)&oflagExcl != 0, uint16(oflags)&oflagTrunc != 0
	switch {
	case creat && dir.base&rightPathCreateFile == 0:
		return errnoNotcapable
	case trunc && dir.base&rightPathFilestatSetSize == 0:
		return errnoNotcapable
	case directory && (creat || trunc):
		return errnoInval
	}
	base, inherit := p[5]&dir.inherit, p[6]&dir.inherit
	write := base&rightFdWrite != 0
	read := base&(rightFdRead|rightFdReaddir) != 0
	if dir.readOnly && (write || creat || trunc || uint16(fdflags)&fdflagAppend != 0) {
		return errnoRofs
	}
	if directory && write {
		return errnoIsdir
	}
	// The descriptor keeps its path from the mount root: bounded like any
	// path, or a chain of descriptors each opened by a long path beneath
	// the last would hold PathMax more bytes each (2 GiB for 1,024).
	rel := joinRel(dir.rel, name)
	if len(rel) >= fsmount.PathMax {
		return errnoNametoolong
	}
	// O_CREAT|O_EXCL never follows a last link (open(2)).
	at, errno := resolvePath(ctx, dirRoot, name, follow && !(creat && excl))
	if errno != errnoSuccess {
		return errno
	}
	defer at.release()
	root, name := at.dir, at.base
	if !follow {
		// os.Root follows a final symbolic link; O_NOFOLLOW is ours to do.
		if info, err := root.Lstat(name); err == nil && info.Mode()&fs.ModeSymlink != 0 {
			if creat && excl {
				return errnoExist
			}
			return errnoLoop
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
		if _, err := root.Stat(name); excl || errors.Is(err, fs.ErrNotExist) {
			if !in.reserveEntry(0) {
				return errnoDquot
			}
			charged = true
		}
	}
	f, err := root.OpenFile(name, flag, 0o644)
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
		rel: rel, readOnly: dir.readOnly,
	}
	if info.IsDir() {
		f.Close()
		sub, err := root.OpenRoot(name)
		if err != nil {
			return errnoOf(err)
		}
		e.kind, e.base, e.sub = kindDir, base&dirRights, sub
	} else {
		if directory {
			f.Close()
			return errnoNotdir
		}
		if !info.Mode().IsRegular() {
			f.Close()
			return errnoNotsup
		}
		e.kind, e.base, e.file = kindFile, base&fileRights, f
	}
	fd, errno := in.add(e)
	if errno != errnoSuccess {
		e.close()
		return errno
	}
	m.putU32(resPtr, fd)
	return errnoSuccess
}

func pathCreateDirectory(ctx context.Context, in *Instance, mod api.Module, p []uint64) errnum {
	dir, at, errno := in.dirPath(ctx, memOf(mod), pathArg{fd: uint32(p[0]), right: rightPathCreateDirectory, ptr: uint32(p[1]), len: uint32(p[2])}, false)
	if errno != errnoSuccess {
		return errno
	}
	defer at.release()
	root, name := at.dir, at.base
	if dir.readOnly {
		return errnoRofs
	}
	if !in.reserveEntry(0) {
		if _, err := root.Lstat(name); err == nil {
			return errnoExist
		}
		return errnoDquot
	}
	err := root.Mkdir(name, 0o755)
	if err != nil {
		in.refundEntry(0)
	}
	return errnoOf(err)
}

func pathFilestatGet(ctx context.Context, in *Instance, mod api.Module, p []uint64) errnum {
	m := memOf(mod)
	_, at, errno := in.dirPath(ctx, m, pathArg{fd: uint32(p[0]), right: rightPathFilestatGet, ptr: uint32(p[2]), len: uint32(p[3])}, uint32(p[1])&lookupSymlinkFollow != 0)
	if errno != errnoSuccess {
		return errno
	}
	defer at.release()
	root, name := at.dir, at.base
	b, ok := m.slice(uint32(p[4]), sizeFilestat)
	if !ok {
		return errnoFault
	}
	var info fs.FileInfo
	var err error
	if uint32(p[1])&lookupSymlinkFollow != 0 {
		info, err = root.Stat(name)
	} else {
		info, err = root.Lstat(name)
	}
	if err != nil {
		return errnoOf(err)
	}
	st := filestat(info)
	copy(b, st[:])
	return errnoSuccess
}

func pathFilestatSetTimes(ctx context.Context, in *Instance, mod api.Module, p []uint64) errnum {
	dir, at, errno := in.dirPath(ctx, memOf(mod), pathArg{fd: uint32(p[0]), right: rightPathFilestatSetTimes, ptr: uint32(p[2]), len: uint32(p[3])}, uint32(p[1])&lookupSymlinkFollow != 0)
	if errno != errnoSuccess {
		return errno
	}
	defer at.release()
	root, name := at.dir, at.base
	a, mt, errno := times(p[4], p[5], uint16(p[6]))
	if errno != errnoSuccess {
		return errno
	}
	if dir.readOnly {
		return errnoRofs
	}
	if uint32(p[1])&lookupSymlinkFollow == 0 {
		info, err := root.Lstat(name)
		if err != nil {
			return errnoOf(err)
		}
		if info.Mode()&fs.ModeSymlink != 0 {
			if uint16(p[6]) == 0 {
				return errnoSuccess
			}
			return errnoOf(lchtimes(root, name, a, mt))
		}
	}
	if uint16(p[6]) == 0 {
		_, err := root.Stat(name)
		return errnoOf(err)
	}
	return errnoOf(root.Chtimes(name, a, mt))
}

func pathLink(ctx context.Context, in *Instance, mod api.Module, p []uint64) errnum {
	root, oldName, newName, errno := in.twoWritablePaths(mod,
		pathArg{fd: uint32(p[0]), right: rightPathLinkSource, ptr: uint32(p[2]), len: uint32(p[3])},
		pathArg{fd: uint32(p[4]), right: rightPathLinkTarget, ptr: uint32(p[5]), len: uint32(p[6])})
	if errno != errnoSuccess {
		return errno
	}
	return in.move(ctx, uint32(p[0]), root, oldName, newName, false, uint32(p[1])&lookupSymlinkFollow != 0)
}

func pathReadlink(ctx context.Context, in *Instance, mod api.Module, p []uint64) errnum {
	m := memOf(mod)
	_, at, errno := in.dirPath(ctx, m, pathArg{fd: uint32(p[0]), right: rightPathReadlink, ptr: uint32(p[1]), len: uint32(p[2])}, false)
	if errno != errnoSuccess {
		return errno
	}
	defer at.release()
	root, name := at.dir, at.base
	buf, ok := m.slice(uint32(p[3]), uint32(p[4]))
	if !ok || !m.ok(uint32(p[5]), 4) {
		return errnoFault
	}
	target, err := root.Readlink(name)
	if err != nil {
		return errnoOf(err)
	}
	m.putU32(uint32(p[5]), uint32(copy(buf, target)))
	return errnoSuccess
}

func pathRemoveDirectory(ctx context.Context, in *Instance, mod api.Module, p []uint64) errnum {
	dir, at, errno := in.dirPath(ctx, memOf(mod), pathArg{fd: uint32(p[0]), right: rightPathRemoveDirectory, ptr: uint32(p[1]), len: uint32(p[2])}, false)
	if errno != errnoSuccess {
		return errno
	}
	defer at.release()
	root, name := at.dir, at.base
	if dir.readOnly {
		return errnoRofs
	}
	// Root.Remove removes files too; check the kind first.
	info, err := root.Lstat(name)
	if err != nil {
		return errnoOf(err)
	}
	if !info.IsDir() {
		return errnoNotdir
	}
	return errnoOf(root.Remove(name))
}

func pathUnlinkFile(ctx context.Context, in *Instance, mod api.Module, p []uint64) errnum {
	dir, at, errno := in.dirPath(ctx, memOf(mod), pathArg{fd: uint32(p[0]), right: rightPathUnlinkFile, ptr: uint32(p[1]), len: uint32(p[2])}, false)
	if errno != errnoSuccess {
		return errno
	}
	defer at.release()
	root, name := at.dir, at.base
	if dir.readOnly {
		return errnoRofs
	}
	// Root.Remove removes empty directories too; check the kind first.
	info, err := root.Lstat(name)
	if err != nil {
		return errnoOf(err)
	}
	if info.IsDir() {
		return errnoIsdir
	}
	if strings.HasSuffix(name, "/") {
		return errnoNotdir
	}
	return errnoOf(root.Remove(name))
}

func pathRename(ctx context.Context, in *Instance, mod api.Module, p []uint64) errnum {
	root, oldName, newName, errno := in.twoWritablePaths(mod,
		pathArg{fd: uint32(p[0]), right: rightPathRenameSource, ptr: uint32(p[1]), len: uint32(p[2])},
		pathArg{fd: uint32(p[3]), right: rightPathRenameTarget, ptr: uint32(p[4]), len: uint32(p[5])})
	if errno != errnoSuccess {
		return errno
	}
	return in.move(ctx, uint32(p[0]), root, oldName, newName, true, false)
}

// dirAndPath checks a path operand as dirPath does, without reaching the
// directory's mount.
func (in *Instance) dirAndPath(m memory, a pathArg) (*fdEntry, string, errnum) {
	dir, errno := in.dirFor(a.fd, a.right)
	if errno != errnoSuccess {
		return nil, "", errno
	}
	name, errno := readPath(m, a.ptr, a.len)
	return dir, name, errno
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
func (in *Instance) twoWritablePaths(mod api.Module, from, to pathArg) (*os.Root, string, string, errnum) {
	m := memOf(mod)
	// Both operands are read before either mount is reached (twoDirs).
	a, oldName, errno := in.dirAndPath(m, from)
	if errno != errnoSuccess {
		return nil, "", "", errno
	}
	b, newName, errno := in.dirAndPath(m, to)
	if errno != errnoSuccess {
		return nil, "", "", errno
	}
	if a.readOnly || b.readOnly {
		return nil, "", "", errnoRofs
	}
	return in.twoDirs(a, oldName, b, newName)
}

// pathSymlink creates a symbolic link. Following links is always confined
// by os.Root; the rule of links.go (makeSymlink) keeps every link inside
// its mount for the host as well.
func pathSymlink(ctx context.Context, in *Instance, mod api.Module, p []uint64) errnum {
	dir, errno := in.dirFor(uint32(p[2]), rightPathSymlink)
	if errno != errnoSuccess {
		return errno
	}
	m := memOf(mod)
	target, errno := readName(m, uint32(p[0]), uint32(p[1]))
	if errno != errnoSuccess {
		return errno
	}
	name, errno := readPath(m, uint32(p[3]), uint32(p[4]))
	if errno != errnoSuccess {
		return errno
	}
	switch {
	case dir.readOnly:
		return errnoRofs
	case target == "":
		return errnoNoent
	case strings.IndexByte(target, 0) >= 0:
		return errnoInval
	}
	root, errno := in.dirRoot(dir)
	if errno != errnoSuccess {
		return errno
	}
	return in.makeSymlink(ctx, dir, root, target, name)
}
