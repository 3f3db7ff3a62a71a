package otelobserver_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/subako/subako-runner/internal/devtools/testguest"
	"github.com/subako/subako-runner/runtime"
)

// newStore uploads the misbehave guest under each key into a DirLoader
// store, as the backend's upload does.
func (f *fixture) newStore(t *testing.T, keys ...string) runtime.DirLoader {
	t.Helper()
	store := runtime.DirLoader{Artifacts: t.TempDir(), Packages: t.TempDir()}
	src := testguest.Package(t, testguest.Go(t, guests+"misbehave"), "misbehave", nil)
	for _, key := range keys {
		dir := filepath.Join(store.Packages, key)
		if err := os.CopyFS(dir, os.DirFS(src)); err != nil {
			t.Fatal(err)
		}
		pkg, err := f.rt.Load(context.Background(), dir)
		if err != nil {
			t.Fatal(err)
		}
		err = store.Save(key, pkg)
		pkg.Close(context.Background())
		if err != nil {
			t.Fatal(err)
		}
	}
	return store
}

// setCall calls tool "ok" of key through set under a span of the test's
// own, and returns the spans of that trace.
func (f *fixture) setCall(t *testing.T, set *runtime.PackageSet, key string) (map[string][]tracetest.SpanStub, error) {
	t.Helper()
	ctx, parent := f.tp.Tracer("test").Start(context.Background(), "handler")
	res, err := set.Call(ctx, key, runtime.CallRequest{Tool: "ok"})
	parent.End()
	if err == nil {
		res.Release()
	}
	return f.tree(t, parent.SpanContext().TraceID()), err
}

// children are the spans of a trace whose parent is s, by start.
func children(spans map[string][]tracetest.SpanStub, s tracetest.SpanStub) []tracetest.SpanStub {
	var out []tracetest.SpanStub
	for _, list := range spans {
		for _, c := range list {
			if c.Parent.SpanID() == s.SpanContext.SpanID() {
				out = append(out, c)
			}
		}
	}
	slices.SortFunc(out, func(a, b tracetest.SpanStub) int { return a.StartTime.Compare(b.StartTime) })
	return out
}

// SpanTree prints a span and its descendants, one line each: the shape of
// a trace as a backend's tracing UI shows it.
func spanTree(spans map[string][]tracetest.SpanStub, s tracetest.SpanStub, depth int, b *strings.Builder) {
	fmt.Fprintf(b, "%s%-*s %9.3f ms", strings.Repeat("  ", depth), 26-2*depth, s.Name, float64(s.EndTime.Sub(s.StartTime).Microseconds())/1000)
	for _, kv := range s.Attributes {
		if strings.HasPrefix(string(kv.Key), "subako.set.") || kv.Key == "subako.call.outcome" {
			fmt.Fprintf(b, " %s=%v", kv.Key, kv.Value.Emit())
		}
	}
	b.WriteByte('\n')
	for _, c := range children(spans, s) {
		spanTree(spans, c, depth+1, b)
	}
}

