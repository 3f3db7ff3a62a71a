package otelobserver

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/subako/subako-runner/hostmod/subakohttp"
	"github.com/subako/subako-runner/runtime"
)

// ScopeName is the instrumentation scope of the spans and metrics.
const ScopeName = "github.com/subako/subako-runner/otelobserver"

// Config chooses the providers.
type Config struct {
	// TracerProvider makes the spans; nil means otel.GetTracerProvider().
	TracerProvider trace.TracerProvider
	// MeterProvider makes the metrics; nil means otel.GetMeterProvider().
	MeterProvider metric.MeterProvider
}

// Observer is a runtime.Observer that reports to OpenTelemetry. It is safe
// for concurrent use.
type Observer struct {
	tracer trace.Tracer

	calls        metric.Int64Counter
	callDuration metric.Float64Histogram
	queueWait    metric.Float64Histogram
	fuel         metric.Int64Histogram
	memory       metric.Int64Histogram
	uploads      metric.Int64Counter
	running      metric.Int64UpDownCounter

	set setInstruments

	plain    map[runtime.Outcome]*outcomeOptions // every outcome without a crash reason, made in New
	outcomes sync.Map                            // "outcome/crash" -> *outcomeOptions
}

var (
	_ runtime.Observer                  = (*Observer)(nil)
	_ runtime.InstanceObserver          = (*Observer)(nil)
	_ runtime.PackageSetObserver        = (*Observer)(nil)
	_ runtime.PackageSetAcquireObserver = (*Observer)(nil)
)

// Bucket boundaries: a call is a fraction of a millisecond (C) to a
// minute (the default limit); fuel from a few thousand instructions to the
// default budget of 10^11; memory from one 64 KiB page to the 4 GiB a
// 32-bit module can address.
var (
	durationBuckets = []float64{0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60}
	fuelBuckets     = []float64{1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11}
	memoryBuckets   = []float64{1 << 16, 1 << 18, 1 << 20, 1 << 22, 1 << 24, 1 << 26, 1 << 28, 1 << 30, 1 << 32}
)

// New returns an Observer on cfg's providers.
func New(cfg Config) (*Observer, error) {
	tp, mp := cfg.TracerProvider, cfg.MeterProvider
	if tp == nil {
		tp = otel.GetTracerProvider()
	}
	if mp == nil {
		mp = otel.GetMeterProvider()
	}
	o := &Observer{tracer: tp.Tracer(ScopeName), plain: map[runtime.Outcome]*outcomeOptions{}}
	for _, oc := range []runtime.Outcome{runtime.OutcomeOK, runtime.OutcomeToolError, runtime.OutcomeCrashed,
		runtime.OutcomeCanceled, runtime.OutcomeRefused, runtime.OutcomeError} {
		o.plain[oc] = newOutcomeOptions(oc, "")
	}
	m := mp.Meter(ScopeName)
	var err error
	if o.calls, err = m.Int64Counter("subako.calls", metric.WithUnit("{call}"),
		metric.WithDescription("Package calls, by outcome and crash reason.")); err != nil {
		return nil, fmt.Errorf("otelobserver: %w", err)
	}
	if o.callDuration, err = m.Float64Histogram("subako.call.duration", metric.WithUnit("s"),
		metric.WithDescription("Duration of a package call, from Call to its result, queue wait included."),
		metric.WithExplicitBucketBoundaries(durationBuckets...)); err != nil {
		return nil, fmt.Errorf("otelobserver: %w", err)
	}
	if o.queueWait, err = m.Float64Histogram("subako.call.queue_wait", metric.WithUnit("s"),
		metric.WithDescription("Time a call waited for its turn to run (Config.MaxInstances)."),
		metric.WithExplicitBucketBoundaries(durationBuckets...)); err != nil {
		return nil, fmt.Errorf("otelobserver: %w", err)
	}
	if o.fuel, err = m.Int64Histogram("subako.call.fuel", metric.WithUnit("{instruction}"),
		metric.WithDescription("Fuel a call's instance used."),
		metric.WithExplicitBucketBoundaries(fuelBuckets...)); err != nil {
		return nil, fmt.Errorf("otelobserver: %w", err)
	}
	if o.memory, err = m.Int64Histogram("subako.call.memory", metric.WithUnit("By"),
		metric.WithDescription("Peak linear memory of a call's instance."),
		metric.WithExplicitBucketBoundaries(memoryBuckets...)); err != nil {
		return nil, fmt.Errorf("otelobserver: %w", err)
	}
	if o.uploads, err = m.Int64Counter("subako.uploads", metric.WithUnit("{upload}"),
		metric.WithDescription("Package uploads (Load), by result.")); err != nil {
		return nil, fmt.Errorf("otelobserver: %w", err)
	}
	if o.running, err = m.Int64UpDownCounter("subako.instances.running", metric.WithUnit("{instance}"),
		metric.WithDescription("Module instances running now (calls, discoveries, probes, commands).")); err != nil {
		return nil, fmt.Errorf("otelobserver: %w", err)
	}
	if o.set, err = newSetInstruments(m); err != nil {
		return nil, fmt.Errorf("otelobserver: %w", err)
	}
	return o, nil
}

