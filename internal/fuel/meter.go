package fuel

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/sys"

	"github.com/subako/subako-runner/internal/abi"
)

// ExitCodeOutOfFuel is the exit code an instance is closed with when its
// budget runs out, next to wazero's sys.ExitCodeDeadlineExceeded and
// sys.ExitCodeContextCanceled. A guest can pass the same number to
// proc_exit, so classify with Meter.Exhausted, not with the code alone.
const ExitCodeOutOfFuel uint32 = 0xfffffffd

// Slices. The fuel per refuel adapts so that a slice lasts about
// sliceTarget: every slice the guest returns to Go, where the deadline is
// checked and the Go scheduler and garbage collector can stop the
// goroutine (in guest code they cannot: a spinning guest would hold every
// stop-the-world). How long a unit of fuel takes varies a hundredfold
// between guests (a tight loop, bulk copies, host calls), so a fixed size
// would be either too long for some or needlessly short for others. The
// slicing changes when refuel is called, never what is charged: Used and
// the point where a budget runs out do not depend on it.
//
// maxSlice bounds what one slice can hand out whatever the guest did before:
// 4 Mi units, a few milliseconds of the fastest real work (a tight loop
// retires one to a few units a nanosecond). A guest that spends fuel
// without spending time doubles its slices up to it, and a looser bound
// would let it then run seconds of real work without coming back to Go.
const (
	sliceTarget  = time.Millisecond
	initialSlice = 1 << 20
	minSlice     = 1 << 12
	maxSlice     = 1 << 22
)

// Meter is one instance's fuel account. Attach it to the context the
// instance is instantiated and called with (WithMeter); the refuel host
// function draws from it. Its methods are safe for concurrent use.
type Meter struct {
	mu        sync.Mutex
	budget    uint64 // 0: unlimited
	granted   uint64 // fuel handed to the guest so far (deficits included)
	counter   int64  // the guest's counter at the last refuel or Finish
	exhausted bool
	slice     uint64    // the next grant
	last      time.Time // when the last slice was granted
	stop      *Stop     // why refuel ended the instance for its context (stop.go)
}

// NewMeter returns a meter with the given budget; 0 means unlimited (the
// guest still returns to Go about every millisecond, so deadlines are
// still checked).
func NewMeter(budget uint64) *Meter { return &Meter{budget: budget, slice: initialSlice} }

type meterKey struct{}

// WithMeter attaches m to ctx for the refuel host function.
func WithMeter(ctx context.Context, m *Meter) context.Context {
	return context.WithValue(ctx, meterKey{}, m)
}

// FromContext returns the meter WithMeter attached to ctx, or nil.
func FromContext(ctx context.Context) *Meter {
	m, _ := ctx.Value(meterKey{}).(*Meter)
	return m
}

// Used returns the fuel the instance consumed: exact after Finish (or
// after the budget ran out, when it is the budget), otherwise as of the
// last refuel.
func (m *Meter) Used() uint64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.exhausted {
		return m.budget
	}
	return used(m.granted, m.counter)
}

// Exhausted reports whether the instance spent more than the budget: it
// was closed with ExitCodeOutOfFuel, or Finish found the overdraft.
func (m *Meter) Exhausted() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.exhausted
}

// Finish reads the counter left in mod (the instrumented instance, closed
// or not) so that Used is exact, and marks the meter exhausted if the
// instance spent more than the budget after the last check (the guest
// checks only at loop headers and the entries of functions that call, so
// the tail of a run can overdraw without calling refuel). Call it once the
// instance has stopped.
func (m *Meter) Finish(mod api.Module) {
	if mod == nil {
		return
	}
	g := mod.ExportedGlobal(CounterExport)
	if g == nil {
		return
	}
	c := fuelHalf(g.Get())
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.exhausted {
		return
	}
	m.counter = c
	if m.budget != 0 && used(m.granted, c) > m.budget {
		m.exhausted = true
	}
}

func used(granted uint64, counter int64) uint64 {
	if counter >= 0 {
		if uint64(counter) > granted {
			return 0
		}
		return granted - uint64(counter)
	}
	return granted + uint64(-counter)
}

// refill settles a refuel call with the guest's counter (negative: the
// deficit) and returns the counter's new value, or false when the budget
// cannot cover what was spent.
//
// tickOut says the meter's tick had run out, as every host call leaves it
// (hostcall.go): the slice starts again at initialSlice, whatever the
// cheap code before had doubled it to, so that the code after a host call
// that took long, or a guest that fooled its fuel counter, runs no long
// slice unchecked.
func (m *Meter) refill(counter int64, tickOut bool) (int64, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	spent := used(m.granted, counter)
	now := time.Now()
	if tickOut {
		m.slice = initialSlice
	} else if !m.last.IsZero() {
		switch took := now.Sub(m.last); {
		case took < sliceTarget/2 && m.slice < maxSlice:
			m.slice *= 2
		case took > 2*sliceTarget && m.slice > minSlice:
			m.slice /= 2
		}
	}
	m.last = now
	grant := m.slice
	if m.budget != 0 {
		if spent > m.budget {
			m.counter = counter
			m.exhausted = true
			return 0, false
		}
		grant = min(grant, m.budget-spent)
	}
	// The deficit is forgiven into granted, so the counter restarts at the
	// grant and Used stays granted - counter.
	m.granted = spent + grant
	m.counter = int64(grant)
	return m.counter, true
}

