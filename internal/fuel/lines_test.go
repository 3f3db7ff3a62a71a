package fuel

import (
	"bytes"
	"context"
	"errors"
	"math"
	"testing"
	"time"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/sys"

	"github.com/subako/subako-runner/internal/wasmbin"
	"github.com/subako/subako-runner/internal/wasmbin/wasmtest"
)

// maxI64 is "i64.const 0x7fffffffffffffff": a counter that never runs out.
var maxI64 = append([]byte{0x42}, wasmbin.AppendS64(nil, math.MaxInt64)...)

// oneI64Local is a locals vector of one i64.
var oneI64Local = []byte{1, 1, byte(wasmbin.I64)}

func cat(parts ...[]byte) []byte { return bytes.Join(parts, nil) }

// TestInstrumentRefusesIndicesPastTheModule: an index one past the
// module's own names nothing in the module as uploaded (it is invalid),
// and the rewrite must not give it a meaning: the meter's counter local,
// its counter and stop globals, the refuel type. Each boundary from both
// sides: the last valid index passes.
func TestInstrumentRefusesIndicesPastTheModule(t *testing.T) {
	loop := func(body ...byte) []byte { return cat([]byte{0x03, 0x40}, body, []byte{0x0c, 0x00, 0x0b}) }
	tests := []struct {
		name   string
		m      wasmtest.Module
		refuse bool
	}{
		{"local.set of the last local", wasmtest.Module{Locals: oneI64Local, Bodies: [][]byte{loop(cat(maxI64, []byte{0x21, 0x00})...)}}, false},
		{"local.set one past (the 77-byte module)", wasmtest.Module{Locals: oneI64Local, Bodies: [][]byte{loop(cat(maxI64, []byte{0x21, 0x01})...)}}, true},
		{"local.tee one past", wasmtest.Module{Locals: oneI64Local, Bodies: [][]byte{loop(cat(maxI64, []byte{0x22, 0x01, 0x1a})...)}}, true},
		{"local.get one past", wasmtest.Module{Locals: oneI64Local, Bodies: [][]byte{loop(0x20, 0x01, 0x1a)}}, true},
		{"local.get one past in dead code", wasmtest.Module{Locals: oneI64Local, Bodies: [][]byte{{0x0f, 0x20, 0x01, 0x1a}}}, true},
		{"global.set with no globals (the counter's index)", wasmtest.Module{Bodies: [][]byte{loop(cat(maxI64, []byte{0x24, 0x00})...)}}, true},
		{"global.get with no globals", wasmtest.Module{Bodies: [][]byte{{0x23, 0x01, 0x1a}}}, true},
		{"call_indirect of type 0", wasmtest.Module{Tables: [][]byte{{0x70, 0x00, 0x01}}, Bodies: [][]byte{{0x41, 0x00, 0x11, 0x00, 0x00}}}, false},
		{"call_indirect of a type one past (refuel's)", wasmtest.Module{Tables: [][]byte{{0x70, 0x00, 0x01}}, Bodies: [][]byte{{0x42, 0x00, 0x41, 0x00, 0x11, 0x01, 0x00, 0x1a}}}, true},
		{"block of type one past", wasmtest.Module{Bodies: [][]byte{{0x02, 0x01, 0x0b}}}, true},
		{"block of type 0", wasmtest.Module{Bodies: [][]byte{{0x02, 0x00, 0x0b}}}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Instrument(tt.m.Bytes())
			if tt.refuse && !errors.Is(err, ErrIndex) {
				t.Fatalf("Instrument: %v; want ErrIndex", err)
			}
			if !tt.refuse && err != nil {
				t.Fatalf("Instrument: %v; want success", err)
			}
		})
	}
}

