package runtime

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/subako/subako-runner/internal/devtools/testguest"
)

// callGreet is one greet call through pkg, Release included; an error
// names what went wrong, a failed call or an outcome other than ok.
func callGreet(pkg *Package) error {
	res, err := pkg.Call(context.Background(), CallRequest{Tool: "greet", Arguments: json.RawMessage(`{"name":"Ada"}`)})
	if err != nil {
		return err
	}
	defer res.Release()
	if res.Outcome != OutcomeOK {
		return fmt.Errorf("outcome %s crash %+v", res.Outcome, res.Crash)
	}
	return nil
}

// BenchmarkCGreetCall is one tools/call of the C greet package through
// Package.Call, Release included: the call path whose cost over bare
// wazero `make bench` reports (profile it with -cpuprofile).
func BenchmarkCGreetCall(b *testing.B) {
	rt := newRuntime(b, nil)
	pkg := load(b, rt, "../testdata/packages/cgreet")
	b.ReportAllocs()
	for b.Loop() {
		if err := callGreet(pkg); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkCGreetCallParallel is BenchmarkCGreetCall from GOMAXPROCS
// callers at once. Run it with -cpu 1,2: on a machine that gives two
// cores, the second's ns/op is about half the first's (`make bench` holds
// the target, beside a control of two processes).
func BenchmarkCGreetCallParallel(b *testing.B) {
	rt := newRuntime(b, nil)
	pkg := load(b, rt, "../testdata/packages/cgreet")
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if err := callGreet(pkg); err != nil {
				b.Error(err)
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
	b.ReportAllocs()
	for b.Loop() {
		if err := callGreet(pkg); err != nil {
			b.Fatal(err)
		}
	}
}
