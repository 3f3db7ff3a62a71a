package fuel

import (
	"context"
	"errors"
	"io"
	goruntime "runtime"
	"strings"
	"testing"

	"github.com/subako/subako-runner/internal/abi"
	"github.com/subako/subako-runner/internal/wasmbin"
	"github.com/subako/subako-runner/internal/wasmbin/wasmtest"
	"github.com/tetratelabs/wazero"
)

// refuelCalls counts the call sites of refuel in an instrumented module.
func refuelCalls(t testing.TB, out []byte) int {
	t.Helper()
	m, err := wasmbin.Decode(out)
	if err != nil {
		t.Fatal(err)
	}
	refuel := uint32(m.NumImported(wasmbin.KindFunc)) - 1
	for i, im := range m.Imports {
		if im.Module == ImportModule && im.Name == ImportName {
			refuel = uint32(i) // every import here is a function
		}
	}
	n := 0
	var in wasmbin.Instr
	w := wasmbin.NewWalker(nil, 0)
	for i := range m.Codes {
		w.Reset(m.Codes[i].Expr, m.Codes[i].ExprOffset)
		for {
			err := w.Next(&in)
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			if in.Op == wasmbin.OpCall && in.Index == refuel {
				n++
			}
		}
	}
	return n
}

// TestNestedLoopsShareOneCheck: loops nested with nothing conditional
// between their headers get one check, at the innermost header, which every
// iteration of every one of them passes. Each loop used to get its own
// if/else, which multiplied wazero's compile time of 20,000 nested loops
// by 16 (issue 17, item 5). Loops with a conditional branch between their
// headers keep a check each: an outer iteration may skip the inner loop.
func TestNestedLoopsShareOneCheck(t *testing.T) {
	const n = 200
	tests := []struct {
		name  string
		piece []byte
		want  int
	}{
		{"directly nested", []byte{0x03, 0x40}, 1},
		{"straight code between", []byte{0x03, 0x40, 0x41, 0x00, 0x1a}, 1}, // loop; i32.const 0; drop
		{"br_if between", []byte{0x03, 0x40, 0x41, 0x00, 0x0d, 0x00}, n},   // loop; i32.const 0; br_if 0
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			wasm := wasmtest.Module{Bodies: [][]byte{wasmtest.Repeat(tt.piece, []byte{0x0b}, n)}}.Bytes()
			out, err := Instrument(wasm)
			if err != nil {
				t.Fatal(err)
			}
			if got := refuelCalls(t, out); got != tt.want {
				t.Fatalf("%d refuel call sites, want %d", got, tt.want)
			}
		})
	}
}

// TestNestedLoopsStillRunOutOfFuel: the one check at the innermost header
// still stops a guest that spins on the outermost loop.
func TestNestedLoopsStillRunOutOfFuel(t *testing.T) {
	ctx := context.Background()
	// loop loop loop br 2 end end end: every iteration branches to the
	// outermost header.
	body := append(wasmtest.Repeat([]byte{0x03, 0x40}, nil, 3), 0x0c, 0x02, 0x0b, 0x0b, 0x0b)
	r := meteredRuntime(t, ctx)
	cm := instrumentAndCompile(t, ctx, r, wasmtest.Module{Bodies: [][]byte{body}}.Bytes())
	m := NewMeter(10_000_000)
	mod, err := r.InstantiateModule(WithMeter(ctx, m), cm, wazero.NewModuleConfig().WithName("").WithStartFunctions())
	if err != nil {
		t.Fatal(err)
	}
	defer mod.Close(ctx)
	_, err = mod.ExportedFunction("_start").Call(WithMeter(ctx, m))
	if code, ok := exitCode(err); !ok || code != ExitCodeOutOfFuel || !m.Exhausted() {
		t.Fatalf("err = %v, Exhausted %v: want ExitCodeOutOfFuel", err, m.Exhausted())
	}
}