// fooledMeter returns the metered form of a guest that refills its own
// counter at every iteration of an endless loop, as a module could when
// it named the counter local (what TestInstrumentRefusesIndicesPastTheModule
// now refuses): the guest's own "local.set 0" of i64 max is moved by hand
// onto the counter, local 1. The first line (fuel) then never sees it.
func fooledMeter(t *testing.T) []byte {
	t.Helper()
	body := cat([]byte{0x03, 0x40}, maxI64, []byte{0x21, 0x00, 0x0c, 0x00, 0x0b})
	out, err := Instrument(wasmtest.Module{Locals: oneI64Local, Bodies: [][]byte{body}}.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	setOwn := cat(maxI64, []byte{0x21, 0x00})
	if bytes.Count(out, setOwn) != 1 {
		t.Fatalf("the guest's local.set is not found once in the metered module")
	}
	i := bytes.Index(out, setOwn)
	out[i+len(setOwn)-1] = 0x01 // local.set 1: the counter
	return out
}

// TestStopFlagEndsAGuestThatFooledTheMeter: the deadline holds by the
// second line alone. The guest's counter never goes negative, so it never
// calls refuel on its own; the host's stop flag, set when the context
// ends, brings it back, and the instance ends as a deadline.
func TestStopFlagEndsAGuestThatFooledTheMeter(t *testing.T) {
	ctx := context.Background()
	r := meteredRuntime(t, ctx)
	cm, err := r.CompileModule(ctx, fooledMeter(t))
	if err != nil {
		t.Fatal(err)
	}
	for _, budget := range []uint64{0, 1 << 40} {
		m := NewMeter(budget)
		cctx, cancel := context.WithTimeout(WithMeter(ctx, m), 50*time.Millisecond)
		mod, err := r.InstantiateModule(cctx, cm, wazero.NewModuleConfig().WithName("").WithStartFunctions())
		if err != nil {
			cancel()
			t.Fatal(err)
		}
		err = callWithin(t, cctx, mod, "_start")
		cancel()
		m.Finish(mod)
		var exit *sys.ExitError
		if !errors.As(err, &exit) || exit.ExitCode() != sys.ExitCodeDeadlineExceeded {
			t.Fatalf("budget %d: %v; want the deadline's exit", budget, err)
		}
		if m.Exhausted() {
			t.Fatalf("budget %d: out of fuel; the guest kept its counter full, so only the stop flag could end it", budget)
		}
	}
}

// callWithin calls fn, failing the test if it has not returned after a
// bound far beyond any deadline these tests set (a hang, not a margin).
func callWithin(t *testing.T, ctx context.Context, mod api.Module, fn string) error {
	t.Helper()
	done := make(chan error, 1)
	go func() {
		_, err := mod.ExportedFunction(fn).Call(ctx)
		done <- err
	}()
	select {
	case err := <-done:
		return err
	case <-time.After(time.Minute):
		t.Fatalf("%s still running a minute after its context ended: nothing stopped it", fn)
		return nil
	}
}

// TestStopFlagEndsAGuestCancelled: cancellation (a SIGTERM in the CLI)
// takes the same line as the deadline.
func TestStopFlagEndsAGuestCancelled(t *testing.T) {
	ctx := context.Background()
	r := meteredRuntime(t, ctx)
	cm, err := r.CompileModule(ctx, fooledMeter(t))
	if err != nil {
		t.Fatal(err)
	}
	m := NewMeter(0)
	cctx, cancel := context.WithCancel(WithMeter(ctx, m))
	mod, err := r.InstantiateModule(cctx, cm, wazero.NewModuleConfig().WithName("").WithStartFunctions())
	if err != nil {
		t.Fatal(err)
	}
	time.AfterFunc(20*time.Millisecond, cancel)
	err = callWithin(t, cctx, mod, "_start")
	m.Finish(mod)
	var exit *sys.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != sys.ExitCodeContextCanceled {
		t.Fatalf("%v; want the cancellation's exit", err)
	}
}

// TestStopFlagIsNotWrittenAfterFinish: once the instance is over, its
// context ending must not reach it (the meter forgets the flag).
func TestStopFlagIsNotWrittenAfterFinish(t *testing.T) {
	ctx := context.Background()
	r := meteredRuntime(t, ctx)
	cm := instrumentAndCompile(t, ctx, r, readFixture(t, "counts.wasm"))
	m := NewMeter(0)
	cctx, cancel := context.WithCancel(WithMeter(ctx, m))
	mod, err := r.InstantiateModule(cctx, cm, wazero.NewModuleConfig().WithName(""))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := mod.ExportedFunction("loop").Call(cctx, 10); err != nil {
		t.Fatal(err)
	}
	m.Finish(mod)
	cancel()
	if v := mod.ExportedGlobal(StopExport).Get(); v != 0 {
		t.Fatalf("stop flag %#x after Finish and cancel; want 0", v)
	}
}

// TestGrowthsAndBulkPayForWork: fuel tracks time. A refused growth asks
// for up to 2^32 pages and costs only its instructions, so no run of them
// makes the meter's slices grow; memory.grow(-1) just returns -1 under a
// budget; a bulk instruction that traps (out of bounds) traps, however
// large its size, and is not reported as out of fuel.
func TestGrowthsAndBulkPayForWork(t *testing.T) {
	ctx := context.Background()
	r := meteredRuntime(t, ctx)
	cm := instrumentAndCompile(t, ctx, r, readFixture(t, "counts.wasm"))
	const budget = 1_000_000
	for _, delta := range []uint64{0xffffffff, 0x10000, 101} {
		m, err := run(t, ctx, r, cm, budget, "grow", delta)
		if err != nil || m.Exhausted() || m.Used() != 3 {
			t.Fatalf("grow(%#x) under a budget of %d: err %v, used %d; want -1 for 3 fuel", delta, budget, err, m.Used())
		}
	}
	m, err := run(t, ctx, r, cm, budget, "fill", 0xffffffff)
	if err == nil || m.Exhausted() {
		t.Fatalf("fill(2^32-1): err %v, Exhausted %v; want a trap, not out of fuel", err, m.Exhausted())
	}
	var exit *sys.ExitError
	if errors.As(err, &exit) {
		t.Fatalf("fill(2^32-1) ended the instance with exit %d; want a trap", exit.ExitCode())
	}
}

// TestSlicesStayBounded: whatever a guest spends, one grant never exceeds
// maxSlice, so the guest comes back to Go every few milliseconds.
func TestSlicesStayBounded(t *testing.T) {
	m := NewMeter(0)
	counter := int64(0)
	for range 200 { // every slice spent at once: the adaptation doubles
		next, ok := m.refill(counter - 1<<40)
		if !ok {
			t.Fatal("refused")
		}
		if uint64(next) > maxSlice {
			t.Fatalf("granted %d, more than maxSlice %d", next, uint64(maxSlice))
		}
		counter = 0
	}
	if m.slice != maxSlice {
		t.Fatalf("slice %d after 200 instant refills; want it to reach maxSlice %d (and stop there)", m.slice, uint64(maxSlice))
	}
}
