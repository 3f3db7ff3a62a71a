package wasi

import (
	"context"
	"io"
	"io/fs"
	"math"
	"os"
	"time"

	"github.com/tetratelabs/wazero/api"
)

func fileType(mode fs.FileMode) uint8 {
	switch {
	case mode.IsRegular():
		return filetypeRegularFile
	case mode.IsDir():
		return filetypeDirectory
	case mode&fs.ModeSymlink != 0:
		return filetypeSymbolicLink
	case mode&fs.ModeSocket != 0:
		return filetypeSocketStream
	case mode&fs.ModeCharDevice != 0:
		return filetypeCharacterDevice
	case mode&fs.ModeDevice != 0:
		return filetypeBlockDevice
	}
	return filetypeUnknown
}

func filestat(info fs.FileInfo) [sizeFilestat]byte {
	var b [sizeFilestat]byte
	dev, ino, nlink, atim, ctim := statIDs(info)
	le64(b[0:], dev)
	le64(b[8:], ino)
	b[16] = fileType(info.Mode())
	le64(b[24:], nlink)
	le64(b[32:], uint64(info.Size()))
	le64(b[40:], atim)
	le64(b[48:], uint64(info.ModTime().UnixNano()))
	le64(b[56:], ctim)
	return b
}

func (e *fdEntry) isStdio() bool { return e.kind <= kindStderr }

// mountRoot is the root of mount i. It is the only way to the roots of
// the Set, which marks the mount touched (the runtime recycles an
// untouched /volume/tmp without looking at it again): whatever reaches a
// mount's host directory, directly or through a descriptor opened beneath
// it, went through here first.
func (in *Instance) mountRoot(i int) (*os.Root, errnum) {
	if in.cfg.Mounts == nil {
		return nil, errnoBadf
	}
	r, err := in.cfg.Mounts.Root(i)
	if err != nil {
		return nil, errnoOf(err)
	}
	return r, errnoSuccess
}

// dirRoot is the root that directory descriptor e resolves paths beneath:
// its own for a directory the guest opened, its mount's for a preopen.
func (in *Instance) dirRoot(e *fdEntry) (*os.Root, errnum) {
	if e.sub != nil {
		return e.sub, errnoSuccess
	}
	return in.mountRoot(e.mount)
}

func fdAdvise(_ context.Context, in *Instance, _ api.Module, p []uint64) errnum {
	e, errno := in.get(uint32(p[0]))
	if errno != errnoSuccess {
		return errno
	}
	if uint32(p[3]) > 5 {
		return errnoInval
	}
	switch {
	case e.isStdio():
		return errnoSpipe
	case e.kind == kindDir:
		return errnoBadf
	case e.base&rightFdAdvise == 0:
		return errnoNotcapable
	}
	return errnoSuccess // advice is only a hint
}

// fdAllocate is ENOTSUP on files by ABI 1: preallocation would grow files
// outside the write budget's accounting of bytes written. A descriptor that
// is no file at all fails first, as fallocate(2) does: EBADF for a
// directory, ESPIPE for stdio.
func fdAllocate(_ context.Context, in *Instance, _ api.Module, p []uint64) errnum {
	e, errno := in.get(uint32(p[0]))
	switch {
	case errno != errnoSuccess:
		return errno
	case e.kind == kindDir:
		return errnoBadf
	case e.isStdio():
		return errnoSpipe
	case e.base&rightFdAllocate == 0:
		return errnoNotcapable
	}
	return errnoNotsup
}

func fdClose(_ context.Context, in *Instance, _ api.Module, p []uint64) errnum {
	in.mu.Lock()
	e := in.fds[uint32(p[0])]
	delete(in.fds, uint32(p[0]))
	in.mu.Unlock()
	if e == nil {
		return errnoBadf
	}
	return errnoOf(e.close())
}

