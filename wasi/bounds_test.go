package wasi

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/subako/subako-runner/limits"
	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/sys"
)

// Adversarial tests of the host's own costs: a guest chooses counts,
// lengths and overlaps, and the host must not spend memory or time in
// proportion to them beyond the call's limits (docs/security.md).

// allocated runs f and returns the bytes the Go heap allocated meanwhile
// (TotalAlloc counts every allocation, freed or not).
func allocated(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// growTo grows the guest memory to at least n bytes.
func growTo(t *testing.T, h *hostBench, n uint32) {
	t.Helper()
	mem := h.mod.Memory()
	if cur := mem.Size(); cur < n {
		if _, ok := mem.Grow((n - cur + 65535) / 65536); !ok {
			t.Fatalf("cannot grow guest memory to %d", n)
		}
	}
}

// putIovecs writes count iovecs at arr, all naming [ptr, ptr+n).
func putIovecs(m memory, arr uint32, count int, ptr, n uint32) {
	for i := range count {
		m.putU32(arr+uint32(i)*8, ptr)
		m.putU32(arr+uint32(i)*8+4, n)
	}
}

// countingWriter counts what it is given and keeps nothing; onWrite, if
// set, runs after each Write.
type countingWriter struct {
	bytes, writes, largest int
	onWrite                func()
}

func (w *countingWriter) Write(p []byte) (int, error) {
	w.bytes += len(p)
	w.writes++
	w.largest = max(w.largest, len(p))
	if w.onWrite != nil {
		w.onWrite()
	}
	return len(p), nil
}

const mib = 1 << 20

// TestOverlappingStdioIovecsAreStreamedAndCapped is the attack of 4,095
// overlapping 1 MiB iovecs to stdout (4 GiB copied by the host before):
// the count is refused past 1024, and 1024 of them (1 GiB named, 1 MiB of
// guest memory) move only defaultMaxStdioWrite bytes, straight from guest
// memory.
func TestOverlappingStdioIovecsAreStreamedAndCapped(t *testing.T) {
	const arr = mib + 4096 // the iovec array, after the 1 MiB buffer at 0
	for _, fd := range []uint64{1, 2} {
		t.Run(fmt.Sprintf("fd %d", fd), func(t *testing.T) {
			h := newHostBench(t)
			w := &countingWriter{}
			h.in.cfg.Stdout, h.in.cfg.Stderr = w, w
			growTo(t, h, arr+4095*8+64)
			m := memOf(h.mod)
			putIovecs(m, arr, 4095, 0, mib)
			if errno, exited := h.call(h.ctx, fdWrite, fd, arr, 4095, 16); errno != errnoInval || exited {
				t.Fatalf("4,095 iovecs: errno %d (exited %v), want EINVAL", errno, exited)
			}
			if w.bytes != 0 {
				t.Fatalf("a refused fd_write wrote %d bytes", w.bytes)
			}
			var errno errnum
			alloc := allocated(func() { errno, _ = h.call(h.ctx, fdWrite, fd, arr, maxIovecs, 16) })
			n, _ := m.u32(16)
			if errno != errnoSuccess || n != defaultMaxStdioWrite || w.bytes != defaultMaxStdioWrite {
				t.Fatalf("errno %d, nwritten %d, writer got %d; want a short write of %d", errno, n, w.bytes, defaultMaxStdioWrite)
			}
			if w.largest > ioChunk {
				t.Errorf("one Write of %d bytes, more than a chunk", w.largest)
			}
			// The host's cost must not grow with the bytes named (1 GiB)
			// nor with those moved (16 MiB): 1 MiB covers the views.
			if alloc > mib {
				t.Errorf("fd_write of 1,024 overlapping 1 MiB iovecs allocated %d bytes on the host", alloc)
			}
		})
	}
}

func TestMaxStdioWriteIsConfigurable(t *testing.T) {
	h := newHostBench(t)
	w := &countingWriter{}
	h.in.cfg.Stdout, h.in.cfg.MaxStdioWrite = w, 10
	m := memOf(h.mod)
	putIovecs(m, 1000, 3, 0, 4)
	if errno, _ := h.call(h.ctx, fdWrite, 1, 1000, 3, 16); errno != errnoSuccess {
		t.Fatal(errno)
	}
	if n, _ := m.u32(16); n != 10 || w.bytes != 10 {
		t.Fatalf("nwritten %d, writer got %d; want 10", n, w.bytes)
	}
}

// TestIovecCountIsCapped: every vectored call refuses more than 1024
// iovecs with EINVAL before touching anything, and takes 1024.
func TestIovecCountIsCapped(t *testing.T) {
	h := newHostBench(t)
	growTo(t, h, 4*65536)
	m := memOf(h.mod)
	putIovecs(m, 65536, maxIovecs+1, 100, 1)
	file := openFile(t, h, "file", rightFdRead|rightFdWrite|rightFdSeek)
	host := filepath.Join(h.in.cfg.Mounts.Mounts()[0].Host, "file")
	tests := []struct {
		name string
		fn   hostFunc
		args func(count uint64) []uint64
	}{
		{"fd_read", fdRead, func(c uint64) []uint64 { return []uint64{file, 65536, c, 16} }},
		{"fd_pread", fdPread, func(c uint64) []uint64 { return []uint64{file, 65536, c, 0, 16} }},
		{"fd_write", fdWrite, func(c uint64) []uint64 { return []uint64{file, 65536, c, 16} }},
		{"fd_pwrite", fdPwrite, func(c uint64) []uint64 { return []uint64{file, 65536, c, 0, 16} }},
		{"fd_write to stdout", fdWrite, func(c uint64) []uint64 { return []uint64{1, 65536, c, 16} }},
		{"fd_read of stdin", fdRead, func(c uint64) []uint64 { return []uint64{0, 65536, c, 16} }},
	}
	h.in.cfg.Stdin.Write([]byte("x"))
	for _, tt := range tests {
		for _, c := range []uint64{maxIovecs + 1, 1 << 22, 30_000_000} {
			if errno, exited := h.call(h.ctx, tt.fn, tt.args(c)...); errno != errnoInval || exited {
				t.Errorf("%s with %d iovecs: errno %d (exited %v), want EINVAL", tt.name, c, errno, exited)
			}
		}
		if b, _ := os.ReadFile(host); string(b) != "content" {
			t.Fatalf("%s: a refused call changed the file to %q", tt.name, b)
		}
	}
	for _, tt := range tests {
		if errno, _ := h.call(h.ctx, tt.fn, tt.args(maxIovecs)...); errno != errnoSuccess {
			t.Errorf("%s with 1024 iovecs: errno %d", tt.name, errno)
		}
	}
}

// TestPollSubscriptionCountIsCapped is the attack of millions of
// subscriptions (the host copied 3x the guest's memory before).
func TestPollSubscriptionCountIsCapped(t *testing.T) {
	h := newHostBench(t)
	const in, out, nev = 0, 4096 * sizeSubscription, 4096*sizeSubscription + 4096*sizeEvent
	growTo(t, h, nev+8)
	m := memOf(h.mod)
	for i := range maxSubscriptions {
		b, _ := m.slice(in+uint32(i)*sizeSubscription, sizeSubscription)
		le64(b, uint64(i))
		b[8] = eventtypeClock
		le32(b[16:], clockRealtime)
		le64(b[24:], 1) // an absolute time long past: ready at once
		le16(b[40:], subclockAbstime)
	}
	for _, n := range []uint64{maxSubscriptions + 1, 5_600_000, 1<<32 - 1} {
		if errno, exited := h.call(h.ctx, pollOneoff, in, out, n, nev); errno != errnoInval || exited {
			t.Errorf("%d subscriptions: errno %d (exited %v), want EINVAL", n, errno, exited)
		}
	}
	var errno errnum
	alloc := allocated(func() { errno, _ = h.call(h.ctx, pollOneoff, in, out, maxSubscriptions, nev) })
	if got, _ := m.u32(nev); errno != errnoSuccess || got != maxSubscriptions {
		t.Fatalf("4096 subscriptions: errno %d, %d events", errno, got)
	}
	// 4096 subscriptions and events are about 300 KiB; 2 MiB is generous.
	if alloc > 2*mib {
		t.Errorf("poll_oneoff of 4096 subscriptions allocated %d bytes", alloc)
	}
}

// TestLongHostCallsHonourTheContext: the host functions that move many
// bytes check the call's context after every chunk, and end the instance
// with the context's exit code (which the session reports as the timeout
// or cancellation it is). A call started past its deadline moves at most
// one chunk.
func TestLongHostCallsHonourTheContext(t *testing.T) {
	t.Run("stdout write cancelled after its first chunk", func(t *testing.T) {
		h := newHostBench(t)
		ctx, cancel := context.WithCancel(h.ctx)
		defer cancel()
		w := &countingWriter{onWrite: cancel}
		h.in.cfg.Stdout = w
		growTo(t, h, 8*mib+4096)
		m := memOf(h.mod)
		putIovecs(m, 8*mib, 1, 0, 8*mib)
		_, exited := h.call(ctx, fdWrite, 1, 8*mib, 1, 16)
		if !exited || h.lastExit != sys.ExitCodeContextCanceled {
			t.Fatalf("exited %v with %#x, want the cancel code", exited, h.lastExit)
		}
		if w.bytes != ioChunk {
			t.Fatalf("the host moved %d bytes after the cancel, want one chunk (%d)", w.bytes, ioChunk)
		}
	})
	expired := func() context.Context {
		ctx, cancel := context.WithTimeout(context.Background(), 0)
		cancel()
		return ctx
	}
	const size = 4 * mib // four chunks asked for
	fileSize := func(h *hostBench) int64 {
		info, err := os.Stat(filepath.Join(h.in.cfg.Mounts.Mounts()[0].Host, "file"))
		if err != nil {
			return -1
		}
		return info.Size()
	}
	var guest []byte // the guest's memory during the call
	zeros := func(b []byte) int {
		n := 0
		for _, c := range b {
			if c == 0 {
				n++
			}
		}
		return n
	}
	tests := []struct {
		name  string
		setup func(h *hostBench) (hostFunc, []uint64)
		check func(t *testing.T, h *hostBench, stderr int)
	}{
		{"file write", func(h *hostBench) (hostFunc, []uint64) {
			f := openFile(t, h, "file", rightFdWrite)
			putIovecs(memOf(h.mod), size, 1, 0, size)
			return fdWrite, []uint64{f, size, 1, 16}
		}, func(t *testing.T, h *hostBench, _ int) {
			if got := fileSize(h); got != ioChunk {
				t.Errorf("the file has %d bytes, want one chunk", got)
			}
			if used := h.in.cfg.Budget.Used(); used != ioChunk {
				t.Errorf("the budget kept %d bytes, want the one chunk written (the rest refunded)", used)
			}
		}},
		{"file pwrite", func(h *hostBench) (hostFunc, []uint64) {
			f := openFile(t, h, "file", rightFdWrite)
			putIovecs(memOf(h.mod), size, 1, 0, size)
			return fdPwrite, []uint64{f, size, 1, 0, 16}
		}, func(t *testing.T, h *hostBench, _ int) {
			if got := fileSize(h); got != ioChunk {
				t.Errorf("the file has %d bytes, want one chunk", got)
			}
		}},
		{"file read", func(h *hostBench) (hostFunc, []uint64) {
			ones := make([]byte, size)
			for i := range ones {
				ones[i] = 0xff
			}
			os.WriteFile(filepath.Join(h.in.cfg.Mounts.Mounts()[0].Host, "file"), ones, 0o644)
			f := openFile(t, h, "file", rightFdRead)
			putIovecs(memOf(h.mod), size, 1, 0, size)
			return fdRead, []uint64{f, size, 1, 16}
		}, func(t *testing.T, h *hostBench, _ int) {
			if zeros(guest[:ioChunk]) != 0 || zeros(guest[ioChunk:size]) != size-ioChunk {
				t.Errorf("fd_read filled %d bytes of the first chunk and %d of the rest", ioChunk-zeros(guest[:ioChunk]), size-ioChunk-zeros(guest[ioChunk:size]))
			}
		}},
		{"stderr write", func(h *hostBench) (hostFunc, []uint64) {
			putIovecs(memOf(h.mod), size, 1, 0, size)
			return fdWrite, []uint64{2, size, 1, 16}
		}, func(t *testing.T, h *hostBench, stderr int) {
			if stderr != ioChunk {
				t.Errorf("stderr got %d bytes after the deadline, want one chunk", stderr)
			}
		}},
		{"random_get", func(h *hostBench) (hostFunc, []uint64) {
			return randomGet, []uint64{0, size}
		}, func(t *testing.T, h *hostBench, _ int) {
			// The first chunk was filled, the rest never was (a view taken
			// before the call: the instance is gone after it).
			if zeros(guest[:ioChunk]) == ioChunk || zeros(guest[ioChunk:size]) != size-ioChunk {
				t.Errorf("random_get filled %d of the first chunk and %d of the rest", ioChunk-zeros(guest[:ioChunk]), size-ioChunk-zeros(guest[ioChunk:size]))
			}
		}},
		{"readdir", func(h *hostBench) (hostFunc, []uint64) {
			return fdReaddir, []uint64{3, 0, 4096, 5, size}
		}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHostBench(t)
			h.in.cfg.Budget = limits.NewCallBudget(limits.Limits{WriteBudget: 2 * size})
			w := &countingWriter{}
			h.in.cfg.Stderr = w
			growTo(t, h, size+4096)
			fn, args := tt.setup(h)
			guest, _ = h.mod.Memory().Read(0, size)
			_, exited := h.call(expired(), fn, args...)
			if !exited || h.lastExit != sys.ExitCodeDeadlineExceeded {
				t.Fatalf("exited %v with %#x, want the deadline code", exited, h.lastExit)
			}
			if tt.check != nil {
				tt.check(t, h, w.bytes)
			}
		})
	}
}

