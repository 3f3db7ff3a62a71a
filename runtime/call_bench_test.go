package runtime

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/subako/subako-runner/internal/testguest"
)

// BenchmarkCGreetCall is one tools/call of the C greet package through
// Package.Call, Release included: the call path whose cost over bare
// wazero `make bench` reports (profile it with -cpuprofile).
func BenchmarkCGreetCall(b *testing.B) {
	rt := newRuntime(b, nil)
	pkg := load(b, rt, "../testdata/packages/cgreet")
	args := json.RawMessage(`{"name":"Ada"}`)
	b.ReportAllocs()
	for b.Loop() {
		res, err := pkg.Call(context.Background(), CallRequest{Tool: "greet", Arguments: args})
		if err != nil {
			b.Fatal(err)
		}
		if res.Outcome != OutcomeOK {
			b.Fatalf("outcome %s crash %+v", res.Outcome, res.Crash)
		}
		res.Release()
	}
}

// BenchmarkCGreetCallParallel is BenchmarkCGreetCall from GOMAXPROCS
// callers at once. Run it with -cpu 1,2: on a machine that gives two
// cores, the second's ns/op is about half the first's (`make bench` holds
// the target, beside a control of two processes).
func BenchmarkCGreetCallParallel(b *testing.B) {
	rt := newRuntime(b, nil)
	pkg := load(b, rt, "../testdata/packages/cgreet")
	args := json.RawMessage(`{"name":"Ada"}`)
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			res, err := pkg.Call(context.Background(), CallRequest{Tool: "greet", Arguments: args})
			if err != nil {
				b.Error(err)
				return
			}
			outcome, crash := res.Outcome, res.Crash
			res.Release()
			if outcome != OutcomeOK {
				b.Errorf("outcome %s crash %+v", outcome, crash)
				return
			}
		}
	})
}

// BenchmarkGoGreetCall is one tools/call of the Go greet guest through
// Package.Call: a Go guest's runtime start, its data segments and its few
// MiB of memory, which a C call does not have.
func BenchmarkGoGreetCall(b *testing.B) {
	rt := newRuntime(b, nil)
	pkg := load(b, rt, makePackage(b, testguest.Go(b, guests+"greet"), nil))
	args := json.RawMessage(`{"name":"Ada"}`)
	b.ReportAllocs()
	for b.Loop() {
		res, err := pkg.Call(context.Background(), CallRequest{Tool: "greet", Arguments: args})
		if err != nil {
			b.Fatal(err)
		}
		outcome, crash := res.Outcome, res.Crash
		res.Release()
		if outcome != OutcomeOK {
			b.Fatalf("outcome %s crash %+v", outcome, crash)
		}
	}
}
