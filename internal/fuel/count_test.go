package fuel

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/sys"
)

const fixtures = "../../testdata/fuel"

func readFixture(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(fixtures, name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// meteredRuntime returns a runtime with the refuel host module, closed
// when the test ends.
func meteredRuntime(t testing.TB, ctx context.Context) wazero.Runtime {
	t.Helper()
	r := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfig().WithCoreFeatures(api.CoreFeaturesV2))
	t.Cleanup(func() { r.Close(ctx) })
	if _, err := Instantiate(ctx, r); err != nil {
		t.Fatal(err)
	}
	return r
}

func instrumentAndCompile(t testing.TB, ctx context.Context, r wazero.Runtime, wasm []byte) wazero.CompiledModule {
	t.Helper()
	out, err := Instrument(wasm)
	if err != nil {
		t.Fatalf("Instrument: %v", err)
	}
	cm, err := r.CompileModule(ctx, out)
	if err != nil {
		t.Fatalf("the instrumented module does not compile: %v", err)
	}
	return cm
}

// run calls fn(args) on a fresh instance metered with budget, and returns
// the fuel used and the call's error.
func run(t *testing.T, ctx context.Context, r wazero.Runtime, cm wazero.CompiledModule, budget uint64, fn string, args ...uint64) (*Meter, error) {
	t.Helper()
	return runWith(t, ctx, r, cm, wazero.NewModuleConfig(), budget, fn, args...)
}

// runWith is run with the instance's module configuration.
func runWith(t *testing.T, ctx context.Context, r wazero.Runtime, cm wazero.CompiledModule, cfg wazero.ModuleConfig, budget uint64, fn string, args ...uint64) (*Meter, error) {
	t.Helper()
	m := NewMeter(budget)
	cctx := WithMeter(ctx, m)
	mod, err := r.InstantiateModule(cctx, cm, cfg.WithName(""))
	if err != nil {
		t.Fatal(err)
	}
	defer mod.Close(ctx)
	_, err = mod.ExportedFunction(fn).Call(cctx, args...)
	m.Finish(mod)
	return m, err
}

func fib(n int) uint64 {
	if n < 2 {
		return 6
	}
	return 16 + fib(n-1) + fib(n-2)
}

func TestFuelCountsAreExact(t *testing.T) {
	ctx := context.Background()
	r := meteredRuntime(t, ctx)
	cm := instrumentAndCompile(t, ctx, r, readFixture(t, "counts.wasm"))
	runCounts(t, ctx, r, cm, []fuelCount{
		{"straight-line code costs one per instruction", "straight", nil, 4},
		{"a loop of one iteration", "loop", []uint64{1}, 7*1 + 1},
		{"a loop of ten iterations", "loop", []uint64{10}, 7*10 + 1},
		{"a loop of a million iterations", "loop", []uint64{1_000_000}, 7*1_000_000 + 1},
		{"a loop with a parameter, of one iteration", "loopparam", []uint64{1}, 5*1 + 2},
		{"a loop with a parameter, of a million iterations", "loopparam", []uint64{1_000_000}, 5*1_000_000 + 2},
		{"the then arm", "branch", []uint64{1}, 5},
		{"the else arm, the small then arm charged too", "branch", []uint64{0}, 8},
		{"a big then arm that runs", "bigthen", []uint64{1}, 14},
		{"a big then arm that does not run costs nothing", "bigthen", []uint64{0}, 4},
		{"a forward br_if taken, its small tail charged", "skip", []uint64{1}, 6},
		{"a forward br_if not taken", "skip", []uint64{0}, 6},
		{"calls charge the callee's entry", "calls", nil, 17},
		{"br_table to the first label", "brtable", []uint64{0}, 6},
		{"br_table to the second label", "brtable", []uint64{1}, 4},
		{"br_table to the default", "brtable", []uint64{2}, 4},
		{"br_table far past the labels", "brtable", []uint64{1 << 31}, 4},
		{"memory.grow by nothing", "grow", []uint64{0}, 3},
		{"memory.grow by two pages", "grow", []uint64{2}, 3 + 2*PageCost},
		{"a failing memory.grow costs only its instructions", "grow", []uint64{1000}, 3},
		{"memory.grow(-1) fails for its instructions alone", "grow", []uint64{0xffffffff}, 3},
		{"memory.fill of zero bytes", "fill", []uint64{0}, 5},
		{"memory.fill of 100 bytes", "fill", []uint64{100}, 5 + 100/BulkBytesPerFuel},
		{"memory.copy of 1000 bytes", "copy", []uint64{1000}, 5 + 1000/BulkBytesPerFuel},
		{"memory.init of 64 bytes", "init", []uint64{64}, 5 + 64/BulkBytesPerFuel},
		{"recursion", "fib", []uint64{10}, fib(10)},
	})
}

// fuelCount is a call of an exported function and the fuel it must use.
type fuelCount struct {
	name string
	fn   string
	args []uint64
	want uint64
}

// runCounts runs each count three times on fresh instances of cm: the
// same input uses the same fuel, every time.
func runCounts(t *testing.T, ctx context.Context, r wazero.Runtime, cm wazero.CompiledModule, counts []fuelCount) {
	for _, tt := range counts {
		t.Run(tt.name, func(t *testing.T) {
			for i := 0; i < 3; i++ {
				m, err := run(t, ctx, r, cm, 0, tt.fn, tt.args...)
				if err != nil {
					t.Fatalf("%s%v: %v", tt.fn, tt.args, err)
				}
				if got := m.Used(); got != tt.want {
					t.Fatalf("run %d: %s%v used %d fuel, want %d", i, tt.fn, tt.args, got, tt.want)
				}
			}
		})
	}
}

func TestTrapPaysForItsSegment(t *testing.T) {
	ctx := context.Background()
	r := meteredRuntime(t, ctx)
	cm := instrumentAndCompile(t, ctx, r, readFixture(t, "counts.wasm"))
	m, err := run(t, ctx, r, cm, 0, "trap")
	if err == nil {
		t.Fatal("trap returned no error")
	}
	if got := m.Used(); got != 3 {
		t.Fatalf("trap used %d fuel, want 3", got)
	}
}

// TestBudgetIsExact: a run is exhausted exactly when it charges more than
// its budget. Mid-run the guest is stopped at the next check (a loop header
// here); an overdraft after the last check is found by Finish.
func TestBudgetIsExact(t *testing.T) {
	ctx := context.Background()
	r := meteredRuntime(t, ctx)
	cm := instrumentAndCompile(t, ctx, r, readFixture(t, "counts.wasm"))
	const need = 7*10 + 1
	tests := []struct {
		name      string
		budget    uint64
		exhausted bool
		stopped   bool // closed with ExitCodeOutOfFuel rather than found by Finish
	}{
		{"the exact budget is enough", need, false, false},
		{"one more is enough", need + 1, false, false},
		{"one less overdraws after the last check", need - 1, true, false},
		{"the last loop check stops it", need - 2, true, true},
		{"half stops it mid-loop", need / 2, true, true},
		{"a budget of one stops it at the first loop check", 1, true, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, err := run(t, ctx, r, cm, tt.budget, "loop", 10)
			if m.Exhausted() != tt.exhausted {
				t.Fatalf("Exhausted() = %v, want %v (err %v)", m.Exhausted(), tt.exhausted, err)
			}
			var ee *sys.ExitError
			stopped := errors.As(err, &ee) && ee.ExitCode() == ExitCodeOutOfFuel
			if stopped != tt.stopped || (err != nil && !stopped) {
				t.Fatalf("err = %v, want stopped with ExitCodeOutOfFuel: %v", err, tt.stopped)
			}
			want := uint64(need)
			if tt.exhausted {
				want = tt.budget
			}
			if m.Used() != want {
				t.Fatalf("Used() = %d, want %d", m.Used(), want)
			}
		})
	}
}