// TestReaddirHoldsNoListing is the attack of 200 descriptors on a
// 20,000-entry directory (1.7 GB of host memory before, a full listing per
// descriptor): each descriptor now holds one chunk at most.
func TestReaddirHoldsNoListing(t *testing.T) {
	entries := 20_000
	if testing.Short() {
		entries = 4000
	}
	h := newHostBench(t)
	host := h.in.cfg.Mounts.Mounts()[0].Host
	big := filepath.Join(host, "big")
	os.Mkdir(big, 0o755)
	for i := range entries {
		f, err := os.Create(filepath.Join(big, fmt.Sprintf("entry-with-a-longish-name-%06d", i)))
		if err != nil {
			t.Fatal(err)
		}
		f.Close()
	}
	fds := make([]uint64, 200)
	for i := range fds {
		fds[i] = openDir(t, h, "big")
	}
	m := memOf(h.mod)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	func() {
		for _, fd := range fds {
			if errno, _ := h.call(h.ctx, fdReaddir, fd, 1000, 4096, 0, 996); errno != errnoSuccess {
				t.Fatal(errno)
			}
			if used, _ := m.u32(996); used != 4096 {
				t.Fatalf("bufused %d, want a full 4096-byte buffer", used)
			}
		}
	}()
	runtime.GC()
	runtime.ReadMemStats(&after)
	runtime.KeepAlive(h)
	// What stays per descriptor: an 8 KiB read buffer and 32 entries, 2 MB
	// for the 200 (a listing of 20,000 entries is over 2 MB for each).
	// Allocated, garbage included, it is what fills one 4 KiB buffer
	// (three chunks of entries, each stat'ed), about 50 KB per call.
	alloc, kept := after.TotalAlloc-before.TotalAlloc, int64(after.HeapAlloc)-int64(before.HeapAlloc)
	t.Logf("200 readdirs of a %d-entry directory: %d bytes allocated, %d kept", entries, alloc, kept)
	if alloc > 16*mib {
		t.Errorf("200 readdirs of a %d-entry directory allocated %d bytes on the host", entries, alloc)
	}
	if kept > 4*mib {
		t.Errorf("200 directory descriptors keep %d bytes of host memory", kept)
	}
	// The listing through any descriptor is still complete and exact.
	seen := map[string]bool{}
	cookie := uint64(0)
	for {
		if errno, _ := h.call(h.ctx, fdReaddir, fds[7], 1000, 4096, cookie, 996); errno != errnoSuccess {
			t.Fatal(errno)
		}
		used, _ := m.u32(996)
		b, _ := m.slice(1000, used)
		for len(b) >= sizeDirent {
			namlen := rd32(b[16:])
			if uint32(len(b)) < sizeDirent+namlen {
				break // truncated: read again from this entry's cookie
			}
			name := string(b[sizeDirent : sizeDirent+namlen])
			if seen[name] {
				t.Fatalf("%q listed twice", name)
			}
			seen[name] = true
			cookie = rd64(b)
			b = b[sizeDirent+namlen:]
		}
		if used < 4096 {
			break
		}
	}
	if len(seen) != entries+2 || !seen["."] || !seen[".."] || !seen["entry-with-a-longish-name-000000"] {
		t.Fatalf("listed %d names, want %d", len(seen), entries+2)
	}
	// A listing read to its end holds no host descriptor; one being read
	// holds one.
	if e, _ := h.in.get(uint32(fds[7])); e.dir.f != nil {
		t.Error("a directory listed to its end still holds a host descriptor")
	}
	if e, _ := h.in.get(uint32(fds[8])); e.dir.f == nil {
		t.Error("a directory being listed holds no host descriptor")
	}
	// Read again from the start, the listing is whole again.
	if errno, _ := h.call(h.ctx, fdReaddir, fds[7], 1000, 4096, 0, 996); errno != errnoSuccess {
		t.Fatal(errno)
	}
	if used, _ := m.u32(996); used != 4096 {
		t.Fatalf("re-read from cookie 0: bufused %d", used)
	}
}

