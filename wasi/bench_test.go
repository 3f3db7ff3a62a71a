package wasi

import (
	"testing"
)

// BenchmarkFdWriteStdout is the cost of one 1 KiB fd_write to stdout (the
// copy handed to the host's writer included).
func BenchmarkFdWriteStdout(b *testing.B) {
	h := newHostBench(b)
	m := memOf(h.mod)
	m.putU32(0, 1024)
	m.putU32(4, 1024)
	b.SetBytes(1024)
	for b.Loop() {
		if errno, _ := h.call(h.ctx, fdWrite, 1, 0, 1, 16); errno != errnoSuccess {
			b.Fatal(errno)
		}
	}
}

// BenchmarkPathOpenClose is the cost of opening and closing a file beneath
// a preopen (os.Root resolution included).
func BenchmarkPathOpenClose(b *testing.B) {
	h := newHostBench(b)
	m := memOf(h.mod)
	m.m.Write(100, []byte("file"))
	for b.Loop() {
		if errno, _ := h.call(h.ctx, pathOpen, 3, 1, 100, 4, 0, rightFdRead, 0, 0, 300); errno != errnoSuccess {
			b.Fatal(errno)
		}
		fd, _ := m.u32(300)
		h.call(h.ctx, fdClose, uint64(fd))
	}
}

// BenchmarkFileWrite4K is the cost of a 4 KiB fd_write to a file, budget
// accounting included.
func BenchmarkFileWrite4K(b *testing.B) {
	h := newHostBench(b)
	m := memOf(h.mod)
	m.m.Write(100, []byte("out"))
	if errno, _ := h.call(h.ctx, pathOpen, 3, 1, 100, 3, uint64(oflagCreat|oflagTrunc), rightFdWrite, 0, 0, 300); errno != errnoSuccess {
		b.Fatal(errno)
	}
	fd, _ := m.u32(300)
	m.putU32(0, 1024)
	m.putU32(4, 4096)
	h.in.cfg.Budget = nil
	b.SetBytes(4096)
	for b.Loop() {
		if errno, _ := h.call(h.ctx, fdWrite, uint64(fd), 0, 1, 16); errno != errnoSuccess {
			b.Fatal(errno)
		}
	}
}

// BenchmarkSymlinkClimbing is the cost of making and removing a link that
// climbs (a/b/l -> ../../x): the link rule's check, under the mount's
// lock, in the directory one resolution opened.
func BenchmarkSymlinkClimbing(b *testing.B) {
	h := newHostBench(b)
	if e := h.mkdir(3, "a"); e != errnoSuccess {
		b.Fatal(e)
	}
	if e := h.mkdir(3, "a/b"); e != errnoSuccess {
		b.Fatal(e)
	}
	h.in.cfg.Budget = nil
	np, nl := h.str(1, "a/b/l")
	for b.Loop() {
		if e := h.symlink("../../x", 3, "a/b/l"); e != errnoSuccess {
			b.Fatal(e)
		}
		if e, _ := h.call(h.ctx, pathUnlinkFile, 3, np, nl); e != errnoSuccess {
			b.Fatal(e)
		}
	}
}

// BenchmarkRenameDirectoryUp is the cost of moving a directory one level
// up and back (the move up walks the links beneath it), under the lock.
func BenchmarkRenameDirectoryUp(b *testing.B) {
	h := newHostBench(b)
	for _, d := range []string{"a", "a/b", "a/b/c"} {
		if e := h.mkdir(3, d); e != errnoSuccess {
			b.Fatal(e)
		}
	}
	for b.Loop() {
		if e := h.rename(3, "a/b", 3, "b"); e != errnoSuccess {
			b.Fatal(e)
		}
		if e := h.rename(3, "b", 3, "a/b"); e != errnoSuccess {
			b.Fatal(e)
		}
	}
}

// BenchmarkLinkRecheck is the least a check after the act would cost
// instead of the lock: the link's directory's real depth read once more
// (and, when it fails, an undo, not counted here).
func BenchmarkLinkRecheck(b *testing.B) {
	h := newHostBench(b)
	h.mkdir(3, "a")
	h.mkdir(3, "a/b")
	root, _ := h.in.mountRoot(0)
	at, errno := resolvePath(h.ctx, root, "a/b/l", false)
	if errno != errnoSuccess {
		b.Fatal(errno)
	}
	defer at.release()
	for b.Loop() {
		if d, errno := h.in.depthOf(at, 0); errno != errnoSuccess || d != 2 {
			b.Fatal(d, errno)
		}
	}
}
