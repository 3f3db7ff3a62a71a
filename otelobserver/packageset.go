package otelobserver

import (
	"context"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/subako/subako-runner/runtime"
)

// Attribute keys of a PackageSet's spans and metrics.
const (
	keySetKey       = attribute.Key("subako.set.key")
	keySetHit       = attribute.Key("subako.set.hit")
	keyOpenDuration = attribute.Key("subako.set.open.duration")
	keyOpenBytes    = attribute.Key("subako.set.open.bytes")
	keyOpenShared   = attribute.Key("subako.set.open.shared")
	keyOpenResult   = attribute.Key("subako.set.open.result")
)

// bytesBuckets span a small C package's estimate (half a MiB) to the
// budget of a large node.
var bytesBuckets = []float64{1 << 19, 1 << 20, 1 << 22, 1 << 24, 1 << 26, 1 << 27, 1 << 28, 1 << 30, 1 << 32}

// setInstruments are the metrics of a runtime.PackageSet.
type setInstruments struct {
	hits, misses, opens, failures, evictions metric.Int64Counter
	openDuration, wait                       metric.Float64Histogram
	openBytes                                metric.Int64Histogram
	resident, residentBytes                  metric.Int64Gauge
	hitOpt, missOpt                          metric.MeasurementOption
}

func newSetInstruments(m metric.Meter) (setInstruments, error) {
	var s setInstruments
	var err error
	counter := func(dst *metric.Int64Counter, name, unit, desc string) {
		if err == nil {
			*dst, err = m.Int64Counter(name, metric.WithUnit(unit), metric.WithDescription(desc))
		}
	}
	counter(&s.hits, "subako.set.hits", "{acquire}", "Calls (acquires) of a package set that found their package open.")
	counter(&s.misses, "subako.set.misses", "{acquire}", "Calls (acquires) of a package set that had to open their package or wait for its open.")
	counter(&s.opens, "subako.set.opens", "{open}", "Packages a package set opened.")
	counter(&s.failures, "subako.set.open_failures", "{open}", "Opens of a package set that failed (loader or Open).")
	counter(&s.evictions, "subako.set.evictions", "{package}", "Packages a package set closed to stay within its budget.")
	if err != nil {
		return s, err
	}
	if s.openDuration, err = m.Float64Histogram("subako.set.open.duration", metric.WithUnit("s"),
		metric.WithDescription("Duration of a package set's open (loader and Open), failed or not."),
		metric.WithExplicitBucketBoundaries(durationBuckets...)); err != nil {
		return s, err
	}
	if s.wait, err = m.Float64Histogram("subako.set.wait", metric.WithUnit("s"),
		metric.WithDescription("Time a call through a package set waited for its package, by hit."),
		metric.WithExplicitBucketBoundaries(durationBuckets...)); err != nil {
		return s, err
	}
	if s.openBytes, err = m.Int64Histogram("subako.set.open.size", metric.WithUnit("By"),
		metric.WithDescription("Estimated resident bytes an open brought in (Package.ResidentBytes)."),
		metric.WithExplicitBucketBoundaries(bytesBuckets...)); err != nil {
		return s, err
	}
	if s.resident, err = m.Int64Gauge("subako.set.resident", metric.WithUnit("{package}"),
		metric.WithDescription("Packages a package set holds open.")); err != nil {
		return s, err
	}
	if s.residentBytes, err = m.Int64Gauge("subako.set.resident_bytes", metric.WithUnit("By"),
		metric.WithDescription("Estimated resident bytes of the packages a package set holds open.")); err != nil {
		return s, err
	}
	s.hitOpt = metric.WithAttributeSet(attribute.NewSet(keySetHit.Bool(true)))
	s.missOpt = metric.WithAttributeSet(attribute.NewSet(keySetHit.Bool(false)))
	return s, nil
}

// PackageSet reports a set's open, failed open or eviction
// (runtime.PackageSetObserver): the counters, the open's duration and
// size, and the resident gauges.
func (o *Observer) PackageSet(ctx context.Context, e runtime.PackageSetEvent) {
	s := &o.set
	switch e.Kind {
	case runtime.PackageSetOpened:
		s.opens.Add(ctx, 1)
		s.openDuration.Record(ctx, e.Duration.Seconds(), metric.WithAttributes(keyOpenResult.String("ok")))
		s.openBytes.Record(ctx, e.Bytes)
	case runtime.PackageSetOpenFailed:
		s.failures.Add(ctx, 1)
		s.openDuration.Record(ctx, e.Duration.Seconds(), metric.WithAttributes(keyOpenResult.String("failed")))
	case runtime.PackageSetEvicted:
		s.evictions.Add(ctx, 1)
	}
	s.resident.Record(ctx, int64(e.Resident))
	s.residentBytes.Record(ctx, e.ResidentBytes)
}

// PackageSetAcquired counts a set's hit or miss and the caller's wait
// (runtime.PackageSetAcquireObserver).
func (o *Observer) PackageSetAcquired(ctx context.Context, a runtime.PackageSetAcquire) {
	s := &o.set
	if a.Hit {
		s.hits.Add(ctx, 1)
		s.wait.Record(ctx, a.Wait.Seconds(), s.hitOpt)
		return
	}
	s.misses.Add(ctx, 1)
	s.wait.Record(ctx, a.Wait.Seconds(), s.missOpt)
}

// acquireSpan adds to the span of a call made through PackageSet.Call its
// key and hit, and on a miss a child span "subako.set.open" for the wait:
// from the set's Call to the package in hand, with the open's own
// duration, the bytes it brought in, and whether another caller started
// it.
func (o *Observer) acquireSpan(ctx context.Context, call trace.Span, a runtime.PackageSetAcquire) {
	call.SetAttributes(keySetKey.String(a.Key), keySetHit.Bool(a.Hit))
	if a.Hit {
		return
	}
	attrs := []attribute.KeyValue{keySetKey.String(a.Key), keySetHit.Bool(false)}
	if a.Opened {
		attrs = append(attrs, keyOpenDuration.Float64(a.OpenDuration.Seconds()), keyOpenBytes.Int64(a.OpenBytes),
			keyOpenShared.Bool(!a.Opener))
	}
	_, span := o.tracer.Start(ctx, "subako.set.open", trace.WithTimestamp(a.Start), trace.WithAttributes(attrs...))
	span.End(trace.WithTimestamp(a.Start.Add(a.Wait)))
}
