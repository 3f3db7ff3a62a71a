package runtime

import (
	"bytes"
	"testing"

	"github.com/subako/subako-runner/internal/wasmbin/wasmtest"
)

// TestEstimateResident: the estimate counts the machine code the compile
// cost model predicts, so a package whose 2-byte instructions compile to
// long sequences (i8x16.popcnt: about 83 bytes each) is estimated at its
// code, not at its size (issue 37: 1.99 MB estimated, 11.15 MB compiled).
func TestEstimateResident(t *testing.T) {
	popcnt := func(n int) []byte {
		body := append([]byte{0xfd, 0x0c}, make([]byte, 16)...)
		body = append(body, bytes.Repeat([]byte{0xfd, 0x62}, n)...)
		return wasmtest.Module{Bodies: [][]byte{append(body, 0x1a)}}.Bytes()
	}
	small, large := popcnt(10), popcnt(100_000)
	for _, c := range []struct {
		name    string
		metered []byte
		module  int
		atLeast int64
	}{
		{"empty", nil, 0, residentFixed},
		{"kept module.wasm", small, 45_000, residentFixed + int64(len(small)) + 45_000},
		{"100,000 i8x16.popcnt", large, 0, 100_000 * 80},
		{"not a module", []byte("not wasm at all"), 0, residentFixed + 15},
	} {
		if got := estimateResident(c.metered, c.module); got < c.atLeast {
			t.Errorf("%s: estimate %d, below %d", c.name, got, c.atLeast)
		}
	}
	// Most of the popcnt module's estimate is its code, not its bytes.
	if got, linear := estimateResident(large, 0), residentFixed+11*int64(len(large))/2; got < 4*linear {
		t.Errorf("100,000 i8x16.popcnt (%d bytes): estimate %d, not above 4× the bytes' %d", len(large), got, linear)
	}
}