// tableBomb is the 64-byte attack of issue 17: _start grows a table by
// 2^32-2 elements and stores what table.grow returned at address 0.
func tableBomb(delta int32) []byte {
	body := []byte{0x41, 0x00}      // i32.const 0 (the store's address)
	body = append(body, 0xd0, 0x70) // ref.null func
	body = append(body, 0x41)
	body = wasmbin.AppendS64(body, int64(delta))
	body = append(body, 0xfc, 15, 0x00)   // table.grow 0
	body = append(body, 0x36, 0x02, 0x00) // i32.store
	return wasmtest.Module{Bodies: [][]byte{body}, Tables: [][]byte{{0x70, 0x00, 0x00}}}.Bytes()
}

type budgetFunc func(table, size, delta uint32) bool

func (f budgetFunc) GrowTable(table, size, delta uint32) bool { return f(table, size, delta) }

// TestTableGrowAsksTheHost: a table.grow of 2^32-2 elements gets -1, in
// the same process, and the host's heap does not grow with it; a growth the
// budget allows runs; without a budget the call ends with abi.ErrNoState.
func TestTableGrowAsksTheHost(t *testing.T) {
	ctx := context.Background()
	r := meteredRuntime(t, ctx)
	runErr := func(t *testing.T, delta int32, b TableBudget) (int32, error) {
		t.Helper()
		cm := instrumentAndCompile(t, ctx, r, tableBomb(delta))
		cctx := WithMeter(ctx, NewMeter(0))
		if b != nil {
			cctx = WithTableBudget(cctx, b)
		}
		mod, err := r.InstantiateModule(cctx, cm, wazero.NewModuleConfig().WithName("").WithStartFunctions())
		if err != nil {
			t.Fatal(err)
		}
		defer mod.Close(ctx)
		if _, err := mod.ExportedFunction("_start").Call(cctx); err != nil {
			return 0, err
		}
		v, ok := mod.Memory().ReadUint32Le(0)
		if !ok {
			t.Fatal("cannot read the result")
		}
		return int32(v), nil
	}
	run := func(t *testing.T, delta int32, b TableBudget) int32 {
		t.Helper()
		v, err := runErr(t, delta, b)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	t.Run("attack", func(t *testing.T) {
		var asked [3]uint32
		refuse := budgetFunc(func(table, size, delta uint32) bool { asked = [3]uint32{table, size, delta}; return false })
		goruntime.GC()
		var before, after goruntime.MemStats
		goruntime.ReadMemStats(&before)
		if got := run(t, -2, refuse); got != -1 {
			t.Fatalf("table.grow returned %d, want -1", got)
		}
		goruntime.ReadMemStats(&after)
		if asked != [3]uint32{0, 0, 1<<32 - 2} {
			t.Fatalf("the budget was asked (table, size, delta) = %v", asked)
		}
		// An unchecked grow allocates 32 GiB (and kills the process); the
		// run here allocates a few MiB of compiled code and instances.
		if grew := after.TotalAlloc - before.TotalAlloc; grew > 256<<20 {
			t.Fatalf("the host allocated %d bytes for a refused grow", grew)
		}
	})
	t.Run("allowed", func(t *testing.T) {
		allow := budgetFunc(func(table, size, delta uint32) bool { return size+delta <= 1000 })
		if got := run(t, 1000, allow); got != 0 {
			t.Fatalf("table.grow returned %d, want 0 (the old size)", got)
		}
		if got := run(t, 1001, allow); got != -1 {
			t.Fatalf("table.grow past the budget returned %d, want -1", got)
		}
	})
	t.Run("no budget", func(t *testing.T) {
		// A growth that needs the budget ends the call by the rule of
		// abi.ErrNoState; it never grows on a default of its own.
		if _, err := runErr(t, 10, nil); !errors.Is(err, abi.ErrNoState) || !strings.Contains(err.Error(), "WithTableBudget") {
			t.Fatalf("table.grow without a budget: %v, want abi.ErrNoState", err)
		}
	})
}
