//go:build (linux || darwin) && (amd64 || arm64)

package linmem

import (
	"bytes"
	"os"
	"slices"
	"testing"
	"unsafe"
)

// A pooled reservation reaches the next instance zeroed: nothing an
// instance wrote is readable by the one after it, neither in the pages it
// committed nor in those the next one grows into; a memory that committed
// more than poolKeep is not kept.
func TestMemoryPoolHandsOutZeroedMemory(t *testing.T) {
	t.Parallel()
	const page = 65536
	pool := NewPool(2)
	defer pool.Close()
	first := New(16*page, pool)
	mem := first.Allocate(0, 16*page)
	b := mem.Reallocate(3 * page)
	for i := range b {
		b[i] = 0xAA
	}
	base := unsafe.SliceData(b)
	mem.Free()
	first.Release()
	if pool.idle() != 1 {
		t.Fatalf("%d pooled reservations after a small memory was released, want 1", pool.idle())
	}

	second := New(16*page, pool)
	mem = second.Allocate(0, 16*page)
	b = mem.Reallocate(page)
	if unsafe.SliceData(b) != base {
		t.Fatal("the pooled reservation was not reused: the test proves nothing")
	}
	if !bytes.Equal(b, make([]byte, page)) {
		t.Fatal("the next instance read bytes the one before wrote")
	}
	b = mem.Reallocate(5 * page) // over what the first committed, too
	if !bytes.Equal(b, make([]byte, 5*page)) {
		t.Fatal("grown memory of a pooled reservation is not all zero")
	}
	if second.Peak() != 5*page || first.Peak() != 3*page {
		t.Fatalf("peaks %d and %d, want %d and %d", first.Peak(), second.Peak(), 3*page, 5*page)
	}
	second.Release()

	big := New(2*poolKeep, pool)
	mem = big.Allocate(0, 2*poolKeep)
	if b := mem.Reallocate(poolKeep + page); len(b) != poolKeep+page {
		t.Fatalf("len %d", len(b))
	}
	before := pool.idle()
	big.Release()
	if pool.idle() != before {
		t.Fatal("a memory that committed more than poolKeep was pooled")
	}
}

// A pooled reservation is cleared only as far as its last instance could
// reach (the most it was handed), not as far as an earlier, larger one
// committed: the bytes between stay the zeroes of the earlier clear. Every
// instance still finds zeroes only, wherever it grows.
func TestMemoryPoolClearsWhatTheInstanceReached(t *testing.T) {
	t.Parallel()
	const page = 65536
	pool := NewPool(1)
	defer pool.Close()
	use := func(pages ...int) []byte {
		lim := New(16*page, pool)
		mem := lim.Allocate(0, 16*page)
		var b []byte
		for i, n := range pages {
			grown := len(b)
			b = mem.Reallocate(uint64(n) * page)
			if !bytes.Equal(b[grown:], make([]byte, len(b)-grown)) {
				t.Fatalf("instance of %v pages, growth %d: memory is not all zero", pages, i)
			}
			for j := range b {
				b[j] = byte(0xA0 + i)
			}
		}
		mem.Free()
		lim.Release()
		return b
	}
	first := use(6)
	use(1, 4) // commits nothing new, writes 4 pages after growing twice
	use(2)
	last := use(1, 6)
	if unsafe.SliceData(first) != unsafe.SliceData(last) {
		t.Fatal("the pooled reservation was not reused: the test proves nothing")
	}
}

// A single byte anywhere in a page, its first, its last or one in between,
// is cleared before the reservation goes to the next instance, whichever
// subset of pages the one before wrote.
func TestMemoryPoolClearsEveryWrittenByte(t *testing.T) {
	t.Parallel()
	const wasmPage = 65536
	pool := NewPool(1)
	defer pool.Close()
	osPage := os.Getpagesize()
	size := 4 * wasmPage
	offsets := []int{0, osPage - 1, osPage, 3*osPage + 17, 2*wasmPage - 1, size - osPage, size - 1}
	var base *byte
	for round := range 3 {
		lim := New(uint64(size), pool)
		mem := lim.Allocate(0, uint64(size))
		b := mem.Reallocate(uint64(size))
		if round == 0 {
			base = unsafe.SliceData(b)
		} else if unsafe.SliceData(b) != base {
			t.Fatal("the pooled reservation was not reused: the test proves nothing")
		}
		if i := slices.IndexFunc(b, func(c byte) bool { return c != 0 }); i >= 0 {
			t.Fatalf("round %d: byte %d of a pooled memory is not zero", round, i)
		}
		// Each round writes a different subset, so a page left dirty by an
		// earlier round is caught too.
		for i, off := range offsets {
			if i%3 != round {
				b[off] = 0x5A
			}
		}
		mem.Free()
		lim.Release()
	}
}