func syncFd(in *Instance, fd uint32, right uint64) errnum {
	e, errno := in.get(fd)
	if errno != errnoSuccess {
		return errno
	}
	switch {
	case e.isStdio():
		return errnoInval
	case e.base&right == 0:
		return errnoNotcapable
	case e.kind == kindDir:
		return errnoSuccess
	}
	return errnoOf(e.file.Sync())
}

func fdDatasync(_ context.Context, in *Instance, _ api.Module, p []uint64) errnum {
	return syncFd(in, uint32(p[0]), rightFdDatasync)
}

func fdSync(_ context.Context, in *Instance, _ api.Module, p []uint64) errnum {
	return syncFd(in, uint32(p[0]), rightFdSync)
}

func fdFdstatGet(_ context.Context, in *Instance, mod api.Module, p []uint64) errnum {
	e, errno := in.get(uint32(p[0]))
	if errno != errnoSuccess {
		return errno
	}
	b, ok := memOf(mod).slice(uint32(p[1]), sizeFdstat)
	if !ok {
		return errnoFault
	}
	var st [sizeFdstat]byte
	switch e.kind {
	case kindDir:
		st[0] = filetypeDirectory
	case kindFile:
		st[0] = filetypeRegularFile
		if info, err := e.file.Stat(); err == nil {
			st[0] = fileType(info.Mode())
		}
	default:
		st[0] = filetypeCharacterDevice
	}
	le16(st[2:], e.flags)
	le64(st[8:], e.base)
	le64(st[16:], e.inherit)
	copy(b, st[:])
	return errnoSuccess
}

func fdFdstatSetFlags(_ context.Context, in *Instance, _ api.Module, p []uint64) errnum {
	e, errno := in.get(uint32(p[0]))
	if errno != errnoSuccess {
		return errno
	}
	flags := uint32(p[1])
	if flags&^uint32(fdflagsAll) != 0 {
		return errnoInval
	}
	if e.base&rightFdFdstatSetFlags == 0 {
		return errnoNotcapable
	}
	in.mu.Lock()
	e.flags = uint16(flags)
	in.mu.Unlock()
	return errnoSuccess
}

// fdFdstatSetRights can only drop rights.
func fdFdstatSetRights(_ context.Context, in *Instance, _ api.Module, p []uint64) errnum {
	e, errno := in.get(uint32(p[0]))
	if errno != errnoSuccess {
		return errno
	}
	base, inherit := p[1], p[2]
	if base&^e.base != 0 || inherit&^e.inherit != 0 {
		return errnoNotcapable
	}
	in.mu.Lock()
	e.base, e.inherit = base, inherit
	in.mu.Unlock()
	return errnoSuccess
}

func (in *Instance) statFd(e *fdEntry) ([sizeFilestat]byte, errnum) {
	var info fs.FileInfo
	var err error
	switch e.kind {
	case kindDir:
		root, errno := in.dirRoot(e)
		if errno != errnoSuccess {
			return [sizeFilestat]byte{}, errno
		}
		info, err = root.Stat(".")
	case kindFile:
		info, err = e.file.Stat()
	default:
		var st [sizeFilestat]byte
		st[16] = filetypeCharacterDevice
		le64(st[24:], 1)
		return st, errnoSuccess
	}
	if err != nil {
		return [sizeFilestat]byte{}, errnoOf(err)
	}
	return filestat(info), errnoSuccess
}

func fdFilestatGet(_ context.Context, in *Instance, mod api.Module, p []uint64) errnum {
	e, errno := in.get(uint32(p[0]))
	if errno != errnoSuccess {
		return errno
	}
	b, ok := memOf(mod).slice(uint32(p[1]), sizeFilestat)
	if !ok {
		return errnoFault
	}
	if e.base&rightFdFilestatGet == 0 {
		return errnoNotcapable
	}
	st, errno := in.statFd(e)
	if errno == errnoSuccess {
		copy(b, st[:])
	}
	return errno
}

