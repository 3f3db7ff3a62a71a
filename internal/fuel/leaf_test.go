package fuel

import (
	"bytes"
	"context"
	"testing"

	"github.com/subako/subako-runner/internal/wasmbin"
	"github.com/subako/subako-runner/internal/wasmbin/wasmtest"
)

// TestSmallLeavesArePaidByTheirCallers pins leaves.wat's counts: a call
// that can reach a small leaf pays its whole body, whichever path the
// leaf takes; a call through a reference pays the dearest small leaf of
// its type; leaves that are too big, charge by size or are called by the
// host charge themselves, by the path taken.
func TestSmallLeavesArePaidByTheirCallers(t *testing.T) {
	ctx := context.Background()
	r := meteredRuntime(t, ctx)
	cm := instrumentAndCompile(t, ctx, r, readFixture(t, "leaves.wasm"))
	runCounts(t, ctx, r, cm, []fuelCount{
		{"a direct call pays the leaf's whole body (then arm)", "direct", []uint64{1}, 10},
		{"a direct call pays the leaf's whole body (else arm)", "direct", []uint64{0}, 10},
		{"call_indirect pays the dearest small leaf of its type (that leaf)", "indirect", []uint64{0}, 11},
		{"call_indirect pays the dearest small leaf of its type (a cheaper one)", "indirect", []uint64{1}, 11},
		{"call_indirect reaching a small leaf", "mixed", []uint64{2}, 8},
		{"call_indirect reaching a function that charges itself", "mixed", []uint64{3}, 8 + 12},
		{"a leaf over the size charges itself, arm skipped", "callbig", []uint64{0}, 3 + 3},
		{"a leaf over the size charges itself, arm run", "callbig", []uint64{1}, 3 + 103},
		{"a leaf charged by size charges itself", "callfill", []uint64{1000}, 3 + 5 + 1000/BulkBytesPerFuel},
		{"a leaf the host calls charges itself (then)", "hostleaf", []uint64{1}, 5},
		{"a leaf the host calls charges itself (else)", "hostleaf", []uint64{0}, 6},
	})
}

// TestSmallLeafCallsWriteNothingBack: a loop that calls a small leaf
// keeps the counter in its local across the call (it writes it back once,
// on the way out), and the leaf does not touch the counter; a loop that
// calls a function that charges itself writes back before the call too.
// (The loops' calls are followed by their own check, the loop's, so they
// get none after their return.)
func TestSmallLeafCallsWriteNothingBack(t *testing.T) {
	loopCalling := func(f byte) []byte {
		return []byte{0x03, 0x40, 0x10, f, 0x41, 0x00, 0x0d, 0x00, 0x0b} // loop; call f; i32.const 0; br_if 0; end
	}
	leaf := []byte{0x41, 0x00, 0x1a} // i32.const 0; drop
	charged := []byte{0x10, 0x01}    // call 1 (the leaf): a function that makes calls
	counterOps := func(expr []byte, counter uint32) (gets, sets int) {
		w := wasmbin.NewWalker(expr, 0)
		var in wasmbin.Instr
		for w.Next(&in) == nil {
			if in.Index != counter {
				continue
			}
			switch in.Op {
			case wasmbin.OpGlobalGet:
				gets++
			case wasmbin.OpGlobalSet:
				sets++
			}
		}
		return gets, sets
	}
	for _, tt := range []struct {
		name     string
		callee   byte
		wantSets int
	}{
		{"calling a small leaf", 1, 1},
		{"calling a function that charges itself", 2, 2},
	} {
		t.Run(tt.name, func(t *testing.T) {
			out, err := Instrument(wasmtest.Module{Bodies: [][]byte{loopCalling(tt.callee), leaf, charged}}.Bytes())
			if err != nil {
				t.Fatal(err)
			}
			m, err := wasmbin.Decode(out)
			if err != nil {
				t.Fatal(err)
			}
			counter := uint32(len(m.Globals) - 2) // the module has none of its own: the meter, then the frames left
			if _, sets := counterOps(m.Codes[0].Expr, counter); sets != tt.wantSets {
				t.Errorf("the loop writes the counter back %d times; want %d", sets, tt.wantSets)
			}
			if gets, sets := counterOps(m.Codes[1].Expr, counter); gets+sets != 0 {
				t.Errorf("the small leaf reads the counter %d times and writes it %d times; want neither", gets, sets)
			}
			if !bytes.Equal(m.Codes[1].Expr, append(append([]byte(nil), leaf...), 0x0b)) {
				t.Errorf("the small leaf was rewritten: % x", m.Codes[1].Expr)
			}
		})
	}
}