// note records the counter when the instance ends for another reason.
func (m *Meter) note(counter int64) {
	m.mu.Lock()
	m.counter = counter
	m.mu.Unlock()
}

// TableBudget decides whether an instance's tables may grow. The runtime's
// per-instance memory account implements it, so that tables and linear
// memory share one limit.
type TableBudget interface {
	// GrowTable reports whether table may grow from size to size+delta
	// elements (delta > 0); true commits the growth to the account.
	GrowTable(table, size, delta uint32) bool
}

type tableBudgetKey struct{}

// WithTableBudget attaches b to ctx for the grow_table host function.
func WithTableBudget(ctx context.Context, b TableBudget) context.Context {
	return context.WithValue(ctx, tableBudgetKey{}, b)
}

// Instantiate defines the host module ImportModule with the refuel and
// grow_table functions in r. Call it once per runtime, before
// instantiating any instrumented module.
func Instantiate(ctx context.Context, r wazero.Runtime) (api.Closer, error) {
	fns := map[string]api.GoModuleFunc{ImportName: refuel, GrowTableName: growTable}
	b := r.NewHostModuleBuilder(ImportModule)
	for f := range abi.Functions(ImportModule) {
		fn := fns[f.Name]
		if fn == nil {
			return nil, fmt.Errorf("fuel: %s has no implementation", f.Name)
		}
		b.NewFunctionBuilder().WithGoModuleFunction(fn, f.Params(), f.Results()).Export(f.Name)
	}
	return b.Instantiate(ctx)
}

// growTable answers an instrumented table.grow: 1 lets it run, 0 makes it
// yield -1. A growth of nothing always runs (it allocates nothing); a
// growth past 2^32-1 elements never does.
func growTable(ctx context.Context, _ api.Module, stack []uint64) {
	table, size, delta := uint32(stack[0]), uint32(stack[1]), uint32(stack[2])
	ok := true
	switch {
	case delta == 0:
	case uint64(size)+uint64(delta) >= 1<<32:
		ok = false
	default:
		b, _ := ctx.Value(tableBudgetKey{}).(TableBudget)
		if b == nil {
			abi.NoState(ImportModule, GrowTableName, "fuel.WithTableBudget")
		}
		ok = b.GrowTable(table, size, delta)
	}
	stack[0] = 0
	if ok {
		stack[0] = 1
	}
}

// refuel runs when a charge overdrew either half of the guest's meter:
// stack[0] is the meter, whose fuel half is negative unless the tick ran
// out first. It ends the instance when the call's context is done or the
// budget is spent, as wazero's own proc_exit does (close, then panic with
// the exit error, which wazero returns to the caller); else it returns
// the refilled meter, both halves granted anew. Without a Meter in the context it ends the
// instance by the rule of abi.ErrNoState: a guest never runs unmetered.
func refuel(ctx context.Context, mod api.Module, stack []uint64) {
	if stack[0] == stackExhausted {
		panic(ErrCallStackExhausted) // depth.go; wazero fails the call with it
	}
	counter := fuelHalf(stack[0])
	m := FromContext(ctx)
	if err := ended(ctx); err != nil {
		code := sys.ExitCodeContextCanceled
		if errors.Is(err, context.DeadlineExceeded) {
			code = sys.ExitCodeDeadlineExceeded
		}
		if m != nil {
			m.note(counter)
			m.recordStop(ctx, err)
		}
		_ = mod.CloseWithExitCode(ctx, code)
		panic(sys.NewExitError(code))
	}
	if m == nil {
		abi.NoState(ImportModule, ImportName, "fuel.WithMeter")
	}
	next, ok := m.refill(counter, tickHalf(stack[0]) < 0)
	if !ok {
		_ = mod.CloseWithExitCode(ctx, ExitCodeOutOfFuel)
		panic(sys.NewExitError(ExitCodeOutOfFuel))
	}
	stack[0] = meter(next)
}

// fuelHalf is the fuel counter in a meter: its low 32 bits, signed (see
// tickShift in check.go).
func fuelHalf(meter uint64) int64 { return int64(int32(uint32(meter))) }

// tickHalf is the tick in a meter: its high 32 bits, signed.
func tickHalf(meter uint64) int32 { return int32(meter >> 32) }

// meter is the meter a refuel hands back for a fuel grant of counter
// (at most maxSlice): the grant in the low half, the tick's grant,
// tickShift bits more, in the high half.
func meter(counter int64) uint64 {
	return uint64(counter)<<tickShift<<32 | uint64(uint32(counter))
}

// ended reports why ctx is done, or whether its deadline has passed
// though the timer that cancels it has not run yet: the deadline must not
// wait for a goroutine, which a loaded scheduler may run late.
func ended(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if d, ok := ctx.Deadline(); ok && !time.Now().Before(d) {
		return context.DeadlineExceeded
	}
	return nil
}