// Attribute keys.
const (
	keyPackage   = attribute.Key("subako.package.name")
	keySHA256    = attribute.Key("subako.module.sha256")
	keyTool      = attribute.Key("subako.tool.name")
	keyOutcome   = attribute.Key("subako.call.outcome")
	keyCrash     = attribute.Key("subako.crash.reason")
	keyCode      = attribute.Key("subako.refusal.code")
	keyFuel      = attribute.Key("subako.fuel.used")
	keyMemory    = attribute.Key("subako.memory.peak")
	keyWritten   = attribute.Key("subako.bytes_written")
	keyRequests  = attribute.Key("subako.http.requests")
	keyDropped   = attribute.Key("subako.http.requests_not_traced")
	keyQueued    = attribute.Key("subako.queue.length")
	keyResult    = attribute.Key("subako.upload.result")
	keyCodes     = attribute.Key("subako.upload.codes")
	keyTools     = attribute.Key("subako.upload.tools")
	keyRedirects = attribute.Key("subako.http.redirects")
)

// outcomeOptions are the measurement options of one outcome and crash
// reason, made once: building an attribute set per call cost more than
// the rest of the adapter on no-op providers.
type outcomeOptions struct {
	counted  []metric.AddOption    // outcome and crash reason
	duration []metric.RecordOption // outcome
}

func (o *Observer) optionsFor(outcome runtime.Outcome, crash string) *outcomeOptions {
	if crash == "" {
		if opts, ok := o.plain[outcome]; ok {
			return opts
		}
	}
	key := string(outcome) + "/" + crash
	if v, ok := o.outcomes.Load(key); ok {
		return v.(*outcomeOptions)
	}
	v, _ := o.outcomes.LoadOrStore(key, newOutcomeOptions(outcome, crash))
	return v.(*outcomeOptions)
}

func newOutcomeOptions(outcome runtime.Outcome, crash string) *outcomeOptions {
	attrs := []attribute.KeyValue{keyOutcome.String(string(outcome))}
	if crash != "" {
		attrs = append(attrs, keyCrash.String(crash))
	}
	return &outcomeOptions{
		counted:  []metric.AddOption{metric.WithAttributeSet(attribute.NewSet(attrs...))},
		duration: []metric.RecordOption{metric.WithAttributeSet(attribute.NewSet(attrs[0]))},
	}
}

// Call reports one call: its span tree and its metrics.
func (o *Observer) Call(ctx context.Context, e runtime.CallEvent) {
	end := time.Now()
	start := e.Start
	if start.IsZero() {
		start = end.Add(-e.Stats.QueueWait - e.Stats.Duration)
	}
	s := e.Stats
	opts := o.optionsFor(e.Outcome, e.Crash)
	o.calls.Add(ctx, 1, opts.counted...)
	o.callDuration.Record(ctx, end.Sub(start).Seconds(), opts.duration...)
	ran := !e.InstanceStart.IsZero()
	if ran {
		o.queueWait.Record(ctx, s.QueueWait.Seconds())
		o.fuel.Record(ctx, int64(min(s.FuelUsed, 1<<63-1)))
		o.memory.Record(ctx, s.MemoryBytes)
	}

	// Through PackageSet.Call, the span begins when the set's Call did:
	// the wait for the package (an open, on a miss) is part of the call.
	acq, viaSet := runtime.AcquireFromContext(ctx)
	spanStart := start
	if viaSet && acq.Start.Before(start) {
		spanStart = acq.Start
	}
	ctx, span := o.tracer.Start(ctx, "subako.call", trace.WithTimestamp(spanStart))
	if !span.IsRecording() { // no SDK, or not sampled: nothing more to build
		span.End()
		return
	}
	span.SetAttributes(keyPackage.String(e.Package), keyTool.String(e.Tool), keyOutcome.String(string(e.Outcome)))
	if viaSet {
		o.acquireSpan(ctx, span, acq)
	}
	if e.ModuleSHA256 != "" {
		span.SetAttributes(keySHA256.String(e.ModuleSHA256))
	}
	if e.Crash != "" {
		span.SetAttributes(keyCrash.String(e.Crash))
	}
	if e.Code != "" {
		span.SetAttributes(keyCode.String(e.Code))
	}
	if ran {
		span.SetAttributes(keyFuel.Int64(int64(min(s.FuelUsed, 1<<63-1))), keyMemory.Int64(s.MemoryBytes),
			keyWritten.Int64(s.BytesWritten), keyRequests.Int64(s.HTTPRequests))
	}
	switch e.Outcome {
	case runtime.OutcomeCrashed:
		span.SetStatus(codes.Error, e.Crash)
	case runtime.OutcomeError:
		span.SetStatus(codes.Error, "the host could not run the call")
	}
	if s.QueueWait > 0 {
		_, q := o.tracer.Start(ctx, "subako.call.queue", trace.WithTimestamp(start), trace.WithAttributes(keyQueued.Int(s.Queued)))
		q.End(trace.WithTimestamp(start.Add(s.QueueWait)))
	}
	if ran {
		is := e.InstanceStart
		_, inst := o.tracer.Start(ctx, "subako.call.instantiate", trace.WithTimestamp(is))
		inst.End(trace.WithTimestamp(is.Add(e.Instantiate)))
		rctx, run := o.tracer.Start(ctx, "subako.call.run", trace.WithTimestamp(is.Add(e.Instantiate)))
		for _, r := range e.HTTP {
			o.httpSpan(rctx, r)
		}
		if e.HTTPNotKept > 0 {
			run.SetAttributes(keyDropped.Int(e.HTTPNotKept))
		}
		if e.Outcome == runtime.OutcomeCrashed {
			run.SetStatus(codes.Error, e.Crash)
		}
		run.End(trace.WithTimestamp(is.Add(e.Instantiate + e.Run)))
	}
	span.End(trace.WithTimestamp(end))
}

