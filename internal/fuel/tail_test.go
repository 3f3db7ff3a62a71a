package fuel

import (
	"bytes"
	"context"
	"errors"
	"testing"

	"github.com/subako/subako-runner/internal/wasmbin"
	"github.com/subako/subako-runner/internal/wasmbin/wasmtest"
)

// checkTest is the test that opens every check: i64.and; i64.eqz; if; else.
var checkTest = []byte{0x83, 0x50, 0x04, 0x40, 0x05}

// checksIn counts the checks in function fn of a metered module.
func checksIn(t *testing.T, metered []byte, fn int) int {
	t.Helper()
	m, err := wasmbin.Decode(metered)
	if err != nil {
		t.Fatal(err)
	}
	return bytes.Count(m.Codes[fn].Expr, checkTest)
}

// straight is n times "i32.const 0; drop": 2n of cost.
func straight(n int) []byte { return bytes.Repeat([]byte{0x41, 0x00, 0x1a}, n) }

// TestTailsCheckWhereAReturnCanRunLong pins where a call's return gets a
// check of its own: where the dearest path from it to the next check or
// the function's exit costs more than maxUncheckedTail, and nowhere else.
// Function 0 calls; function 1 calls function 2 (so it checks on entry);
// function 2 is a small leaf; function 3 makes no call but is too long
// for a leaf, so it runs unchecked; the table holds function 1.
func TestTailsCheckWhereAReturnCanRunLong(t *testing.T) {
	long := straight(maxUncheckedTail) // 2 × maxUncheckedTail
	short := straight(maxUncheckedTail/2 - 2)
	tests := []struct {
		name string
		body []byte
		want int // checks in function 0: its entry's, its loops', its returns'
	}{
		{"a call, then the exit", []byte{0x10, 0x01}, 1},
		// Both sides of maxUncheckedTail: i32.const i32.eqz drop (3) +
		// 2 × 30 + the final end (1) is 64; 2 × 32 + 1 is 65.
		{"a call, then a tail of exactly maxUncheckedTail", cat([]byte{0x10, 0x01, 0x41, 0x00, 0x45, 0x1a}, straight(30)), 1},
		{"a call, then a tail of one more", cat([]byte{0x10, 0x01}, straight(32)), 2},
		{"a call, then a short tail", cat([]byte{0x10, 0x01}, short), 1},
		{"a call, then a long tail", cat([]byte{0x10, 0x01}, long), 2},
		{"a call, then an if whose arm is long", cat([]byte{0x10, 0x01, 0x41, 0x00, 0x04, 0x40}, long, []byte{0x0b}), 2},
		{"a call, then an if whose else arm is long", cat([]byte{0x10, 0x01, 0x41, 0x00, 0x04, 0x40, 0x01, 0x05}, long, []byte{0x0b}), 2},
		{"a call, then a return before a long tail", cat([]byte{0x10, 0x01, 0x0f}, long), 1},
		{"a call, then a branch out of a block over a long tail", cat([]byte{0x02, 0x40, 0x10, 0x01, 0x0c, 0x00}, long, []byte{0x0b}), 1},
		{"a call, then a branch back to its loop's header", cat([]byte{0x03, 0x40, 0x10, 0x01, 0x0c, 0x00, 0x0b}, long), 1},
		{"a call, then a long loop (its header checks)", cat([]byte{0x10, 0x01, 0x03, 0x40}, long, []byte{0x41, 0x00, 0x0d, 0x00, 0x0b}), 2},
		{"a call, then a long run into a loop (the return checks, and the loop)", cat([]byte{0x10, 0x01}, long, []byte{0x03, 0x40, 0x0b}), 3},
		{"a call, then a tail call of a long function that does not check", []byte{0x10, 0x01, 0x12, 0x03}, 2},
		{"a call, then a tail call of a function that checks", []byte{0x10, 0x01, 0x12, 0x01}, 1},
		{"a call of a small leaf, then a long tail", cat([]byte{0x10, 0x02}, long), 1},
		{"call_indirect of a function that charges itself, then a long tail", cat([]byte{0x41, 0x00, 0x11, 0x00, 0x00}, long), 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := wasmtest.Module{
				Bodies:   [][]byte{tt.body, {0x10, 0x02}, {0x41, 0x00, 0x1a}, long},
				Tables:   [][]byte{{0x70, 0x00, 0x01}},
				Elements: []byte{0x01, 0x00, 0x41, 0x00, 0x0b, 0x01, 0x01},
			}
			out, err := Instrument(m.Bytes())
			if err != nil {
				t.Fatal(err)
			}
			if got := checksIn(t, out, 0); got != tt.want {
				t.Fatalf("%d checks; want %d", got, tt.want)
			}
		})
	}
}

