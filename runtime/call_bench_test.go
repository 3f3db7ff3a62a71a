package runtime

import (
	"context"
	"encoding/json"
	"testing"
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