// TestFloodingGuestEndsAtItsDeadline runs the real attack module
// (testdata/wasi/wat/stdio_flood.wat: fd_write of 1,024 overlapping 1 MiB
// iovecs in an endless loop) in plain wazero, where nothing but the host
// function can stop it: the instance must end with the deadline's exit
// code, and the host must allocate nothing in proportion to the 1 GiB
// each call names.
func TestFloodingGuestEndsAtItsDeadline(t *testing.T) {
	bin, err := os.ReadFile("../testdata/wasi/wat/stdio_flood.wasm")
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	r, compiled := compileWithWASI(t, bin)
	w := &countingWriter{}
	in := NewInstance(Config{Stderr: w})
	defer in.Close()
	// Any deadline would do; the assertion is on how the run ended and
	// what it cost, not on when.
	dctx, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
	defer cancel()
	var runErr error
	alloc := allocated(func() {
		var mod api.Module
		mod, runErr = r.InstantiateModule(WithInstance(dctx, in), compiled, wazero.NewModuleConfig().WithName(""))
		if mod != nil {
			mod.Close(ctx)
		}
	})
	var exit *sys.ExitError
	if !errors.As(runErr, &exit) || exit.ExitCode() != sys.ExitCodeDeadlineExceeded {
		t.Fatalf("the flood ended with %v, want the deadline's exit code", runErr)
	}
	if w.bytes == 0 || w.largest > ioChunk {
		t.Errorf("stderr got %d bytes in Writes of up to %d; want some, in chunks of at most %d", w.bytes, w.largest, ioChunk)
	}
	// Compiling and instantiating costs a few MiB; a copy of one call's
	// iovecs would cost 1 GiB.
	if alloc > 64*mib {
		t.Errorf("the flood allocated %d bytes on the host", alloc)
	}
	t.Logf("%d fd_writes moved %d bytes; the host allocated %d bytes", w.bytes/defaultMaxStdioWrite, w.bytes, alloc)
}

