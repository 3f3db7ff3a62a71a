package fuel

import (
	"context"
	"errors"
	"testing"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/sys"
)

// yieldCounter is a stand-in for WASI's sched_yield that counts its
// calls and, at call cancelAt, cancels the context the guest runs under:
// the host side of a deadline that passes during a host call.
type yieldCounter struct {
	calls    int
	cancelAt int
	cancel   context.CancelFunc
}

// hostCallRuntime returns a runtime with every feature, the refuel import
// and a wasi_snapshot_preview1 module whose only function, sched_yield,
// is y's.
func hostCallRuntime(t *testing.T, ctx context.Context, y *yieldCounter) wazero.Runtime {
	t.Helper()
	r := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfig().WithCoreFeatures(allFeatures))
	t.Cleanup(func() { r.Close(ctx) })
	if _, err := Instantiate(ctx, r); err != nil {
		t.Fatal(err)
	}
	_, err := r.NewHostModuleBuilder("wasi_snapshot_preview1").NewFunctionBuilder().
		WithGoModuleFunction(api.GoModuleFunc(func(ctx context.Context, _ api.Module, stack []uint64) {
			y.calls++
			if y.calls == y.cancelAt && y.cancel != nil {
				y.cancel()
			}
			stack[0] = 0
		}), nil, []api.ValueType{api.ValueTypeI32}).Export("sched_yield").Instantiate(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestIndirectHostCallsPayAsDirectOnes: a call_indirect or
// return_call_indirect whose table can hold an imported function pays
// ImportCallCost as a direct call of it does. The red team's guest made
// 100,000 sched_yield calls through call_indirect under a budget of 10^7
// and exited 0; by direct calls it ran out of fuel.
func TestIndirectHostCallsPayAsDirectOnes(t *testing.T) {
	ctx := context.Background()
	y := &yieldCounter{}
	r := hostCallRuntime(t, ctx, y)
	calls := instrumentAndCompile(t, ctx, r, readFixture(t, "hostcalls.wasm"))
	tail := instrumentAndCompile(t, ctx, r, readFixture(t, "hosttail.wasm"))
	const n = 100
	direct, err := runCommand(t, ctx, r, calls, 0, "direct", n)
	if err != nil {
		t.Fatal(err)
	}
	indirect, err := runCommand(t, ctx, r, calls, 0, "indirect", n)
	if err != nil {
		t.Fatal(err)
	}
	// The two loops differ by call_indirect's table index, an i32.const
	// an iteration.
	if direct.Used() < n*ImportCallCost || indirect.Used() != direct.Used()+n {
		t.Fatalf("%d host calls: direct %d fuel, through call_indirect %d; want at least %d, and %d more through the table",
			n, direct.Used(), indirect.Used(), n*ImportCallCost, n)
	}
	// The tail loop calls a function that makes the host call by
	// return_call_indirect: the same loop plus that function's entry
	// (its return_call_indirect, its i32.const and its end are charged
	// as the call_indirect, the i32.const and the drop's place).
	tailed, err := runCommand(t, ctx, r, tail, 0, "tail", n)
	if err != nil {
		t.Fatal(err)
	}
	if tailed.Used() < n*ImportCallCost {
		t.Fatalf("%d host calls through return_call_indirect: %d fuel; want at least %d", n, tailed.Used(), n*ImportCallCost)
	}
	m, err := runCommand(t, ctx, r, calls, 1e7, "_start")
	var exit *sys.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != ExitCodeOutOfFuel || !m.Exhausted() {
		t.Fatalf("100,000 host calls through call_indirect under a budget of 10^7: %v (exhausted %v); want out of fuel", err, m.Exhausted())
	}
}

// runCommand is run for a command module: its _start is not run at
// instantiation, and fn may be _start.
func runCommand(t *testing.T, ctx context.Context, r wazero.Runtime, cm wazero.CompiledModule, budget uint64, fn string, args ...uint64) (*Meter, error) {
	t.Helper()
	return runWith(t, ctx, r, cm, wazero.NewModuleConfig().WithStartFunctions(), budget, fn, args...)
}

// TestNoHostCallAfterTheDeadline: once the deadline has passed (here,
// the context is cancelled by the host call itself, as a slow host call
// outlives a deadline), the guest makes no further host call: every host
// call leaves the meter's tick negative, so the next check, which comes
// before the next host call (the one each host call site has), goes back
// to Go and sees the context. "pairs" makes two host calls with nothing
// between them but that check. Before, a guest made about a slice's worth of host calls
// after the deadline (2^20 / ImportCallCost by direct calls, unbounded
// through a table), each of which may take long.
func TestNoHostCallAfterTheDeadline(t *testing.T) {
	for _, tt := range []struct{ fixture, fn string }{
		{"hostcalls.wasm", "direct"},
		{"hostcalls.wasm", "indirect"},
		{"hostcalls.wasm", "pairs"},
		{"hosttail.wasm", "tail"},
		{"hostloop.wasm", "_start"},
	} {
		t.Run(tt.fixture+"/"+tt.fn, func(t *testing.T) {
			ctx := context.Background()
			y := &yieldCounter{}
			r := hostCallRuntime(t, ctx, y)
			cm := instrumentAndCompile(t, ctx, r, readFixture(t, tt.fixture))
			for _, at := range []int{1, 2, 5000} {
				cctx, cancel := context.WithCancel(ctx)
				*y = yieldCounter{cancelAt: at, cancel: cancel}
				m := NewMeter(0)
				mod, err := r.InstantiateModule(WithMeter(cctx, m), cm, wazero.NewModuleConfig().WithName("").WithStartFunctions())
				if err != nil {
					cancel()
					t.Fatal(err)
				}
				var args []uint64
				if tt.fn != "_start" {
					args = []uint64{1 << 30}
				}
				_, err = mod.ExportedFunction(tt.fn).Call(WithMeter(cctx, m), args...)
				cancel()
				var exit *sys.ExitError
				if !errors.As(err, &exit) || exit.ExitCode() != sys.ExitCodeContextCanceled {
					t.Fatalf("cancelled at host call %d: %v; want the cancellation's exit", at, err)
				}
				if y.calls != at {
					t.Fatalf("cancelled during host call %d, the guest made %d; want none after it", at, y.calls)
				}
			}
		})
	}
}

// TestHostCallMakesTheNextSliceSmall: slices double while the guest runs
// cheap code, up to maxSlice; a refuel whose tick ran out (as every host
// call leaves it) grants initialSlice again, so a host call never buys a
// slice sized by the cheap code before it.
func TestHostCallMakesTheNextSliceSmall(t *testing.T) {
	m := NewMeter(0)
	for range 50 {
		if _, ok := m.refill(-1, false); !ok {
			t.Fatal("refused")
		}
	}
	if m.slice != maxSlice {
		t.Fatalf("slice %d after 50 instant refills; want maxSlice %d", m.slice, uint64(maxSlice))
	}
	next, ok := m.refill(maxSlice/2, true)
	if !ok || next != initialSlice || m.slice != initialSlice {
		t.Fatalf("after a host call: granted %d, slice %d; want initialSlice %d", next, m.slice, initialSlice)
	}
}