// fdFilestatSetSize charges growth past the current end to the budget.
func fdFilestatSetSize(_ context.Context, in *Instance, _ api.Module, p []uint64) errnum {
	e, errno := in.get(uint32(p[0]))
	if errno != errnoSuccess {
		return errno
	}
	switch {
	case e.isStdio():
		return errnoInval
	case e.kind == kindDir:
		return errnoIsdir
	case e.readOnly:
		return errnoRofs
	case e.base&rightFdFilestatSetSize == 0:
		return errnoNotcapable
	case p[1] > math.MaxInt64:
		return errnoFbig
	}
	size := int64(p[1])
	info, err := e.file.Stat()
	if err != nil {
		return errnoOf(err)
	}
	growth := size - info.Size()
	if growth > 0 && in.cfg.Budget != nil && !in.cfg.Budget.Reserve(growth) {
		return errnoDquot
	}
	if err := e.file.Truncate(size); err != nil {
		if growth > 0 && in.cfg.Budget != nil {
			in.cfg.Budget.Refund(growth)
		}
		return errnoOf(err)
	}
	return errnoSuccess
}

// times converts set_times arguments; zero times are left unchanged.
func times(atim, mtim uint64, fst uint16) (time.Time, time.Time, errnum) {
	if fst&^(fstAtim|fstAtimNow|fstMtim|fstMtimNow) != 0 ||
		fst&(fstAtim|fstAtimNow) == fstAtim|fstAtimNow || fst&(fstMtim|fstMtimNow) == fstMtim|fstMtimNow {
		return time.Time{}, time.Time{}, errnoInval
	}
	var a, m time.Time
	now := time.Now()
	switch {
	case fst&fstAtimNow != 0:
		a = now
	case fst&fstAtim != 0:
		a = time.Unix(0, int64(atim))
	}
	switch {
	case fst&fstMtimNow != 0:
		m = now
	case fst&fstMtim != 0:
		m = time.Unix(0, int64(mtim))
	}
	// time.Unix(0, 0) is not the zero Time, so the epoch can still be set;
	// Chtimes leaves a zero Time unchanged.
	return a, m, errnoSuccess
}

func fdFilestatSetTimes(_ context.Context, in *Instance, _ api.Module, p []uint64) errnum {
	e, errno := in.get(uint32(p[0]))
	if errno != errnoSuccess {
		return errno
	}
	a, m, errno := times(p[1], p[2], uint16(p[3]))
	switch {
	case errno != errnoSuccess:
		return errno
	case e.isStdio():
		return errnoBadf
	case e.readOnly:
		return errnoRofs
	case e.base&rightFdFilestatSetTimes == 0:
		return errnoNotcapable
	case uint16(p[3]) == 0:
		return errnoSuccess
	case e.kind == kindDir:
		root, errno := in.dirRoot(e)
		if errno != errnoSuccess {
			return errno
		}
		return errnoOf(root.Chtimes(".", a, m))
	}
	root, errno := in.mountRoot(e.mount)
	if errno != errnoSuccess {
		return errno
	}
	return errnoOf(root.Chtimes(e.rel, a, m))
}

func fdPrestatGet(_ context.Context, in *Instance, mod api.Module, p []uint64) errnum {
	e, errno := in.get(uint32(p[0]))
	if errno != errnoSuccess {
		return errno
	}
	if e.preopen == "" {
		return errnoBadf
	}
	b, ok := memOf(mod).slice(uint32(p[1]), sizePrestat)
	if !ok {
		return errnoFault
	}
	var st [sizePrestat]byte // tag 0: a directory
	le32(st[4:], uint32(len(e.preopen)))
	copy(b, st[:])
	return errnoSuccess
}

func fdPrestatDirName(_ context.Context, in *Instance, mod api.Module, p []uint64) errnum {
	e, errno := in.get(uint32(p[0]))
	if errno != errnoSuccess {
		return errno
	}
	if e.preopen == "" {
		return errnoBadf
	}
	if uint32(p[2]) < uint32(len(e.preopen)) {
		return errnoNametoolong
	}
	b, ok := memOf(mod).slice(uint32(p[1]), uint32(len(e.preopen)))
	if !ok {
		return errnoFault
	}
	copy(b, e.preopen)
	return errnoSuccess
}

