package fuel

import (
	"bytes"
	"context"
	"errors"
	"math"
	"runtime"
	"slices"
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

// fooled returns the metered form of a guest that refills one half of
// the meter at every iteration of an endless loop, keeping the other, as
// a module could when it named the meter's local (what
// TestInstrumentRefusesIndicesPastTheModule now refuses): the guest's own
// "local.set 0" and "local.get 0" of its i64 local are moved by hand onto
// local 1, the meter.
func fooled(t *testing.T, half int) []byte {
	t.Helper()
	return fooledWith(t, half, nil)
}

// fooledWith is fooled with extra instructions at the start of each
// iteration (they must not use local 0).
func fooledWith(t *testing.T, half int, extra []byte) []byte {
	t.Helper()
	keep, fill := int64(-1)<<32, int64(math.MaxInt32) // the fuel half full, the tick kept
	if half == tickHalfFull {
		keep, fill = 1<<32-1, math.MaxInt32<<32
	}
	get := cat([]byte{0x20, 0x00, 0x42}, wasmbin.AppendS64(nil, keep))
	set := cat([]byte{0x42}, wasmbin.AppendS64(nil, fill), []byte{0x84, 0x21, 0x00})
	body := cat([]byte{0x03, 0x40}, extra, get, []byte{0x83}, set, []byte{0x0c, 0x00, 0x0b})
	out, err := Instrument(wasmtest.Module{Locals: oneI64Local, Bodies: [][]byte{body}}.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	for _, own := range [][]byte{get, set} {
		if bytes.Count(out, own) != 1 {
			t.Fatalf("the guest's % x is not found once in the metered module", own)
		}
	}
	out[bytes.Index(out, get)+1] = 1
	out[bytes.Index(out, set)+len(set)-1] = 1
	return out
}

const (
	fuelHalfFull = iota // fooled keeps the fuel half full
	tickHalfFull        // fooled keeps the tick half full
)

// collecting runs the garbage collector back to back until stop is
// closed. A collection stops the world, and a goroutine in compiled guest
// code cannot be stopped until it calls into Go: if the guest never did,
// the collection, and with it every goroutine of the process (timers,
// signal handling, the test's own timeout), would wait forever.
func collecting(stop <-chan struct{}) {
	for {
		select {
		case <-stop:
			return
		default:
			runtime.GC()
		}
	}
}

// TestTickEndsAGuestThatFooledTheMeter: the deadline holds by the second
// line alone, while the process keeps collecting garbage. The guest's
// fuel counter never goes negative, so it never calls refuel on that
// account; the tick, which the guest cannot write, brings it back to Go,
// where the host ends it at its deadline.
func TestTickEndsAGuestThatFooledTheMeter(t *testing.T) {
	ctx := context.Background()
	r := meteredRuntime(t, ctx)
	cm, err := r.CompileModule(ctx, fooled(t, fuelHalfFull))
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
		stop := make(chan struct{})
		go collecting(stop)
		err = callWithin(t, cctx, mod, "_start")
		close(stop)
		cancel()
		m.Finish(mod)
		var exit *sys.ExitError
		if !errors.As(err, &exit) || exit.ExitCode() != sys.ExitCodeDeadlineExceeded {
			t.Fatalf("budget %d: %v; want the deadline's exit", budget, err)
		}
		if m.Exhausted() {
			t.Fatalf("budget %d: out of fuel; the guest kept its counter full, so only the tick could end it", budget)
		}
	}
}

// TestFuelEndsAGuestThatFooledTheTick: the other way round, the first
// line alone: a guest that keeps its tick full still runs out of fuel,
// and still ends at its deadline.
func TestFuelEndsAGuestThatFooledTheTick(t *testing.T) {
	ctx := context.Background()
	r := meteredRuntime(t, ctx)
	cm, err := r.CompileModule(ctx, fooled(t, tickHalfFull))
	if err != nil {
		t.Fatal(err)
	}
	m := NewMeter(1_000_000)
	mod, err := r.InstantiateModule(WithMeter(ctx, m), cm, wazero.NewModuleConfig().WithName("").WithStartFunctions())
	if err != nil {
		t.Fatal(err)
	}
	err = callWithin(t, WithMeter(ctx, m), mod, "_start")
	m.Finish(mod)
	var exit *sys.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != ExitCodeOutOfFuel || !m.Exhausted() {
		t.Fatalf("%v (exhausted %v); want out of fuel", err, m.Exhausted())
	}

	m = NewMeter(0)
	cctx, cancel := context.WithTimeout(WithMeter(ctx, m), 50*time.Millisecond)
	defer cancel()
	if mod, err = r.InstantiateModule(cctx, cm, wazero.NewModuleConfig().WithName("").WithStartFunctions()); err != nil {
		t.Fatal(err)
	}
	err = callWithin(t, cctx, mod, "_start")
	m.Finish(mod)
	if !errors.As(err, &exit) || exit.ExitCode() != sys.ExitCodeDeadlineExceeded {
		t.Fatalf("%v; want the deadline's exit", err)
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

// TestTickEndsAGuestCancelled: cancellation (a SIGTERM in the CLI)
// takes the same line as the deadline.
func TestTickEndsAGuestCancelled(t *testing.T) {
	ctx := context.Background()
	r := meteredRuntime(t, ctx)
	cm, err := r.CompileModule(ctx, fooled(t, fuelHalfFull))
	if err != nil {
		t.Fatal(err)
	}
	m := NewMeter(0)
	cctx, cancel := context.WithCancel(WithMeter(ctx, m))
	mod, err := r.InstantiateModule(cctx, cm, wazero.NewModuleConfig().WithName("").WithStartFunctions())
	if err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	go collecting(stop)
	defer close(stop)
	time.AfterFunc(20*time.Millisecond, cancel)
	err = callWithin(t, cctx, mod, "_start")
	m.Finish(mod)
	var exit *sys.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != sys.ExitCodeContextCanceled {
		t.Fatalf("%v; want the cancellation's exit", err)
	}
}

// TestDeadlineDoesNotWaitForItsTimer: refuel ends an instance whose
// deadline has passed even when the context's own timer has not run yet
// (the context here has a deadline in the past but was never cancelled).
func TestDeadlineDoesNotWaitForItsTimer(t *testing.T) {
	ctx := deadlineOnly{Context: context.Background(), at: time.Now().Add(-time.Second)}
	if err := ended(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("ended: %v; want DeadlineExceeded", err)
	}
	if err := ended(deadlineOnly{Context: context.Background(), at: time.Now().Add(time.Hour)}); err != nil {
		t.Fatalf("ended before the deadline: %v", err)
	}
}

// deadlineOnly reports a deadline but is never done: a context whose
// timer has not fired.
type deadlineOnly struct {
	context.Context
	at time.Time
}

func (d deadlineOnly) Deadline() (time.Time, bool) { return d.at, true }

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
		next, ok := m.refill(counter-1<<40, false)
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

// regionCharges returns the tick's region charges in function 0 of the
// metered module, in order: the high half of each "i64.const" in the
// fixed nine-byte form that only regionCharge writes, right after a read
// of the meter and before a subtraction (a check's charge; the refuel
// arm's give-back adds).
func regionCharges(t *testing.T, metered []byte) []int64 {
	t.Helper()
	m, err := wasmbin.Decode(metered)
	if err != nil {
		t.Fatal(err)
	}
	e := m.Codes[0].Expr
	var got []int64
	for i := 0; i+regionChargeLen+1 < len(e); i++ {
		if e[i] != 0x42 || i < 2 || (e[i-2] != 0x20 && e[i-2] != 0x23) {
			continue
		}
		b := e[i+1 : i+1+regionChargeLen]
		padded := true
		for _, c := range b[:regionChargeLen-1] {
			padded = padded && c&0x80 != 0
		}
		if !padded || b[regionChargeLen-1]&0x80 != 0 || e[i+1+regionChargeLen] != 0x7d {
			continue
		}
		var v int64 // positive: its last byte's sign bit (0x40) is clear
		for k, c := range b {
			v |= int64(c&0x7f) << (7 * k)
		}
		got = append(got, v>>32)
	}
	return got
}

// TestTickChargesEachRegion pins what each check charges the tick: the
// cost of its region (the code that can run before the check is passed
// again), with a call's callee counted when it does not check on entry
// itself. Function 1 is a leaf of 4 bytes (i32.const 0; drop; end);
// function 2 calls it, so it checks on entry and counts nothing.
func TestTickChargesEachRegion(t *testing.T) {
	leaf := []byte{0x41, 0x00, 0x1a}
	caller := []byte{0x10, 0x01}
	tests := []struct {
		name  string
		start []byte
		table bool
		want  []int64
	}{
		// i32.const, drop, br: loop and end are free.
		{"a loop", []byte{0x03, 0x40, 0x41, 0x00, 0x1a, 0x0c, 0x00, 0x0b}, false, []int64{3}},
		// The entry's check moves to the loop header (nothing between),
		// so the region is the whole function: call 1 + the leaf's 4
		// bytes + br + the final end (return).
		{"a loop calling a leaf", []byte{0x03, 0x40, 0x10, 0x01, 0x0c, 0x00, 0x0b}, false, []int64{7}},
		{"a loop calling a checked function", []byte{0x03, 0x40, 0x10, 0x02, 0x0c, 0x00, 0x0b}, false, []int64{3}},
		// The inner loop follows a call of a checked function, so it has
		// its own check and region (br); the outer's is call + br +
		// return.
		{"nested loops, separate checks", []byte{0x03, 0x40, 0x10, 0x02, 0x03, 0x40, 0x0c, 0x00, 0x0b, 0x0c, 0x00, 0x0b}, false, []int64{3, 1}},
		// A call of a small leaf is straight code (its caller pays, and
		// nothing is written back), so the inner loop shares the outer's
		// check: call + 4 + br (inner) + br (outer) + return.
		{"nested loops after a leaf call, one check", []byte{0x03, 0x40, 0x10, 0x01, 0x03, 0x40, 0x0c, 0x00, 0x0b, 0x0c, 0x00, 0x0b}, false, []int64{8}},
		// Directly nested loops share one check, and its region spans
		// both: i32.const, drop, br (inner) + br (outer).
		{"nested loops, one check", []byte{0x03, 0x40, 0x03, 0x40, 0x41, 0x00, 0x1a, 0x0c, 0x00, 0x0b, 0x0c, 0x00, 0x0b}, false, []int64{4}},
		// call_indirect may reach the largest unchecked function, the
		// leaf: i32.const + call_indirect + 4 + br + return.
		{"a loop with call_indirect", []byte{0x03, 0x40, 0x41, 0x00, 0x11, 0x00, 0x00, 0x0c, 0x00, 0x0b}, true, []int64{8}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := wasmtest.Module{Bodies: [][]byte{tt.start, leaf, caller}}
			if tt.table {
				m.Tables = [][]byte{{0x70, 0x00, 0x01}}
			}
			out, err := Instrument(m.Bytes())
			if err != nil {
				t.Fatal(err)
			}
			if got := regionCharges(t, out); !slices.Equal(got, tt.want) {
				t.Fatalf("region charges %v; want %v", got, tt.want)
			}
		})
	}
}

// TestEachLineAloneEndsEveryRunawayShape: with the checks testing only
// the fuel counter, or only the tick, every shape of endless guest still
// ends: out of fuel on the counter alone, at its deadline on the tick
// alone, while the process collects garbage back to back (the tick must
// bring the guest back to Go by itself). Function 1 is a leaf, function
// 2 calls it; the table holds function 1.
func TestEachLineAloneEndsEveryRunawayShape(t *testing.T) {
	leaf := []byte{0x41, 0x00, 0x1a}
	caller := []byte{0x10, 0x01}
	shapes := []struct {
		name  string
		start []byte
	}{
		{"a tight loop", []byte{0x03, 0x40, 0x0c, 0x00, 0x0b}},
		{"a loop calling a leaf", []byte{0x03, 0x40, 0x10, 0x01, 0x0c, 0x00, 0x0b}},
		{"a loop calling a function that calls", []byte{0x03, 0x40, 0x10, 0x02, 0x0c, 0x00, 0x0b}},
		{"nested loops sharing a check", []byte{0x03, 0x40, 0x03, 0x40, 0x41, 0x01, 0x0d, 0x01, 0x0c, 0x00, 0x0b, 0x0b}},
		{"a memory.fill loop", []byte{0x03, 0x40, 0x41, 0x00, 0x41, 0x00, 0x41, 0x80, 0x80, 0x04, 0xfc, 0x0b, 0x00, 0x0c, 0x00, 0x0b}},
		{"a call_indirect loop", []byte{0x03, 0x40, 0x41, 0x00, 0x11, 0x00, 0x00, 0x0c, 0x00, 0x0b}},
	}
	ctx := context.Background()
	r := meteredRuntime(t, ctx)
	for _, sh := range shapes {
		m := wasmtest.Module{
			Bodies:   [][]byte{sh.start, leaf, caller},
			Tables:   [][]byte{{0x70, 0x00, 0x01}},
			Elements: []byte{0x01, 0x00, 0x41, 0x00, 0x0b, 0x01, 0x01},
		}
		for _, line := range []lines{counterLine, tickLine} {
			name := sh.name + ", counter alone"
			if line == tickLine {
				name = sh.name + ", tick alone"
			}
			t.Run(name, func(t *testing.T) { endsByItsLine(t, ctx, r, m.Bytes(), line) })
		}
	}
}

// endsByItsLine meters wasm with checks testing line and runs its _start
// while the process keeps collecting garbage: with the counter alone it
// must run out of a 10,000,000 budget (no deadline), with the tick alone
// (or both) end at a 50 ms deadline.
func endsByItsLine(t *testing.T, ctx context.Context, r wazero.Runtime, wasm []byte, line lines) {
	t.Helper()
	metered, err := instrument(wasm, line)
	if err != nil {
		t.Fatal(err)
	}
	cm, err := r.CompileModule(ctx, metered)
	if err != nil {
		t.Fatal(err)
	}
	budget, want := uint64(0), uint32(sys.ExitCodeDeadlineExceeded)
	if line == counterLine {
		budget, want = 10_000_000, ExitCodeOutOfFuel
	}
	meter := NewMeter(budget)
	cctx, cancel := context.WithTimeout(WithMeter(ctx, meter), 50*time.Millisecond)
	defer cancel()
	if line == counterLine {
		cctx = WithMeter(ctx, meter) // no deadline: only the budget can end it
	}
	mod, err := r.InstantiateModule(cctx, cm, wazero.NewModuleConfig().WithName("").WithStartFunctions())
	if err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	go collecting(stop)
	err = callWithin(t, cctx, mod, "_start")
	close(stop)
	meter.Finish(mod)
	var exit *sys.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != want {
		t.Fatalf("%v; want exit code %#x", err, want)
	}
}

// TestReenteringCheckGivesBackItsCharges: a loop header's check re-enters
// the loop after a refuel, and its refuel arm gives back what the header
// charges again (the region's cost to the tick, the header's to the
// counter). Without the tick's give-back, a region costlier than 16 times
// a grant would refuel forever once the budget's remainder is small: the
// counter never moves, so neither does what is spent. Function 0 loops
// calling function 1, a leaf of 60,000 bytes that does not check, so the
// loop's region costs some 60,000 and the budget of 1,000 grants under
// 1,000: the run must end out of fuel, not at its deadline.
func TestReenteringCheckGivesBackItsCharges(t *testing.T) {
	loop := []byte{0x03, 0x40, 0x10, 0x01, 0x0c, 0x00, 0x0b} // loop; call 1; br 0; end
	leaf := bytes.Repeat([]byte{0x41, 0x00, 0x1a}, 20_000)   // i32.const 0; drop
	wasm := wasmtest.Module{Bodies: [][]byte{loop, leaf}}.Bytes()
	out, err := Instrument(wasm)
	if err != nil {
		t.Fatal(err)
	}
	if got := regionCharges(t, out); len(got) != 1 || got[0] < 60_000 {
		t.Fatalf("region charges %v; want one of over 60,000", got)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute) // a bound on a hang, not a margin
	defer cancel()
	r := meteredRuntime(t, ctx)
	cm, err := r.CompileModule(ctx, out)
	if err != nil {
		t.Fatal(err)
	}
	m := NewMeter(1_000)
	cctx := WithMeter(ctx, m)
	mod, err := r.InstantiateModule(cctx, cm, wazero.NewModuleConfig().WithName("").WithStartFunctions())
	if err != nil {
		t.Fatal(err)
	}
	defer mod.Close(ctx)
	_, err = mod.ExportedFunction("_start").Call(cctx)
	var ee *sys.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != ExitCodeOutOfFuel || !m.Exhausted() {
		t.Fatalf("err %v, exhausted %v: want out of fuel (a deadline means the arm refueled forever)", err, m.Exhausted())
	}
}
