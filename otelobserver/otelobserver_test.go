package otelobserver_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/subako/subako-runner/hostmod/subakohttp"
	"github.com/subako/subako-runner/internal/devtools/testguest"
	"github.com/subako/subako-runner/limits"
	"github.com/subako/subako-runner/otelobserver"
	"github.com/subako/subako-runner/runtime"
)

const guests = "../testdata/guests/"

// compiledCache is wazero's compilation cache for every runtime of this
// binary: each test's runtime would otherwise compile its Go guest again
// (seconds each, many more under -race).
var compiledCache string

func TestMain(m *testing.M) {
	os.Exit(testguest.RunWithCompilationCache(m, &compiledCache))
}

type fixture struct {
	rt     *runtime.Runtime
	spans  *tracetest.InMemoryExporter
	tp     *sdktrace.TracerProvider
	reader *sdkmetric.ManualReader
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	f := &fixture{spans: tracetest.NewInMemoryExporter(), reader: sdkmetric.NewManualReader()}
	f.tp = sdktrace.NewTracerProvider(sdktrace.WithSyncer(f.spans))
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(f.reader))
	obs, err := otelobserver.New(otelobserver.Config{TracerProvider: f.tp, MeterProvider: mp})
	if err != nil {
		t.Fatal(err)
	}
	f.rt, err = runtime.New(context.Background(), runtime.Config{Observer: obs, CompilationCacheDir: compiledCache})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.rt.Close(context.Background()) })
	return f
}

func (f *fixture) load(t *testing.T, guest string) *runtime.Package {
	t.Helper()
	pkg, err := f.rt.Load(context.Background(), testguest.Package(t, testguest.Go(t, guests+guest), guest, nil))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pkg.Close(context.Background()) })
	return pkg
}

// tree returns the spans of one trace by name, and checks that every span
// but root has its parent in the trace.
func (f *fixture) tree(t *testing.T, traceID trace.TraceID) map[string][]tracetest.SpanStub {
	t.Helper()
	byID := map[trace.SpanID]tracetest.SpanStub{}
	for _, s := range f.spans.GetSpans() {
		if s.SpanContext.TraceID() == traceID {
			byID[s.SpanContext.SpanID()] = s
		}
	}
	out := map[string][]tracetest.SpanStub{}
	for _, s := range byID {
		out[s.Name] = append(out[s.Name], s)
	}
	return out
}

func attr(s tracetest.SpanStub, key string) (attribute.Value, bool) {
	for _, kv := range s.Attributes {
		if string(kv.Key) == key {
			return kv.Value, true
		}
	}
	return attribute.Value{}, false
}

func wantAttr(t *testing.T, s tracetest.SpanStub, key string, want any) {
	t.Helper()
	v, ok := attr(s, key)
	if !ok {
		t.Fatalf("span %s has no %s; attributes %v", s.Name, key, s.Attributes)
	}
	if got := v.AsInterface(); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("span %s: %s = %v, want %v", s.Name, key, got, want)
	}
}

// callUnder runs one call under a parent span of the test's own, as an
// embedder's request handler would, and returns the parent.
func (f *fixture) callUnder(t *testing.T, ctx context.Context, pkg *runtime.Package, req runtime.CallRequest) (trace.SpanContext, *runtime.Result, error) {
	t.Helper()
	ctx, parent := f.tp.Tracer("test").Start(ctx, "handler")
	res, err := pkg.Call(ctx, req)
	parent.End()
	if res != nil {
		t.Cleanup(func() { res.Release() })
	}
	return parent.SpanContext(), res, err
}

