package linmem

import (
	"testing"

	"github.com/subako/subako-runner/limits"
)

// TestGrownTablesAreCappedLikeDeclaredOnes: issue 25's table bomb, grown at
// run time instead of declared. 30M elements fit a 256 MiB memory limit at 8
// bytes each, but a table lives on the Go heap, where the collector lets
// garbage reach GOGC percent of the live heap: 60 runs, 2 at a time, each
// growing a table by 30M elements, took the host to 1.46 GB of RSS at GOGC
// 100 and 4.8 GB at GOGC 800 (bench -only tables -table-bomb 30000000).
// So an instance's grown tables are capped at limits.DefaultTableElements
// in all, as its declared ones are at upload; both sides of the cap.
func TestGrownTablesAreCappedLikeDeclaredOnes(t *testing.T) {
	const capN = limits.DefaultTableElements
	m := New(uint64(256*limits.MiB), nil)
	if m.GrowTable(0, 0, 30_000_000) {
		t.Fatal("a 30M-element table grew under a 256 MiB limit")
	}
	if !m.Refused() {
		t.Fatal("the refused growth is not recorded as out of memory")
	}

	m = New(uint64(256*limits.MiB), nil)
	if !m.GrowTable(0, 0, capN-1) || !m.GrowTable(0, capN-1, 1) {
		t.Fatalf("a table refused growing to %d elements, the cap", capN)
	}
	if m.GrowTable(0, capN, 1) {
		t.Fatalf("a table grew past %d elements", capN)
	}
	if m.GrowTable(1, 0, 1) {
		t.Fatal("a second table grew past the cap on all tables")
	}
	if !m.GrowTable(0, capN, 0) {
		t.Fatal("a zero growth at the cap was refused")
	}
}

// The allocator on its own: growth inside the limit keeps the bytes already
// written (nothing copied or lost), the peak follows the largest size, growth
// past the limit is refused and remembered, and release frees every memory
// wazero did not (after which growth is refused).
func TestMemoryLimitAllocator(t *testing.T) {
	t.Parallel()
	const page = 65536 // limits.WasmPageSize, untyped
	m := New(4*page, nil)
	mem := m.Allocate(0, 16*page) // the module allows more than the call
	b := mem.Reallocate(page)
	if len(b) != page {
		t.Fatalf("first size %d, want %d", len(b), page)
	}
	b[0], b[page-1] = 7, 9
	b = mem.Reallocate(3 * page)
	if len(b) != 3*page || b[0] != 7 || b[page-1] != 9 || b[2*page] != 0 {
		t.Fatalf("grown memory lost its bytes or is not zeroed: len %d [0]=%d [page-1]=%d", len(b), b[0], b[page-1])
	}
	b[3*page-1] = 1 // every committed byte is writable
	if m.Peak() != 3*page || m.Refused() {
		t.Fatalf("peak %d refused %v, want %d and false", m.Peak(), m.Refused(), 3*page)
	}
	if got := mem.Reallocate(5 * page); got != nil {
		t.Fatalf("growth past the limit returned %d bytes", len(got))
	}
	if !m.Refused() || m.Peak() != 3*page {
		t.Fatalf("refusal not recorded (refused %v, peak %d)", m.Refused(), m.Peak())
	}
	if b := mem.Reallocate(4 * page); len(b) != 4*page || b[0] != 7 || b[page-1] != 9 {
		t.Fatalf("growth to the limit after a refusal: len %d", len(b))
	}
	mem.Free() // wazero's, as the module closes
	if got := mem.Reallocate(5 * page); got != nil {
		t.Fatal("a freed memory grew again")
	}
	m.Release()
	m.Release() // harmless twice
	mem.Free()  // and wazero's Free after it
	if got := mem.Reallocate(page); got != nil {
		t.Fatal("a released memory grew again")
	}
}

// TestTablesShareTheMemoryLimit: table growth and linear memory draw from
// one account, 8 bytes an element; a refusal marks the instance out of
// memory.
func TestTablesShareTheMemoryLimit(t *testing.T) {
	m := New(1<<20, nil)
	mem := m.Allocate(0, 1<<20)
	if mem.Reallocate(512<<10) == nil {
		t.Fatal("512 KiB of memory refused under a 1 MiB limit")
	}
	if !m.GrowTable(0, 0, 64<<10) { // 512 KiB of table
		t.Fatal("a 64Ki-element table refused beside 512 KiB of memory")
	}
	if m.Refused() {
		t.Fatal("refused before anything was refused")
	}
	if m.GrowTable(1, 0, 1) {
		t.Fatal("a second table grew past the shared limit")
	}
	if !m.Refused() {
		t.Fatal("a refused table growth is not recorded as out of memory")
	}
	if mem.Reallocate(512<<10+64<<10) != nil {
		t.Fatal("memory grew into the tables' share")
	}
	if !m.GrowTable(0, 64<<10, 0) || m.GrowTable(0, 0, 1<<32-1) {
		t.Fatal("a zero growth must pass and a 2^32-1 one fail")
	}
}