// fdRenumber moves from onto to (closing what to held); both must be open.
func fdRenumber(_ context.Context, in *Instance, _ api.Module, p []uint64) errnum {
	from, to := uint32(p[0]), uint32(p[1])
	in.mu.Lock()
	ef, et := in.fds[from], in.fds[to]
	if ef == nil || et == nil {
		in.mu.Unlock()
		return errnoBadf
	}
	if from == to {
		in.mu.Unlock()
		return errnoSuccess
	}
	in.fds[to] = ef
	delete(in.fds, from)
	in.mu.Unlock()
	et.close()
	return errnoSuccess
}

func fdSeek(_ context.Context, in *Instance, mod api.Module, p []uint64) errnum {
	e, errno := in.get(uint32(p[0]))
	if errno != errnoSuccess {
		return errno
	}
	offset, whence, resPtr := int64(p[1]), uint32(p[2]), uint32(p[3])
	if !memOf(mod).ok(resPtr, 8) {
		return errnoFault
	}
	if whence > whenceEnd {
		return errnoInval
	}
	return seek(in, mod, e, offset, whence, resPtr, offset == 0 && whence == whenceCur)
}

func seek(in *Instance, mod api.Module, e *fdEntry, offset int64, whence uint32, resPtr uint32, tellOnly bool) errnum {
	switch {
	case e.isStdio():
		return errnoSpipe
	case e.kind == kindDir:
		return errnoIsdir
	case e.base&rightFdSeek == 0 && !(tellOnly && e.base&rightFdTell != 0):
		return errnoNotcapable
	}
	pos, err := e.file.Seek(offset, int(whence))
	if err != nil {
		return errnoOf(err)
	}
	memOf(mod).putU64(resPtr, uint64(pos))
	return errnoSuccess
}

func fdTell(_ context.Context, in *Instance, mod api.Module, p []uint64) errnum {
	e, errno := in.get(uint32(p[0]))
	if errno != errnoSuccess {
		return errno
	}
	if !memOf(mod).ok(uint32(p[1]), 8) {
		return errnoFault
	}
	return seek(in, mod, e, 0, whenceCur, uint32(p[1]), true)
}

// fdRead reads stdin (blocking unless NONBLOCK, then EAGAIN when empty) or
// a file.
func fdRead(ctx context.Context, in *Instance, mod api.Module, p []uint64) errnum {
	e, errno := in.get(uint32(p[0]))
	if errno != errnoSuccess {
		return errno
	}
	m := memOf(mod)
	bufs, total, errno := m.iovecs(uint32(p[1]), uint32(p[2]))
	if errno != errnoSuccess {
		return errno
	}
	resPtr := uint32(p[3])
	if !m.ok(resPtr, 4) {
		return errnoFault
	}
	var n int
	switch {
	case e.kind == kindStdin:
		if total == 0 {
			break
		}
		for {
			buffered, eof, wake := in.stdin().state()
			if buffered > 0 {
				n = in.stdin().readInto(bufs)
				break
			}
			if eof {
				break
			}
			if e.flags&fdflagNonblock != 0 {
				return errnoAgain
			}
			in.wait(ctx, mod, wake, nil)
		}
	case e.kind == kindDir:
		return errnoIsdir
	case e.kind != kindFile || e.base&rightFdRead == 0:
		return errnoBadf
	default:
		var err error
		n, err = readFile(ctx, mod, e.file, bufs, -1)
		if err != nil && n == 0 {
			return errnoOf(err)
		}
	}
	m.putU32(resPtr, uint32(n))
	return errnoSuccess
}

// ioChunk is the most bytes one host read or write moves between two
// checks of the call's context, so a large fd_read or fd_write (up to the
// whole guest memory) stops soon after the deadline.
const ioChunk = 1 << 20

