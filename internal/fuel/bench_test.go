package fuel

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/subako/subako-runner/internal/devtools/testguest"
	"github.com/subako/subako-runner/internal/wasmbin/wasmtest"
	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"
)

// cpuGuests are the CPU-bound guests of the benchmarks.
func cpuGuests(tb testing.TB) []struct {
	name string
	wasm []byte
} {
	goWasm, err := os.ReadFile(testguest.Go(tb, filepath.Join(fixtures, "go", "cpu")))
	if err != nil {
		tb.Fatal(err)
	}
	return []struct {
		name string
		wasm []byte
	}{
		{"go", goWasm},
		{"c", readFixture(tb, "c/cpu.wasm")},
	}
}

// mode is one way of running a guest.
type mode struct {
	name   string
	fuel   bool // instrument and meter (unlimited budget)
	close  bool // wazero's WithCloseOnContextDone
	interp bool // wazero's interpreter: a reference that compiles fast
}

var modes = []mode{
	{name: "unmetered"},
	{name: "fuel", fuel: true},
	{name: "closeOnContextDone", close: true},
}

// prepared is a compiled guest ready to be instantiated and run to exit.
type prepared struct {
	r  wazero.Runtime
	cm wazero.CompiledModule
	md mode
}

func prepare(tb testing.TB, ctx context.Context, wasm []byte, md mode) *prepared {
	tb.Helper()
	cfg := wazero.NewRuntimeConfig()
	if md.interp {
		cfg = wazero.NewRuntimeConfigInterpreter()
	}
	cfg = cfg.WithCoreFeatures(api.CoreFeaturesV2).WithCloseOnContextDone(md.close)
	r := wazero.NewRuntimeWithConfig(ctx, cfg)
	tb.Cleanup(func() { r.Close(ctx) })
	wasi_snapshot_preview1.MustInstantiate(ctx, r)
	if md.fuel {
		if _, err := Instantiate(ctx, r); err != nil {
			tb.Fatal(err)
		}
		var err error
		if wasm, err = Instrument(wasm); err != nil {
			tb.Fatal(err)
		}
	}
	cm, err := r.CompileModule(ctx, wasm)
	if err != nil {
		tb.Fatal(err)
	}
	return &prepared{r: r, cm: cm, md: md}
}

// run instantiates the command (running _start) with stdin and returns its
// stdout, the meter (nil when unmetered) and the error.
func (p *prepared) run(ctx context.Context, stdin []byte) ([]byte, *Meter, error) {
	var stdout bytes.Buffer
	var m *Meter
	if p.md.fuel {
		m = NewMeter(0)
		ctx = WithMeter(ctx, m)
	}
	cfg := wazero.NewModuleConfig().WithName("").WithStdout(&stdout).WithStdin(bytes.NewReader(stdin))
	mod, err := p.r.InstantiateModule(ctx, p.cm, cfg)
	if mod != nil {
		if m != nil {
			m.Finish(mod)
		}
		mod.Close(ctx)
	}
	return stdout.Bytes(), m, err
}

// BenchmarkGuest runs each CPU-bound guest to completion in each mode,
// interleaved (one run of each mode per iteration, so load that comes and
// goes on the machine hits them alike), and reports each mode's time per
// run and its ratio to unmetered: fuel-x and close-x are the cost of fuel
// metering and of wazero's WithCloseOnContextDone. ns/op is the sum of
// the three.
func BenchmarkGuest(b *testing.B) {
	ctx := context.Background()
	for _, g := range cpuGuests(b) {
		b.Run(g.name, func(b *testing.B) {
			ps := make([]*prepared, len(modes))
			for i, md := range modes {
				ps[i] = prepare(b, ctx, g.wasm, md)
			}
			total := make([]time.Duration, len(modes))
			var fuel uint64
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				for j, p := range ps {
					start := time.Now()
					_, m, err := p.run(ctx, nil)
					total[j] += time.Since(start)
					if err != nil {
						b.Fatal(err)
					}
					if m != nil {
						fuel = m.Used()
					}
				}
			}
			for j, md := range modes {
				b.ReportMetric(float64(total[j].Nanoseconds())/float64(b.N), md.name+"-ns/op")
			}
			b.ReportMetric(float64(total[1])/float64(total[0]), "fuel-x")
			b.ReportMetric(float64(total[2])/float64(total[0]), "close-x")
			b.ReportMetric(float64(fuel), "fuel/op")
		})
	}
}

// BenchmarkInstrument measures the rewrite of the largest guest, the one
// built with the official MCP Go SDK.
func BenchmarkInstrument(b *testing.B) {
	wasm, err := os.ReadFile(testguest.Go(b, "../../testdata/guests/sdkgreet"))
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(wasm)))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := Instrument(wasm); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkCompileNestedLoops compiles 2,000 nested loops with wazero,
// bare and metered: the metered shape must not multiply the compile time
// (issue 17: 20,000 nested loops took 6.6 s bare and 105 s metered, each
// loop's check an if/else of its own; now they share one).
func BenchmarkCompileNestedLoops(b *testing.B) {
	ctx := context.Background()
	pieces := map[string][]byte{
		"nested":       {0x03, 0x40},
		"nested_br_if": {0x03, 0x40, 0x41, 0x00, 0x0d, 0x00},
	}
	for _, shape := range []string{"nested", "nested_br_if"} {
		wasm := wasmtest.Module{Bodies: [][]byte{wasmtest.Repeat(pieces[shape], []byte{0x0b}, 2000)}}.Bytes()
		for _, metered := range []bool{false, true} {
			name := shape + "/bare"
			in := wasm
			if metered {
				name = shape + "/metered"
				var err error
				if in, err = Instrument(wasm); err != nil {
					b.Fatal(err)
				}
			}
			b.Run(name, func(b *testing.B) {
				for b.Loop() {
					r := wazero.NewRuntime(ctx)
					if _, err := Instantiate(ctx, r); err != nil {
						b.Fatal(err)
					}
					if _, err := r.CompileModule(ctx, in); err != nil {
						b.Fatal(err)
					}
					r.Close(ctx)
				}
			})
		}
	}
}