// TestSmallLeafSizeBoundary pins smallLeafBytes from both sides: a leaf
// whose code (its final end included) is smallLeafBytes long is a small
// leaf, which touches no counter; one byte more and it charges itself.
func TestSmallLeafSizeBoundary(t *testing.T) {
	pad := func(n int) []byte { // n bytes of code: i32.const 0; drop, then nops
		b := bytes.Repeat([]byte{0x41, 0x00, 0x1a}, n/3)
		return append(b, bytes.Repeat([]byte{0x01}, n%3)...)
	}
	for _, tt := range []struct {
		name  string
		bytes int // of the leaf's code, its final end included
		small bool
	}{
		{"exactly smallLeafBytes", smallLeafBytes, true},
		{"one byte more", smallLeafBytes + 1, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			out, err := Instrument(wasmtest.Module{Bodies: [][]byte{{0x10, 0x01}, pad(tt.bytes - 1)}}.Bytes())
			if err != nil {
				t.Fatal(err)
			}
			m, err := wasmbin.Decode(out)
			if err != nil {
				t.Fatal(err)
			}
			counter := uint32(len(m.Globals) - 2) // the meter, then the frames left
			touches := bytes.Contains(m.Codes[1].Expr, []byte{0x23, byte(counter)})
			if touches == tt.small {
				t.Fatalf("a leaf of %d bytes reads the counter: %v; want %v", tt.bytes, touches, !tt.small)
			}
		})
	}
}

// TestBulkInstructionsAreNeverSmallLeaves: a function with a bulk memory
// or table instruction charges itself, after the work, by its size; were
// it a small leaf, its caller would neither write its cached counter back
// nor reload it around the call, and would write over that charge. A
// loop calls such a function 1,000 times, and the fuel used must be
// exact, for fill, copy and init alike (a lost or doubled charge shows).
func TestBulkInstructionsAreNeverSmallLeaves(t *testing.T) {
	const calls, size = 1000, 4096
	// loop; call 1; local.get 0; i32.const 1; i32.add; local.tee 0;
	// i32.const 1000; i32.lt_u; br_if 0; end
	caller := []byte{0x03, 0x40, 0x10, 0x01, 0x20, 0x00, 0x41, 0x01, 0x6a, 0x22, 0x00, 0x41, 0xe8, 0x07, 0x49, 0x0d, 0x00, 0x0b}
	operands := []byte{0x41, 0x00, 0x41, 0x00, 0x41, 0x80, 0x20} // i32.const 0; i32.const 0; i32.const 4096
	ctx := context.Background()
	r := meteredRuntime(t, ctx)
	for _, tt := range []struct {
		name string
		op   []byte
		data []byte
	}{
		{"memory.fill", []byte{0xfc, 0x0b, 0x00}, nil},
		{"memory.copy", []byte{0xfc, 0x0a, 0x00, 0x00}, nil},
		// One passive segment of 4,096 bytes.
		{"memory.init", []byte{0xfc, 0x08, 0x00, 0x00}, cat([]byte{0x01, 0x01, 0x80, 0x20}, make([]byte, size))},
	} {
		t.Run(tt.name, func(t *testing.T) {
			m := wasmtest.Module{Locals: []byte{1, 1, byte(wasmbin.I32)}, Bodies: [][]byte{caller, cat(operands, tt.op)}, Data: tt.data}
			if tt.data != nil {
				m.DataCount, m.HasDataCount = 1, true
			}
			cm := instrumentAndCompile(t, ctx, r, m.Bytes())
			meter, err := runCommand(t, ctx, r, cm, 0, "_start")
			if err != nil {
				t.Fatal(err)
			}
			// An iteration: the caller's call and its 7 other
			// instructions; the callee's 3 i32.const, its bulk
			// instruction, its end, and the bulk charge. Then the
			// caller's final end.
			if want := uint64(calls*(8+5+size/BulkBytesPerFuel) + 1); meter.Used() != want {
				t.Fatalf("%d calls of a %s of %d bytes cost %d; want exactly %d", calls, tt.name, size, meter.Used(), want)
			}
		})
	}
}