// httpSpan reports one subako_http request as an HTTP client span, after
// OpenTelemetry's HTTP client conventions: named by its method, with the
// method, scheme, server address and port, status and body sizes, and
// error.type when it failed; never the path, query, a header or a body.
func (o *Observer) httpSpan(ctx context.Context, r subakohttp.RequestRecord) {
	name := r.Method
	if name == "" {
		name = "HTTP"
	}
	attrs := []attribute.KeyValue{
		attribute.String("http.request.method", r.Method),
		attribute.String("url.scheme", r.Scheme),
		attribute.String("server.address", r.Host),
		attribute.Int("server.port", r.Port),
		attribute.Int64("http.request.body.size", r.BytesSent),
		attribute.Int64("http.response.body.size", r.BytesReceived),
	}
	if r.Status != 0 {
		attrs = append(attrs, attribute.Int("http.response.status_code", r.Status))
	}
	if r.Redirects > 0 {
		attrs = append(attrs, keyRedirects.Int(r.Redirects))
	}
	_, span := o.tracer.Start(ctx, name, trace.WithSpanKind(trace.SpanKindClient), trace.WithTimestamp(r.Start), trace.WithAttributes(attrs...))
	switch {
	case r.ErrorKind != "":
		span.SetAttributes(attribute.String("error.type", string(r.ErrorKind)))
		span.SetStatus(codes.Error, string(r.ErrorKind))
	case r.Status >= 400:
		span.SetAttributes(attribute.String("error.type", strconv.Itoa(r.Status)))
		span.SetStatus(codes.Error, "")
	}
	span.End(trace.WithTimestamp(r.Start.Add(r.Duration)))
}

// Upload reports one Load: a span with a child span per phase, and the
// uploads counter.
func (o *Observer) Upload(ctx context.Context, e runtime.UploadEvent) {
	end := time.Now()
	result := keyResult.String(string(e.Outcome))
	o.uploads.Add(ctx, 1, metric.WithAttributes(result))
	start := end.Add(-e.Duration)
	attrs := []attribute.KeyValue{keyPackage.String(e.Package), result, keyTools.Int(e.Tools)}
	if e.ModuleSHA256 != "" {
		attrs = append(attrs, keySHA256.String(e.ModuleSHA256))
	}
	if len(e.Codes) > 0 {
		attrs = append(attrs, keyCodes.StringSlice(e.Codes))
	}
	ctx, span := o.tracer.Start(ctx, "subako.upload", trace.WithTimestamp(start), trace.WithAttributes(attrs...))
	for _, p := range e.Phases {
		_, ps := o.tracer.Start(ctx, "subako.upload."+p.Name, trace.WithTimestamp(p.Start))
		ps.End(trace.WithTimestamp(p.Start.Add(p.Duration)))
	}
	switch e.Outcome {
	case runtime.OutcomeCrashed, runtime.OutcomeError:
		span.SetStatus(codes.Error, string(e.Outcome))
	}
	span.End(trace.WithTimestamp(end))
}

// InstanceStarted and InstanceEnded keep the instances-running gauge
// (runtime.InstanceObserver).
func (o *Observer) InstanceStarted(ctx context.Context) { o.running.Add(ctx, 1) }

// InstanceEnded: see InstanceStarted.
func (o *Observer) InstanceEnded(ctx context.Context) { o.running.Add(ctx, -1) }
