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
