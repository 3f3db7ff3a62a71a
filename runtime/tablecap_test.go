package runtime

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
	m := newMemoryLimit(uint64(256*limits.MiB), nil)
	if m.GrowTable(0, 0, 30_000_000) {
		t.Fatal("a 30M-element table grew under a 256 MiB limit")
	}
	if !m.refused() {
		t.Fatal("the refused growth is not recorded as out of memory")
	}

	m = newMemoryLimit(uint64(256*limits.MiB), nil)
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
