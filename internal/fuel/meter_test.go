package fuel

import (
	"context"
	"errors"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/sys"

	"github.com/subako/subako-runner/internal/abi"
)

// spin starts the runaway export of counts.wasm on a fresh instance and
// returns its error and how long it ran.
func spin(t *testing.T, ctx context.Context, r wazero.Runtime, cm wazero.CompiledModule, m *Meter) (error, time.Duration) {
	t.Helper()
	if m != nil {
		ctx = WithMeter(ctx, m)
	}
	mod, err := r.InstantiateModule(ctx, cm, wazero.NewModuleConfig().WithName(""))
	if err != nil {
		t.Fatal(err)
	}
	defer mod.Close(context.Background())
	start := time.Now()
	_, err = mod.ExportedFunction("spin").Call(ctx)
	if m != nil {
		m.Finish(mod)
	}
	return err, time.Since(start)
}

func exitCode(err error) (uint32, bool) {
	var ee *sys.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode(), true
	}
	return 0, false
}

// TestRunawayGuestEnds: an endless loop ends at its deadline, at its
// cancellation, or when its budget runs out, with the matching exit code.
// The bounds are generous (a loaded CI machine); the benchmarks measure.
func TestRunawayGuestEnds(t *testing.T) {
	ctx := context.Background()
	r := meteredRuntime(t, ctx)
	cm := instrumentAndCompile(t, ctx, r, readFixture(t, "counts.wasm"))

	t.Run("deadline", func(t *testing.T) {
		dctx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
		defer cancel()
		m := NewMeter(0)
		err, took := spin(t, dctx, r, cm, m)
		if code, ok := exitCode(err); !ok || code != sys.ExitCodeDeadlineExceeded {
			t.Fatalf("err = %v, want exit code ExitCodeDeadlineExceeded", err)
		}
		if took > 5*time.Second {
			t.Fatalf("a 100 ms deadline took %v to stop the guest", took)
		}
		if m.Exhausted() || m.Used() == 0 {
			t.Fatalf("Exhausted %v, Used %d: want not exhausted, some fuel", m.Exhausted(), m.Used())
		}
		t.Logf("stopped after %v, %d fuel", took, m.Used())
	})
	t.Run("cancel", func(t *testing.T) {
		cctx, cancel := context.WithCancel(ctx)
		time.AfterFunc(50*time.Millisecond, cancel)
		err, _ := spin(t, cctx, r, cm, NewMeter(0))
		if code, ok := exitCode(err); !ok || code != sys.ExitCodeContextCanceled {
			t.Fatalf("err = %v, want exit code ExitCodeContextCanceled", err)
		}
	})
	t.Run("budget", func(t *testing.T) {
		m := NewMeter(50_000_000)
		err, _ := spin(t, ctx, r, cm, m)
		if code, ok := exitCode(err); !ok || code != ExitCodeOutOfFuel || !m.Exhausted() {
			t.Fatalf("err = %v, Exhausted %v: want ExitCodeOutOfFuel", err, m.Exhausted())
		}
		if m.Used() != 50_000_000 {
			t.Fatalf("Used() = %d, want the budget", m.Used())
		}
	})
	t.Run("no meter in the context ends the call", func(t *testing.T) {
		// Without a Meter the first refuel ends the call by the rule of
		// abi.ErrNoState: the guest never runs unmetered. (No deadline
		// here: before this rule the spin would never end.)
		err, _ := spin(t, ctx, r, cm, nil)
		if !errors.Is(err, abi.ErrNoState) || !strings.Contains(err.Error(), "fuel.WithMeter") {
			t.Fatalf("err = %v, want abi.ErrNoState naming fuel.WithMeter", err)
		}
	})
}

// TestRunawayGuestDoesNotStallOthers: while a guest spins, the garbage
// collector's stop-the-world completes and another call runs to the end.
// Uninstrumented, the spinning goroutine would hold every runtime.GC()
// until its deadline (it never reaches a point where Go can stop it).
func TestRunawayGuestDoesNotStallOthers(t *testing.T) {
	ctx := context.Background()
	r := meteredRuntime(t, ctx)
	cm := instrumentAndCompile(t, ctx, r, readFixture(t, "counts.wasm"))
	dctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		spin(t, dctx, r, cm, NewMeter(0))
	}()
	time.Sleep(20 * time.Millisecond) // let it start spinning
	var worst time.Duration
	for i := 0; i < 20; i++ {
		start := time.Now()
		runtime.GC()
		worst = max(worst, time.Since(start))
	}
	m, err := run(t, dctx, r, cm, 0, "fib", 20)
	if err != nil || m.Used() != fib(20) {
		t.Fatalf("a concurrent call: err %v, fuel %d, want %d", err, m.Used(), fib(20))
	}
	if dctx.Err() != nil {
		t.Fatal("the concurrent work outlasted the spinning guest's deadline")
	}
	if worst > time.Second {
		t.Fatalf("runtime.GC() took %v while a guest spun", worst)
	}
	t.Logf("slowest runtime.GC() while a guest spun: %v", worst)
	cancel()
	wg.Wait()
}