func TestLargeDeficitIsCoveredAndCounted(t *testing.T) {
	// A grow of 99 pages charges 405,504 at once, after it grew: past a
	// budget set just below, the instance is out of fuel, and unlimited
	// metering covers it. counts.wasm's memory is (memory 1 100).
	ctx := context.Background()
	r := meteredRuntime(t, ctx)
	cm := instrumentAndCompile(t, ctx, r, readFixture(t, "counts.wasm"))
	want := uint64(3 + 99*PageCost)
	m, err := run(t, ctx, r, cm, 0, "grow", 99)
	if err != nil || m.Used() != want {
		t.Fatalf("unlimited: Used() = %d, err %v; want %d", m.Used(), err, want)
	}
	m, err = run(t, ctx, r, cm, want-1, "grow", 99)
	if err == nil || !m.Exhausted() {
		t.Fatalf("budget %d: err %v, Exhausted %v; want out of fuel", want-1, err, m.Exhausted())
	}
	m, err = run(t, ctx, r, cm, want, "grow", 99)
	if err != nil || m.Exhausted() {
		t.Fatalf("budget %d (exactly the cost): err %v, Exhausted %v; want success", want, err, m.Exhausted())
	}
}

// TestImportCallCost: a direct call of an imported function costs
// ImportCallCost on top of the call instruction.
func TestImportCallCost(t *testing.T) {
	ctx := context.Background()
	r := meteredRuntime(t, ctx)
	if _, err := r.InstantiateWithConfig(ctx, readFixture(t, "env.wasm"), wazero.NewModuleConfig().WithName("env")); err != nil {
		t.Fatal(err)
	}
	cm := instrumentAndCompile(t, ctx, r, readFixture(t, "imports.wasm"))
	// calls: i32.const call call end (4) + ImportCallCost (env.double,
	// not metered itself) + $triple: local.get i32.const i32.mul end (4)
	m, err := run(t, ctx, r, cm, 0, "calls")
	if want := uint64(8 + ImportCallCost); err != nil || m.Used() != want {
		t.Fatalf("calls: Used() = %d, err %v; want %d", m.Used(), err, want)
	}
}
