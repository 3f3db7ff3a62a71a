package main

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"time"

	metricnoop "go.opentelemetry.io/otel/metric/noop"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	tracenoop "go.opentelemetry.io/otel/trace/noop"

	"github.com/subako/subako-runner/otelobserver"
	"github.com/subako/subako-runner/runtime"
)

// countingObserver is the plain Observer path an embedder writes by hand:
// the baseline the OpenTelemetry adapter is compared with.
type countingObserver struct{ calls, uploads int }

func (c *countingObserver) Upload(context.Context, runtime.UploadEvent) { c.uploads++ }
func (c *countingObserver) Call(context.Context, runtime.CallEvent)     { c.calls++ }

// benchOtel runs the C greet call with three observers, in interleaved
// rounds: the plain Observer, the OpenTelemetry adapter on no-op
// providers (what an embedder pays before it configures an SDK), and the
// adapter on the SDK with an in-memory span exporter and a manual metric
// reader; and, as a control, the plain Observer again on a runtime of its
// own. Each ratio is the median of the rounds' ratios of medians.
func benchOtel(ctx context.Context, o options, t *table) error {
	noop, err := otelobserver.New(otelobserver.Config{TracerProvider: tracenoop.NewTracerProvider(), MeterProvider: metricnoop.NewMeterProvider()})
	if err != nil {
		return err
	}
	spans := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(spans))
	defer tp.Shutdown(ctx)
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader()))
	defer mp.Shutdown(ctx)
	sdk, err := otelobserver.New(otelobserver.Config{TracerProvider: tp, MeterProvider: mp})
	if err != nil {
		return err
	}
	sides := []struct {
		name string
		obs  runtime.Observer
		pkg  *runtime.Package
	}{{"plain", &countingObserver{}, nil}, {"noop", noop, nil}, {"sdk", sdk, nil}, {"control", &countingObserver{}, nil}}
	for i := range sides {
		rt, err := runtime.New(ctx, runtime.Config{Observer: sides[i].obs})
		if err != nil {
			return err
		}
		defer rt.Close(ctx)
		if sides[i].pkg, err = rt.Load(ctx, filepath.Join("testdata", "packages", "cgreet")); err != nil {
			return err
		}
		defer sides[i].pkg.Close(ctx)
	}
	req := runtime.CallRequest{Tool: "greet", Arguments: json.RawMessage(`{"name":"Ada"}`)}
	const rounds, perRound = 21, 100
	medians := make([][]time.Duration, len(sides))
	var ratios [3][]float64
	for r := 0; r < rounds; r++ {
		for k := range sides {
			i := (k + r) % len(sides) // each side takes each position in turn
			times := make([]time.Duration, perRound)
			for n := range times {
				start := time.Now()
				res, err := sides[i].pkg.Call(ctx, req)
				times[n] = time.Since(start)
				if err != nil {
					return fmt.Errorf("%s: %w", sides[i].name, err)
				}
				res.Release()
			}
			slices.Sort(times)
			medians[i] = append(medians[i], times[perRound/2])
		}
		spans.Reset()
		for j := range ratios {
			ratios[j] = append(ratios[j], float64(medians[j+1][r])/float64(medians[0][r]))
		}
	}
	median := func(xs []float64) float64 { slices.Sort(xs); return xs[len(xs)/2] }
	mid := func(ds []time.Duration) time.Duration { ds = slices.Clone(ds); slices.Sort(ds); return ds[len(ds)/2] }
	noopRatio, sdkRatio, control := median(ratios[0]), median(ratios[1]), median(ratios[2])
	t.add(fmt.Sprintf("otel observer, no-op provider vs plain Observer (C call, %d×%d)", rounds, perRound),
		mid(medians[1]).String(), mid(medians[0]).String(), noopRatio, "≤ 1.05×", noopRatio <= 1.05)
	t.add("otel observer, SDK in-memory exporter vs plain Observer (C call)",
		mid(medians[2]).String(), mid(medians[0]).String(), sdkRatio, "", true)
	t.add("otel control: plain Observer on a second runtime vs the first (the noise of the rows above)",
		mid(medians[3]).String(), mid(medians[0]).String(), control, "", true)
	return nil
}