func TestCallSpanTree(t *testing.T) {
	f := newFixture(t)
	pkg := f.load(t, "misbehave")
	short := limits.Default()
	short.CallTimeout = 300 * time.Millisecond
	tests := []struct {
		name    string
		tool    string
		lim     *limits.Limits
		outcome runtime.Outcome
		crash   string
		status  codes.Code
	}{
		{"ok", "ok", nil, runtime.OutcomeOK, "", codes.Unset},
		{"crash", "exit_code", nil, runtime.OutcomeCrashed, "exit_code", codes.Error},
		{"timeout", "timeout", &short, runtime.OutcomeCrashed, "timeout", codes.Error},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			parent, res, err := f.callUnder(t, context.Background(), pkg, runtime.CallRequest{Tool: tt.tool, Limits: tt.lim})
			if err != nil {
				t.Fatal(err)
			}
			if res.Outcome != tt.outcome {
				t.Fatalf("outcome %s, want %s", res.Outcome, tt.outcome)
			}
			spans := f.tree(t, parent.TraceID())
			calls := spans["subako.call"]
			if len(calls) != 1 {
				t.Fatalf("%d call spans; want 1 (spans %v)", len(calls), spans)
			}
			c := calls[0]
			if c.Parent.SpanID() != parent.SpanID() {
				t.Fatalf("the call span's parent is %v, not the caller's span %v", c.Parent.SpanID(), parent.SpanID())
			}
			wantAttr(t, c, "subako.tool.name", tt.tool)
			wantAttr(t, c, "subako.call.outcome", string(tt.outcome))
			wantAttr(t, c, "subako.module.sha256", fmt.Sprintf("%x", pkg.Hash()))
			if tt.crash != "" {
				wantAttr(t, c, "subako.crash.reason", tt.crash)
			}
			if v, _ := attr(c, "subako.fuel.used"); v.AsInt64() <= 0 {
				t.Fatalf("fuel used %v; want it counted", v.AsInterface())
			}
			if c.Status.Code != tt.status {
				t.Fatalf("status %v, want %v", c.Status.Code, tt.status)
			}
			for _, child := range []string{"subako.call.instantiate", "subako.call.run"} {
				s := spans[child]
				if len(s) != 1 || s[0].Parent.SpanID() != c.SpanContext.SpanID() {
					t.Fatalf("%s: %d spans, want one under the call", child, len(s))
				}
				if s[0].EndTime.Before(s[0].StartTime) || s[0].StartTime.Before(c.StartTime) || s[0].EndTime.After(c.EndTime) {
					t.Fatalf("%s [%v, %v] is not within the call [%v, %v]", child, s[0].StartTime, s[0].EndTime, c.StartTime, c.EndTime)
				}
			}
		})
	}
}

func TestCancelledCallIsNotAnError(t *testing.T) {
	f := newFixture(t)
	pkg := f.load(t, "misbehave")
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(200*time.Millisecond, cancel)
	parent, _, err := f.callUnder(t, ctx, pkg, runtime.CallRequest{Tool: "timeout_sleep"})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err %v; want the cancellation", err)
	}
	c := f.tree(t, parent.TraceID())["subako.call"]
	if len(c) != 1 {
		t.Fatalf("%d call spans", len(c))
	}
	wantAttr(t, c[0], "subako.call.outcome", string(runtime.OutcomeCanceled))
	if c[0].Status.Code == codes.Error {
		t.Fatalf("a cancelled call is not the host's error: status %v", c[0].Status)
	}
}

func TestHTTPRequestSpans(t *testing.T) {
	// With the W3C propagator installed globally, as a backend installs it,
	// anything that injected the caller's context into the guest's request
	// would show in the server's headers.
	prev := otel.GetTextMapPropagator()
	otel.SetTextMapPropagator(propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{}))
	t.Cleanup(func() { otel.SetTextMapPropagator(prev) })
	var traceparent atomic.Value
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		traceparent.Store(r.Header.Get("traceparent") + r.Header.Get("tracestate") + r.Header.Get("baggage"))
		fmt.Fprint(w, "hello")
	}))
	defer srv.Close()
	port := srv.Listener.Addr().(*net.TCPAddr).Port
	policy, err := subakohttp.NewPolicy(subakohttp.PolicyConfig{
		Allow:        []string{fmt.Sprintf("api.test:%d", port)},
		Resolve:      map[string][]string{fmt.Sprintf("api.test:%d", port): {"127.0.0.1"}},
		AllowPrivate: []string{"127.0.0.1/32"},
	})
	if err != nil {
		t.Fatal(err)
	}
	f := newFixture(t)
	pkg := f.load(t, "httpprobe")
	args, _ := json.Marshal(map[string]any{"request": map[string]any{"url": fmt.Sprintf("http://api.test:%d/secret/path?token=abc", port)}})
	parent, res, err := f.callUnder(t, context.Background(), pkg, runtime.CallRequest{Tool: "http", Arguments: args, Network: policy})
	if err != nil || res.Outcome != runtime.OutcomeOK {
		t.Fatalf("call: %v %+v", err, res)
	}
	if tp, _ := traceparent.Load().(string); tp != "" {
		t.Fatalf("the guest's request carried the platform's trace context: %q", tp)
	}
	spans := f.tree(t, parent.TraceID())
	gets := spans["GET"]
	if len(gets) != 1 {
		t.Fatalf("%d GET spans; want 1 (%v)", len(gets), spans)
	}
	g := gets[0]
	if g.SpanKind != trace.SpanKindClient || g.Parent.SpanID() != spans["subako.call.run"][0].SpanContext.SpanID() {
		t.Fatalf("the request span is kind %v under %v; want a client span under the guest's run", g.SpanKind, g.Parent.SpanID())
	}
	wantAttr(t, g, "http.request.method", "GET")
	wantAttr(t, g, "url.scheme", "http")
	wantAttr(t, g, "server.address", "api.test")
	wantAttr(t, g, "server.port", port)
	wantAttr(t, g, "http.response.status_code", 200)
	wantAttr(t, g, "http.response.body.size", 5)
	for _, kv := range g.Attributes {
		if s := kv.Value.Emit(); strings.Contains(s, "secret") || strings.Contains(s, "token") {
			t.Fatalf("the request span holds the URL's path or query: %s=%s", kv.Key, s)
		}
	}
	wantAttr(t, spans["subako.call"][0], "subako.http.requests", 1)
}

