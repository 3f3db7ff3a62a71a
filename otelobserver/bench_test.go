package otelobserver_test

import (
	"context"
	"testing"
	"time"

	metricnoop "go.opentelemetry.io/otel/metric/noop"
	tracenoop "go.opentelemetry.io/otel/trace/noop"

	"github.com/subako/subako-runner/otelobserver"
	"github.com/subako/subako-runner/runtime"
)

// BenchmarkCallEvent is the adapter's own cost per call on no-op
// providers: what an embedder pays before configuring an SDK.
func BenchmarkCallEvent(b *testing.B) {
	obs, err := otelobserver.New(otelobserver.Config{TracerProvider: tracenoop.NewTracerProvider(), MeterProvider: metricnoop.NewMeterProvider()})
	if err != nil {
		b.Fatal(err)
	}
	now := time.Now()
	e := runtime.CallEvent{Package: "p", Tool: "greet", Outcome: runtime.OutcomeOK, ModuleSHA256: "ab", Start: now, InstanceStart: now,
		Instantiate: time.Microsecond, Run: 10 * time.Microsecond, Stats: runtime.Stats{Duration: 20 * time.Microsecond, FuelUsed: 1000}}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		obs.InstanceStarted(ctx)
		obs.InstanceEnded(ctx)
		obs.Call(ctx, e)
	}
}