// TestPackageSetColdCallSpanTree: a call through a set on a package not
// open yet is one subako.call span from the set's Call to its result, and
// its children — the wait for the open, the queue, the instantiation, the
// run — follow each other and account for that span's duration: no
// stretch of a cold call is invisible in the trace.
func TestPackageSetColdCallSpanTree(t *testing.T) {
	f := newFixture(t)
	store := f.newStore(t, "a")
	set, err := runtime.NewPackageSet(f.rt, runtime.PackageSetConfig{Loader: store})
	if err != nil {
		t.Fatal(err)
	}
	defer set.Close(context.Background())

	spans, err := f.setCall(t, set, "a")
	if err != nil {
		t.Fatal(err)
	}
	calls := spans["subako.call"]
	if len(calls) != 1 {
		t.Fatalf("%d call spans; want 1", len(calls))
	}
	call := calls[0]
	wantAttr(t, call, "subako.set.hit", false)
	wantAttr(t, call, "subako.set.key", "a")
	kids := children(spans, call)
	var names []string
	var sum time.Duration
	for i, c := range kids {
		names = append(names, c.Name)
		sum += c.EndTime.Sub(c.StartTime)
		if c.StartTime.Before(call.StartTime) || c.EndTime.After(call.EndTime) {
			t.Fatalf("%s [%v, %v] is not within the call [%v, %v]", c.Name, c.StartTime, c.EndTime, call.StartTime, call.EndTime)
		}
		if i > 0 && c.StartTime.Before(kids[i-1].EndTime) {
			t.Fatalf("%s begins before %s ends: the children overlap, their sum means nothing", c.Name, kids[i-1].Name)
		}
	}
	if len(kids) < 3 || names[0] != "subako.set.open" || names[len(names)-2] != "subako.call.instantiate" || names[len(names)-1] != "subako.call.run" {
		t.Fatalf("children %v; want subako.set.open, [subako.call.queue,] subako.call.instantiate, subako.call.run", names)
	}
	open := kids[0]
	wantAttr(t, open, "subako.set.open.shared", false)
	if v, _ := attr(open, "subako.set.open.bytes"); v.AsInt64() != set.Stats().ResidentBytes {
		t.Fatalf("open brought in %v bytes; the set holds %d", v.AsInterface(), set.Stats().ResidentBytes)
	}
	if v, _ := attr(open, "subako.set.open.duration"); v.AsFloat64() <= 0 || v.AsFloat64() > open.EndTime.Sub(open.StartTime).Seconds() {
		t.Fatalf("open duration %v s; want within the wait for it (%v)", v.AsInterface(), open.EndTime.Sub(open.StartTime))
	}
	// The consistency of the recorded spans with the call's own span (the
	// same clock readings, no timing margin): what the children leave out
	// is the bookkeeping between them, a small share of a cold call.
	total := call.EndTime.Sub(call.StartTime)
	if sum > total || float64(sum) < 0.9*float64(total) {
		t.Fatalf("children sum to %v of the call's %v (%.1f%%); want 90–100%%", sum, total, 100*float64(sum)/float64(total))
	}
	var b strings.Builder
	spanTree(spans, call, 0, &b)
	t.Logf("a cold call through a package set (children %.1f%% of the call):\n%s", 100*float64(sum)/float64(total), b.String())

	// Warm: a hit, and no open span.
	spans, err = f.setCall(t, set, "a")
	if err != nil {
		t.Fatal(err)
	}
	wantAttr(t, spans["subako.call"][0], "subako.set.hit", true)
	if n := len(spans["subako.set.open"]); n != 0 {
		t.Fatalf("a hit has %d open spans", n)
	}
}

// TestPackageSetMetrics: hits, misses, opens, failures, evictions and
// the resident gauges count what the set's own Stats count.
func TestPackageSetMetrics(t *testing.T) {
	f := newFixture(t)
	store := f.newStore(t, "a", "b")
	set, err := runtime.NewPackageSet(f.rt, runtime.PackageSetConfig{Loader: store, MaxPackages: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer set.Close(context.Background())
	for _, key := range []string{"a", "a", "b", "missing"} { // miss, hit, miss (evicts a), failed open
		_, err := f.setCall(t, set, key)
		if (err != nil) != (key == "missing") {
			t.Fatalf("call %s: %v", key, err)
		}
	}
	if _, release, ok := set.Lookup("b"); ok { // a hit too
		release()
	}
	var rm metricdata.ResourceMetrics
	if err := f.reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	found := map[string]metricdata.Aggregation{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			found[m.Name] = m.Data
		}
	}
	st := set.Stats()
	for name, want := range map[string]int64{
		"subako.set.hits": st.Hits, "subako.set.misses": st.Misses, "subako.set.opens": st.Opens,
		"subako.set.open_failures": st.OpenFailures, "subako.set.evictions": st.Evictions,
	} {
		sum, ok := found[name].(metricdata.Sum[int64])
		if !ok || len(sum.DataPoints) != 1 {
			t.Fatalf("%s: %#v; want one counter", name, found[name])
		}
		if got := sum.DataPoints[0].Value; got != want {
			t.Fatalf("%s = %d; the set's stats say %d", name, got, want)
		}
	}
	if st.Hits != 2 || st.Misses != 3 || st.Opens != 2 || st.OpenFailures != 1 || st.Evictions != 1 {
		t.Fatalf("stats %+v; the calls made 2 hits, 3 misses, 2 opens, 1 failure, 1 eviction", st)
	}
	for name, want := range map[string]int64{"subako.set.resident": int64(st.Resident), "subako.set.resident_bytes": st.ResidentBytes} {
		g, ok := found[name].(metricdata.Gauge[int64])
		if !ok || len(g.DataPoints) != 1 || g.DataPoints[0].Value != want {
			t.Fatalf("%s: %#v; want %d", name, found[name], want)
		}
	}
	for _, name := range []string{"subako.set.open.duration", "subako.set.wait"} {
		h, ok := found[name].(metricdata.Histogram[float64])
		if !ok || len(h.DataPoints) == 0 {
			t.Fatalf("no %s histogram: %#v", name, found[name])
		}
	}
	size, ok := found["subako.set.open.size"].(metricdata.Histogram[int64])
	if !ok || len(size.DataPoints) != 1 || size.DataPoints[0].Count != 2 {
		t.Fatalf("open sizes %#v; want the 2 opens", found["subako.set.open.size"])
	}
}