func TestMetrics(t *testing.T) {
	f := newFixture(t)
	pkg := f.load(t, "misbehave")
	for _, tool := range []string{"ok", "ok", "exit_code"} {
		res, err := pkg.Call(context.Background(), runtime.CallRequest{Tool: tool})
		if err != nil {
			t.Fatal(err)
		}
		res.Release()
	}
	var rm metricdata.ResourceMetrics
	if err := f.reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	found := map[string]metricdata.Metrics{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			found[m.Name] = m
		}
	}
	calls, ok := found["subako.calls"].Data.(metricdata.Sum[int64])
	if !ok {
		t.Fatalf("no subako.calls counter: %v", found)
	}
	byOutcome := map[string]int64{}
	for _, dp := range calls.DataPoints {
		o, _ := dp.Attributes.Value("subako.call.outcome")
		byOutcome[o.AsString()] += dp.Value
	}
	if byOutcome["ok"] != 2 || byOutcome["crashed"] != 1 {
		t.Fatalf("calls by outcome %v; want 2 ok, 1 crashed", byOutcome)
	}
	for _, name := range []string{"subako.call.duration", "subako.call.fuel", "subako.call.memory", "subako.call.queue_wait"} {
		if _, ok := found[name]; !ok {
			t.Fatalf("no %s metric", name)
		}
	}
	uploads, ok := found["subako.uploads"].Data.(metricdata.Sum[int64])
	if !ok || len(uploads.DataPoints) != 1 || uploads.DataPoints[0].Value != 1 {
		t.Fatalf("uploads %+v; want one ok", found["subako.uploads"])
	}
	running, ok := found["subako.instances.running"].Data.(metricdata.Sum[int64])
	if !ok || len(running.DataPoints) != 1 || running.DataPoints[0].Value != 0 {
		t.Fatalf("instances running %+v; want 0 once every call has ended", found["subako.instances.running"])
	}
}

func TestUploadSpan(t *testing.T) {
	f := newFixture(t)
	ctx, parent := f.tp.Tracer("test").Start(context.Background(), "upload handler")
	pkg, err := f.rt.Load(ctx, testguest.Package(t, testguest.Go(t, guests+"greet"), "greet", nil))
	parent.End()
	if err != nil {
		t.Fatal(err)
	}
	defer pkg.Close(context.Background())
	spans := f.tree(t, parent.SpanContext().TraceID())
	up := spans["subako.upload"]
	if len(up) != 1 || up[0].Parent.SpanID() != parent.SpanContext().SpanID() {
		t.Fatalf("upload spans %v", spans)
	}
	wantAttr(t, up[0], "subako.upload.result", "ok")
	for _, phase := range []string{"subako.upload.check", "subako.upload.compile", "subako.upload.discover"} {
		if s := spans[phase]; len(s) != 1 || s[0].Parent.SpanID() != up[0].SpanContext.SpanID() {
			t.Fatalf("%s: %d spans; want one under the upload (spans %v)", phase, len(s), spans)
		}
	}
}