// unwinding is the red team's shape that no loop or entry check saw: a
// recursion 20,000 frames deep (mem[0] counts down) whose code after the
// recursive call does 100,000 instructions of real work (mem[4] =
// mem[4]*3, over and over), all on the way back.
func unwinding() []byte {
	work := bytes.Repeat([]byte{0x41, 0x04, 0x41, 0x04, 0x28, 0x02, 0x00, 0x41, 0x03, 0x6c, 0x36, 0x02, 0x00}, 100_000/6)
	recurse := cat(
		[]byte{0x41, 0x00, 0x41, 0x00, 0x28, 0x02, 0x00, 0x41, 0x01, 0x6b, 0x36, 0x02, 0x00}, // mem[0]--
		[]byte{0x41, 0x00, 0x28, 0x02, 0x00, 0x04, 0x40, 0x10, 0x01, 0x0b},                   // if mem[0] { call 1 }
		work)
	start := []byte{0x41, 0x00, 0x41, 0xa0, 0x9c, 0x01, 0x36, 0x02, 0x00, 0x10, 0x01} // mem[0] = 20000; call 1
	return wasmtest.Module{Bodies: [][]byte{start, recurse}}.Bytes()
}

// TestUnwindingEndsAtItsDeadline: the unwinding guest, which ran 1.2 s
// past a 200 ms deadline before the checks after returns, ends at its
// deadline with both lines and with each alone (the fuel half alone by
// its budget), while the process keeps collecting garbage.
func TestUnwindingEndsAtItsDeadline(t *testing.T) {
	ctx := context.Background()
	r := meteredRuntime(t, ctx)
	for _, line := range []lines{bothLines, counterLine, tickLine} {
		t.Run([]string{"both lines", "the fuel alone", "the tick alone"}[line], func(t *testing.T) {
			endsByItsLine(t, ctx, r, unwinding(), line)
		})
	}
}

// TestInstrumentRefusesFunctionsTooLargeForTheMeter: a body of more than
// maxBodyBytes could charge the fuel half past its range between two
// checks; one of maxBodyBytes is metered.
func TestInstrumentRefusesFunctionsTooLargeForTheMeter(t *testing.T) {
	nops := func(n int) []byte { return bytes.Repeat([]byte{0x01}, n) } // nop: its body is n+1 bytes with the end
	_, err := Instrument(wasmtest.Module{Bodies: [][]byte{nops(maxBodyBytes)}}.Bytes())
	if !errors.Is(err, ErrUnsupported) {
		t.Fatalf("a body of %d bytes: %v; want ErrUnsupported", maxBodyBytes+1, err)
	}
	if testing.Short() {
		return
	}
	if _, err := Instrument(wasmtest.Module{Bodies: [][]byte{nops(maxBodyBytes - 1)}}.Bytes()); err != nil {
		t.Fatalf("a body of %d bytes: %v; want it metered", maxBodyBytes, err)
	}
}

// TestMeterHalves pins the meter's layout, which the guest's checks and
// the host's refuel must agree on: the fuel in the low half, signed; the
// tick's grant tickShift bits above it in the high half.
func TestMeterHalves(t *testing.T) {
	for _, tt := range []struct {
		meter uint64
		fuel  int64
	}{
		{0, 0},
		{5, 5},
		{1<<32 | 7, 7},
		{0xffffffff, -1},
		{0x7fffffff_80000000, -1 << 31},
		{0x7fffffff_7fffffff, 1<<31 - 1},
	} {
		if got := fuelHalf(tt.meter); got != tt.fuel {
			t.Errorf("fuelHalf(%#x) = %d; want %d", tt.meter, got, tt.fuel)
		}
	}
	for _, grant := range []int64{1, minSlice, initialSlice, maxSlice} {
		m := meter(grant)
		if fuelHalf(m) != grant || int64(m>>32) != grant<<tickShift {
			t.Errorf("meter(%d) = %#x; want the grant below, the grant<<%d above", grant, m, tickShift)
		}
		if int64(m)&(tickSign|fuelSign) != 0 {
			t.Errorf("meter(%d) = %#x: a fresh grant must pass the check", grant, m)
		}
	}
}

// TestTailsRefusesBlocksThatDoNotNest: a body whose else or block opener
// has no block around it (invalid; the validators refuse it too) is an
// error from the rewrite, never a panic.
func TestTailsRefusesBlocksThatDoNotNest(t *testing.T) {
	for name, body := range map[string][]byte{
		"an else outside any if":  {0x10, 0x00, 0x05},
		"a block never ended":     {0x10, 0x00, 0x02, 0x40},
		"an if with an end short": {0x10, 0x00, 0x41, 0x00, 0x04, 0x40, 0x02, 0x40, 0x0b},
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := Instrument(wasmtest.Module{Bodies: [][]byte{body}}.Bytes()); err == nil {
				t.Fatal("Instrument accepted it")
			}
		})
	}
}
