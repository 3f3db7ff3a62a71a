package fuel

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/sys"
)

// BenchmarkHostCallOvershoot measures how long a guest runs past its
// deadline when each of its host calls takes slowHostCall and does not
// look at the deadline itself (as a path lookup did): the time from the
// deadline to the guest's end, reported as overshoot-ms, for a loop of
// such calls made directly and through call_indirect. The tests assert
// the behaviour (no host call after the deadline is seen:
// TestNoHostCallAfterTheDeadline); this is the wall-clock number.
func BenchmarkHostCallOvershoot(b *testing.B) {
	const slowHostCall = time.Millisecond
	ctx := context.Background()
	r := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfig().WithCoreFeatures(allFeatures))
	defer r.Close(ctx)
	if _, err := Instantiate(ctx, r); err != nil {
		b.Fatal(err)
	}
	_, err := r.NewHostModuleBuilder("wasi_snapshot_preview1").NewFunctionBuilder().
		WithGoModuleFunction(api.GoModuleFunc(func(ctx context.Context, _ api.Module, stack []uint64) {
			time.Sleep(slowHostCall)
			stack[0] = 0
		}), nil, []api.ValueType{api.ValueTypeI32}).Export("sched_yield").Instantiate(ctx)
	if err != nil {
		b.Fatal(err)
	}
	out, err := Instrument(readFixture(b, "hostcalls.wasm"))
	if err != nil {
		b.Fatal(err)
	}
	cm, err := r.CompileModule(ctx, out)
	if err != nil {
		b.Fatal(err)
	}
	for _, fn := range []string{"direct", "indirect"} {
		b.Run(fn, func(b *testing.B) {
			var over time.Duration
			for b.Loop() {
				m := NewMeter(0)
				deadline := time.Now().Add(20 * time.Millisecond)
				cctx, cancel := context.WithDeadline(WithMeter(ctx, m), deadline)
				mod, err := r.InstantiateModule(cctx, cm, wazero.NewModuleConfig().WithName("").WithStartFunctions())
				if err != nil {
					cancel()
					b.Fatal(err)
				}
				_, err = mod.ExportedFunction(fn).Call(cctx, 1<<31)
				over += time.Since(deadline)
				cancel()
				var exit *sys.ExitError
				if !errors.As(err, &exit) || exit.ExitCode() != sys.ExitCodeDeadlineExceeded {
					b.Fatalf("%v; want the deadline's exit", err)
				}
			}
			b.ReportMetric(over.Seconds()*1000/float64(b.N), "overshoot-ms")
		})
	}
}