// compileWithWASI is a plain wazero runtime with this package's module
// instantiated and bin compiled on it, closed with the test: where nothing
// but the host functions can stop a guest.
func compileWithWASI(t *testing.T, bin []byte) (wazero.Runtime, wazero.CompiledModule) {
	t.Helper()
	ctx := context.Background()
	r := wazero.NewRuntime(ctx)
	t.Cleanup(func() { r.Close(ctx) })
	if _, err := Instantiate(ctx, r); err != nil {
		t.Fatal(err)
	}
	compiled, err := r.CompileModule(ctx, bin)
	if err != nil {
		t.Fatal(err)
	}
	return r, compiled
}

// TestDefaultMaxStdioWriteIsTheDefaultLine keeps the documented link: a
// guest writing one whole line of the longest size accepted never sees a
// short write.
func TestDefaultMaxStdioWriteIsTheDefaultLine(t *testing.T) {
	if got, want := int64(defaultMaxStdioWrite), limits.Default().StdoutLine; got != want {
		t.Fatalf("defaultMaxStdioWrite %d, the default stdout line limit %d", got, want)
	}
}

// TestGuestSizedCountsCostTheHostNothing is the attack at full size: a
// 256 MiB guest holds 30M (zeroed) iovecs or 5.6M subscriptions. The host
// copied ~3x that before; now it refuses the count before looking.
func TestGuestSizedCountsCostTheHostNothing(t *testing.T) {
	if testing.Short() {
		t.Skip("grows a guest memory to 270 MB")
	}
	h := newHostBench(t)
	growTo(t, h, 270_000_000)
	file := openFile(t, h, "file", rightFdRead|rightFdWrite)
	tests := []struct {
		name string
		fn   hostFunc
		args []uint64
	}{
		{"fd_read of 30M iovecs", fdRead, []uint64{file, 0, 30_000_000, 16}},
		{"fd_write of 30M iovecs", fdWrite, []uint64{1, 0, 30_000_000, 16}},
		{"poll_oneoff of 5.6M subscriptions", pollOneoff, []uint64{0, 0, 5_600_000, 16}},
	}
	for _, tt := range tests {
		var errno errnum
		alloc := allocated(func() { errno, _ = h.call(h.ctx, tt.fn, tt.args...) })
		if errno != errnoInval {
			t.Errorf("%s: errno %d, want EINVAL", tt.name, errno)
		}
		if alloc > 64<<10 {
			t.Errorf("%s: the host allocated %d bytes", tt.name, alloc)
		}
	}
}