// checkContext ends the instance if the call's context is done. Host
// functions that loop call it after each step (a chunk of ioChunk bytes,
// a chunk of directory entries), so a call does at most one step past the
// deadline: a small write just at the deadline still lands (a crash
// report then keeps its last stderr line), a large one stops after 1 MiB.
// The fuel meter ends a guest looping over small calls.
func checkContext(ctx context.Context, mod api.Module) {
	if ctx.Err() != nil {
		exitForContext(ctx, mod)
	}
}

// readFile reads into bufs in order, at the current position (off < 0) or
// at off, in chunks of ioChunk with the context checked after each,
// stopping at the first short read.
func readFile(ctx context.Context, mod api.Module, f *os.File, bufs iovecList, off int64) (int, error) {
	total := 0
	for buf := range bufs.all() {
		for len(buf) > 0 {
			b := buf[:min(len(buf), ioChunk)]
			var n int
			var err error
			if off < 0 {
				n, err = f.Read(b)
			} else {
				n, err = f.ReadAt(b, off+int64(total))
			}
			total += n
			if err == io.EOF {
				return total, nil
			}
			if err != nil {
				return total, err
			}
			if n < len(b) {
				return total, nil
			}
			buf = buf[n:]
			checkContext(ctx, mod)
		}
	}
	return total, nil
}

func fdPread(ctx context.Context, in *Instance, mod api.Module, p []uint64) errnum {
	e, errno := in.get(uint32(p[0]))
	if errno != errnoSuccess {
		return errno
	}
	m := memOf(mod)
	bufs, _, errno := m.iovecs(uint32(p[1]), uint32(p[2]))
	if errno != errnoSuccess {
		return errno
	}
	resPtr := uint32(p[4])
	switch {
	case !m.ok(resPtr, 4):
		return errnoFault
	case e.isStdio():
		return errnoSpipe
	case e.kind == kindDir:
		return errnoIsdir
	case e.base&rightFdRead == 0:
		return errnoBadf
	case p[3] > math.MaxInt64:
		return errnoInval
	}
	n, err := readFile(ctx, mod, e.file, bufs, int64(p[3]))
	if err != nil && n == 0 {
		return errnoOf(err)
	}
	m.putU32(resPtr, uint32(n))
	return errnoSuccess
}

// fdWrite writes to stdout/stderr (Writes of guest memory, at most
// Config.MaxStdioWrite bytes per call) or to a file (charged to the write
// budget).
func fdWrite(ctx context.Context, in *Instance, mod api.Module, p []uint64) errnum {
	e, errno := in.get(uint32(p[0]))
	if errno != errnoSuccess {
		return errno
	}
	m := memOf(mod)
	bufs, total, errno := m.iovecs(uint32(p[1]), uint32(p[2]))
	if errno != errnoSuccess {
		return errno
	}
	resPtr := uint32(p[3])
	if !m.ok(resPtr, 4) {
		return errnoFault
	}
	if total > math.MaxUint32 {
		return errnoInval
	}
	switch e.kind {
	case kindStdout, kindStderr:
		w := in.cfg.Stdout
		if e.kind == kindStderr {
			w = in.cfg.Stderr
		}
		m.putU32(resPtr, in.writeStdio(ctx, mod, w, bufs))
		return errnoSuccess
	case kindStdin:
		return errnoBadf
	case kindDir:
		if e.readOnly {
			return errnoRofs
		}
		return errnoBadf
	}
	n, errno := in.writeFile(ctx, mod, e, bufs, total, -1)
	if errno != errnoSuccess {
		return errno
	}
	m.putU32(resPtr, uint32(n))
	return errnoSuccess
}

