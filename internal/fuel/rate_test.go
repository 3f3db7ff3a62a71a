package fuel

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/subako/subako-runner/internal/devtools/testguest"
	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"
	"github.com/tetratelabs/wazero/sys"
)

// maxRate bounds the fuel a guest can be charged per second of wall time:
// at one fuel per instruction no machine executes this many. A guest
// charged more is charged for fuel it never spent.
const maxRate = 1e11

// goGuestRuntime returns a runtime with WASI and the refuel import, and the
// Go guest at go/<name> instrumented and compiled in it.
func goGuestRuntime(t *testing.T, ctx context.Context, name string) (wazero.Runtime, wazero.CompiledModule) {
	t.Helper()
	wasm, err := os.ReadFile(testguest.Go(t, filepath.Join(fixtures, "go", name)))
	if err != nil {
		t.Fatal(err)
	}
	r := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfig().WithCoreFeatures(api.CoreFeaturesV2))
	t.Cleanup(func() { r.Close(ctx) })
	wasi_snapshot_preview1.MustInstantiate(ctx, r)
	if _, err := Instantiate(ctx, r); err != nil {
		t.Fatal(err)
	}
	return r, instrumentAndCompile(t, ctx, r, wasm)
}

// runSpin runs the Go guest go/spin (one line of output, then an endless
// loop) as a command metered by m, and returns its error, stdout and how
// long it ran.
func runSpin(t *testing.T, ctx context.Context, r wazero.Runtime, cm wazero.CompiledModule, m *Meter) (error, string, time.Duration) {
	return runGo(t, ctx, r, cm, m, wazero.NewModuleConfig())
}

// runGo runs a Go guest as a command metered by m.
func runGo(t *testing.T, ctx context.Context, r wazero.Runtime, cm wazero.CompiledModule, m *Meter, cfg wazero.ModuleConfig) (error, string, time.Duration) {
	t.Helper()
	var stdout bytes.Buffer
	ctx = WithMeter(ctx, m)
	start := time.Now()
	mod, err := r.InstantiateModule(ctx, cm, cfg.WithName("").WithStdout(&stdout))
	took := time.Since(start)
	if mod != nil {
		m.Finish(mod)
		mod.Close(context.Background())
	}
	return err, stdout.String(), took
}

// TestRunawayGoGuestIsChargedWhatItRuns: a Go guest spinning in an empty
// loop is charged at most what a machine can execute, and a budget runs
// out exactly. The attack: a runaway Go guest was charged about fifty
// times its instructions, so an unlimited call used 1e11 fuel in 0.2 s
// and a budget meant for seconds of work ran out in milliseconds.
func TestRunawayGoGuestIsChargedWhatItRuns(t *testing.T) {
	if testing.Short() {
		t.Skip("runs real Go guests for seconds; the full pass runs it")
	}
	ctx := context.Background()
	r, cm := goGuestRuntime(t, ctx, "spin")

	t.Run("rate", func(t *testing.T) {
		dctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
		defer cancel()
		m := NewMeter(0)
		err, out, took := runSpin(t, dctx, r, cm, m)
		if code, ok := exitCode(err); !ok || code != sys.ExitCodeDeadlineExceeded {
			t.Fatalf("err = %v, want exit code ExitCodeDeadlineExceeded", err)
		}
		if out != "spinning 1000\n" {
			t.Fatalf("stdout %q, want the guest's line", out)
		}
		rate := float64(m.Used()) / took.Seconds()
		t.Logf("%d fuel in %v: %.3g per second", m.Used(), took, rate)
		if m.Used() == 0 || rate > maxRate {
			t.Fatalf("charged %.3g fuel per second of a busy loop, want some and at most %.3g", rate, float64(maxRate))
		}
	})
	t.Run("budget", func(t *testing.T) {
		const budget = 50_000_000
		m := NewMeter(budget)
		err, _, took := runSpin(t, ctx, r, cm, m)
		if code, ok := exitCode(err); !ok || code != ExitCodeOutOfFuel || !m.Exhausted() {
			t.Fatalf("err = %v, Exhausted %v: want ExitCodeOutOfFuel", err, m.Exhausted())
		}
		if m.Used() != budget {
			t.Fatalf("Used() = %d, want the budget", m.Used())
		}
		t.Logf("a budget of %d ran out after %v", budget, took)
	})
}

// TestGoGuestFuelDoesNotDependOnSlicing: a real Go guest (deterministic
// under wazero's default clocks and random source) is charged the same
// whether it runs unlimited, in slices that adapt to time, or under a
// budget, whose grants are cut to what is left; and a budget runs out at
// exactly its size, mid-run or at the tail. A grant lost or counted twice
// anywhere (a stale cached counter written back, say) would show as a
// difference.
func TestGoGuestFuelDoesNotDependOnSlicing(t *testing.T) {
	if testing.Short() {
		t.Skip("runs real Go guests for seconds; the full pass runs it")
	}
	ctx := context.Background()
	r, cm := goGuestRuntime(t, ctx, "cpu")
	cfg := wazero.NewModuleConfig().WithEnv("ROUNDS", "1")
	unlimited := NewMeter(0)
	err, digest, _ := runGo(t, ctx, r, cm, unlimited, cfg)
	if code, ok := exitCode(err); err != nil && (!ok || code != 0) {
		t.Fatalf("unlimited run: %v", err)
	}
	need := unlimited.Used()
	if need == 0 || digest == "" {
		t.Fatalf("unlimited run: %d fuel, output %q", need, digest)
	}
	t.Logf("the cpu guest (ROUNDS=1) uses %d fuel", need)
	tests := []struct {
		name      string
		budget    uint64
		exhausted bool
		stopped   bool // closed with ExitCodeOutOfFuel mid-run
	}{
		{"the same again", 0, false, false},
		{"exactly what it needs", need, false, false},
		{"one less", need - 1, true, false}, // stopped or found by Finish
		{"half", need / 2, true, true},
		{"a hundredth", need / 100, true, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := NewMeter(tt.budget)
			err, out, _ := runGo(t, ctx, r, cm, m, cfg)
			if m.Exhausted() != tt.exhausted {
				t.Fatalf("Exhausted() = %v, want %v (err %v)", m.Exhausted(), tt.exhausted, err)
			}
			want := need
			if tt.exhausted {
				want = tt.budget
			} else if out != digest {
				t.Fatalf("output %q, want %q", out, digest)
			}
			if m.Used() != want {
				t.Fatalf("Used() = %d, want %d (err %v)", m.Used(), want, err)
			}
			if code, ok := exitCode(err); tt.stopped && (!ok || code != ExitCodeOutOfFuel) {
				t.Fatalf("err = %v, want ExitCodeOutOfFuel mid-run", err)
			}
		})
	}
}
