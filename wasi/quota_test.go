package wasi

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/subako/subako-runner/limits"
)

// createFile creates (or opens) name beneath the preopen for writing and
// returns its descriptor.
func createFile(t *testing.T, h *hostBench, name string) uint64 {
	t.Helper()
	p, n := putStr(h, 500, name)
	rights := rightFdWrite | rightFdFilestatSetSize | rightFdSeek
	if errno, _ := h.call(h.ctx, pathOpen, 3, 1, p, n, uint64(oflagCreat), rights, 0, 0, 600); errno != errnoSuccess {
		t.Fatalf("create %s: errno %d", name, errno)
	}
	fd, _ := memOf(h.mod).u32(600)
	return uint64(fd)
}

// quotaBench is a host bench with the default limits' write budget (1
// GiB of file data, 10,000 entries) and a 64 MiB buffer in guest memory
// at bufAt, named by the iovec at iovAt; the one-byte iovec at oneAt.
func quotaBench(t *testing.T) *hostBench {
	h := newHostBench(t)
	h.in.cfg.Budget = limits.NewCallBudget(limits.Default())
	growTo(t, h, bufAt+chunk)
	m := memOf(h.mod)
	putIovecs(m, iovAt, 1, bufAt, chunk)
	putIovecs(m, oneAt, 1, bufAt, 1)
	return h
}

const (
	chunk = 64 << 20
	bufAt = 1 << 20
	iovAt = 100
	oneAt = 120
)

// TestWriteQuotaIsExactlyOneGiBOfFileData: the quota of ABI 1 is 1 GiB of
// file data, exactly; the entries the writes need are bounded by their own
// cap and cost none of it (a new file's entry was charged 4 KiB, so 1 GiB
// written to a new file got EDQUOT 4 KiB early). Each case creates its
// files, fills the quota to the byte and then sees one more byte refused.
func TestWriteQuotaIsExactlyOneGiBOfFileData(t *testing.T) {
	if testing.Short() {
		t.Skip("writes 1 GiB to a temporary file")
	}
	const gib = 1 << 30
	if limits.Default().WriteBudget != limits.GiB || gib != limits.GiB {
		t.Fatalf("the default write budget is %d, want 1 GiB", limits.Default().WriteBudget)
	}
	tests := []struct {
		name string
		fill func(t *testing.T, h *hostBench) uint64 // returns a descriptor for the extra byte
	}{
		{"1 GiB in 64 MiB chunks to a new file", func(t *testing.T, h *hostBench) uint64 {
			f := createFile(t, h, "new")
			for i := 0; i < gib/chunk; i++ {
				if errno, _ := h.call(h.ctx, fdWrite, f, iovAt, 1, 16); errno != errnoSuccess {
					t.Fatalf("chunk %d: errno %d", i, errno)
				}
				if n, _ := memOf(h.mod).u32(16); n != chunk {
					t.Fatalf("chunk %d: %d bytes written", i, n)
				}
			}
			return f
		}},
		{"two new files of 512 MiB (a hole and a grown size)", func(t *testing.T, h *hostBench) uint64 {
			a, b := createFile(t, h, "a"), createFile(t, h, "b")
			if errno, _ := h.call(h.ctx, fdPwrite, a, oneAt, 1, gib/2-1, 16); errno != errnoSuccess {
				t.Fatalf("pwrite: errno %d", errno)
			}
			if errno, _ := h.call(h.ctx, fdFilestatSetSize, b, gib/2); errno != errnoSuccess {
				t.Fatalf("set_size: errno %d", errno)
			}
			return b
		}},
		{"pwrite of the last 64 MiB of 1 GiB", func(t *testing.T, h *hostBench) uint64 {
			f := createFile(t, h, "p")
			if errno, _ := h.call(h.ctx, fdPwrite, f, iovAt, 1, gib-chunk, 16); errno != errnoSuccess {
				t.Fatalf("pwrite: errno %d", errno)
			}
			return f
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := quotaBench(t)
			f := tt.fill(t, h)
			if used := h.in.cfg.Budget.Used(); used != gib {
				t.Fatalf("%d bytes charged, want exactly 1 GiB", used)
			}
			if errno, _ := h.call(h.ctx, fdPwrite, f, oneAt, 1, 0, 16); errno != errnoDquot {
				t.Errorf("one byte more: errno %d, want EDQUOT", errno)
			}
			if errno, _ := h.call(h.ctx, fdWrite, f, oneAt, 1, 16); errno != errnoDquot {
				t.Errorf("one byte more (fd_write): errno %d, want EDQUOT", errno)
			}
			// Entries still cost nothing of it: a new directory is made.
			p, n := putStr(h, 500, "dir")
			if errno, _ := h.call(h.ctx, pathCreateDirectory, 3, p, n); errno != errnoSuccess {
				t.Errorf("a directory with the quota spent: errno %d", errno)
			}
			var total int64
			entries, _ := os.ReadDir(h.in.cfg.Mounts.Mounts()[0].Host)
			for _, e := range entries {
				if info, err := e.Info(); err == nil && info.Mode().IsRegular() {
					total += info.Size()
				}
			}
			if total != gib+int64(len("content")) { // "file" of the bench was there before
				t.Errorf("the files hold %d bytes", total)
			}
		})
	}
}

