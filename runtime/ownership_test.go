package runtime

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/subako/subako-runner/internal/devtools/testguest"
)

// TestCheckedAndItsPackagesShareTheCode: a Checked and the Packages
// Discover made from it each hold a reference to the compiled code; the
// code stays usable until the last of them is closed, in any order, and a
// second Close of one holder does not release another's reference.
func TestCheckedAndItsPackagesShareTheCode(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rt := newRuntime(t, nil)
	dir := makePackage(t, testguest.Go(t, guests+"greet"), nil)
	checked, err := rt.Validate(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	first, err := rt.Discover(ctx, checked, dir)
	if err != nil {
		t.Fatal(err)
	}
	second, err := rt.Discover(ctx, checked, dir)
	if err != nil {
		t.Fatal(err)
	}
	greet := func(p *Package, who string) {
		t.Helper()
		res, err := p.Call(ctx, CallRequest{Tool: "greet", Arguments: json.RawMessage(`{"name":"Ada"}`)})
		if err != nil || res.Outcome != OutcomeOK {
			t.Fatalf("%s: err %v, result %+v", who, err, res)
		}
		res.Release()
	}
	for range 2 { // the second Close of each holder is a no-op
		if err := checked.Close(ctx); err != nil {
			t.Fatal(err)
		}
	}
	greet(first, "after the Checked was closed")
	for range 2 {
		if err := first.Close(ctx); err != nil {
			t.Fatal(err)
		}
	}
	greet(second, "after the Checked and the other Package were closed")
	if err := second.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if n := checked.code.refs; n != 0 {
		t.Fatalf("%d references left after every holder closed", n)
	}
}
