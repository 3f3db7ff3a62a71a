package compile

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/subako/subako-runner/internal/fuel"
	"github.com/subako/subako-runner/internal/modcheck"
	"github.com/subako/subako-runner/internal/wasmbin/wasmtest"
)

// TestMeterRefusesWhatOnlyTheRewriterTakes: the validation of the module
// as uploaded holds on its own, whatever the rewriter makes of it. The
// rewriter does not type-check, so it meters a module that adds on an
// empty stack; Meter must still refuse it, as not valid WebAssembly (not
// as a module that cannot be metered), and meter a valid one.
func TestMeterRefusesWhatOnlyTheRewriterTakes(t *testing.T) {
	ctx := context.Background()
	invalid := wasmtest.Module{Bodies: [][]byte{{0x6a, 0x1a}}}.Bytes() // i32.add on an empty stack; drop
	if _, err := fuel.Instrument(invalid); err != nil {
		t.Fatalf("the rewriter refuses the module (%v): the test needs one it takes", err)
	}
	c := New(Config{Phase: func(context.Context, string) func() { return func() {} }})
	_, err := c.Meter(ctx, invalid, time.Minute)
	var rej *Rejected
	if !errors.As(err, &rej) || rej.Code != modcheck.CodeInvalidModule || !strings.Contains(rej.Message, "not valid WebAssembly") {
		t.Fatalf("Meter of an invalid module the rewriter takes: %v; want invalid_module, not valid WebAssembly", err)
	}
	valid := wasmtest.Module{Bodies: [][]byte{{0x41, 0x01, 0x1a}}}.Bytes() // i32.const 1; drop
	if metered, err := c.Meter(ctx, valid, time.Minute); err != nil || len(metered) <= len(valid) {
		t.Fatalf("Meter of a valid module: %d bytes, %v; want it metered", len(metered), err)
	}
}