// TestEveryWrittenByteIsCharged: one-byte writes, pwrites and growths are
// charged one byte each, a zero-byte write nothing, and the byte past the
// quota is refused whole, whatever the call.
func TestEveryWrittenByteIsCharged(t *testing.T) {
	h := newHostBench(t)
	h.in.cfg.Budget = limits.NewCallBudget(limits.Limits{WriteBudget: 3, MaxEntries: 10})
	m := memOf(h.mod)
	m.m.Write(3000, []byte("x"))
	putIovecs(m, oneAt, 1, 3000, 1)
	putIovecs(m, iovAt, 1, 3000, 0)
	f := createFile(t, h, "one")
	steps := []struct {
		name string
		fn   hostFunc
		args []uint64
		want errnum
		used int64
	}{
		{"an empty write", fdWrite, []uint64{f, iovAt, 1, 16}, errnoSuccess, 0},
		{"no iovec", fdWrite, []uint64{f, iovAt, 0, 16}, errnoSuccess, 0},
		{"one byte", fdWrite, []uint64{f, oneAt, 1, 16}, errnoSuccess, 1},
		{"one byte at 1", fdPwrite, []uint64{f, oneAt, 1, 1, 16}, errnoSuccess, 2},
		{"grow by one", fdFilestatSetSize, []uint64{f, 3}, errnoSuccess, 3},
		{"shrinking refunds nothing", fdFilestatSetSize, []uint64{f, 2}, errnoSuccess, 3},
		{"one byte over", fdWrite, []uint64{f, oneAt, 1, 16}, errnoDquot, 3},
		{"one byte over, pwrite", fdPwrite, []uint64{f, oneAt, 1, 0, 16}, errnoDquot, 3},
		{"one byte over, growth", fdFilestatSetSize, []uint64{f, 3}, errnoDquot, 3},
	}
	for _, s := range steps {
		if errno, _ := h.call(h.ctx, s.fn, s.args...); errno != s.want {
			t.Errorf("%s: errno %d, want %d", s.name, errno, s.want)
		}
		if used := h.in.cfg.Budget.Used(); used != s.used {
			t.Errorf("%s: %d bytes charged, want %d", s.name, used, s.used)
		}
	}
	info, err := os.Stat(filepath.Join(h.in.cfg.Mounts.Mounts()[0].Host, "one"))
	if err != nil || info.Size() != 2 {
		t.Errorf("the file: %v, %v; want 2 bytes", info, err)
	}
}