// writeStdio passes the guest's bytes to w straight from guest memory, one
// iovec (or ioChunk of it) at a time, never concatenated: overlapping
// iovecs cost the host no memory. It stops after in.cfg.MaxStdioWrite
// bytes and returns the count written, a short write the guest's libc
// retries. The context is checked after each Write; a Write error ends
// the instance with exitCodeAborted.
func (in *Instance) writeStdio(ctx context.Context, mod api.Module, w io.Writer, bufs iovecList) uint32 {
	limit := in.cfg.MaxStdioWrite
	if limit <= 0 {
		limit = defaultMaxStdioWrite
	}
	var n int64
	for buf := range bufs.all() {
		for len(buf) > 0 && n < limit {
			c := int(min(int64(len(buf)), ioChunk, limit-n))
			if _, err := w.Write(buf[:c]); err != nil {
				exit(ctx, mod, exitCodeAborted)
			}
			n += int64(c)
			buf = buf[c:]
			checkContext(ctx, mod)
		}
	}
	return uint32(n)
}

func fdPwrite(ctx context.Context, in *Instance, mod api.Module, p []uint64) errnum {
	e, errno := in.get(uint32(p[0]))
	if errno != errnoSuccess {
		return errno
	}
	m := memOf(mod)
	bufs, total, errno := m.iovecs(uint32(p[1]), uint32(p[2]))
	if errno != errnoSuccess {
		return errno
	}
	resPtr := uint32(p[4])
	switch {
	case !m.ok(resPtr, 4):
		return errnoFault
	case total > math.MaxUint32:
		return errnoInval
	case e.isStdio():
		return errnoSpipe
	case e.kind == kindDir && e.readOnly:
		return errnoRofs
	case e.kind == kindDir:
		return errnoBadf
	case p[3] > math.MaxInt64:
		return errnoInval
	}
	n, errno := in.writeFile(ctx, mod, e, bufs, total, int64(p[3]))
	if errno != errnoSuccess {
		return errno
	}
	m.putU32(resPtr, uint32(n))
	return errnoSuccess
}

// writeFile writes bufs at the current position, at the end (APPEND), or at
// off (off >= 0). The budget is charged all or nothing before writing:
// bytes written plus any hole created past the current end of file. Bytes
// go from guest memory in chunks of ioChunk, the context checked after
// each; an instance ended there is refunded what it did not write.
func (in *Instance) writeFile(ctx context.Context, mod api.Module, e *fdEntry, bufs iovecList, total uint64, off int64) (int, errnum) {
	if e.readOnly {
		return 0, errnoRofs
	}
	if e.base&rightFdWrite == 0 {
		return 0, errnoBadf
	}
	if total == 0 {
		return 0, errnoSuccess
	}
	info, err := e.file.Stat()
	if err != nil {
		return 0, errnoOf(err)
	}
	size := info.Size()
	pos := off
	appendMode := off < 0 && e.flags&fdflagAppend != 0
	switch {
	case appendMode:
		pos = size
	case off < 0:
		if pos, err = e.file.Seek(0, io.SeekCurrent); err != nil {
			return 0, errnoOf(err)
		}
	}
	if pos > math.MaxInt64-int64(total) {
		return 0, errnoFbig
	}
	hole := max(0, pos-size)
	cost := int64(total) + hole
	budget := in.cfg.Budget
	if budget != nil && !budget.Reserve(cost) {
		return 0, errnoDquot
	}
	if appendMode {
		if _, err := e.file.Seek(0, io.SeekEnd); err != nil {
			if budget != nil {
				budget.Refund(cost)
			}
			return 0, errnoOf(err)
		}
	}
	written := 0
	settle := func() {
		if budget != nil {
			used := int64(written)
			if written > 0 {
				used += hole
			}
			budget.Refund(cost - used)
		}
	}
write:
	for buf := range bufs.all() {
		for len(buf) > 0 {
			b := buf[:min(len(buf), ioChunk)]
			var n int
			if off < 0 {
				n, err = e.file.Write(b)
			} else {
				n, err = e.file.WriteAt(b, off+int64(written))
			}
			written += n
			if err != nil {
				break write
			}
			buf = buf[n:]
			if ctx.Err() != nil {
				settle()
				exitForContext(ctx, mod)
			}
		}
	}
	settle()
	if err != nil && written == 0 {
		return 0, errnoOf(err)
	}
	return written, errnoSuccess
}
