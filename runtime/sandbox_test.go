package runtime

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/subako/subako-runner/internal/wasmbin"
	"github.com/subako/subako-runner/internal/wasmbin/wasmtest"
	"github.com/subako/subako-runner/limits"
)

var i64Max = append([]byte{0x42}, wasmbin.AppendS64(nil, math.MaxInt64)...)

// TestUploadRejectsIndicesThatMeteringWouldDefine: the module as uploaded
// is validated, not only the metered one. Each of these is invalid as
// uploaded and becomes valid once the rewriter appends its counter local,
// its globals or its type; each must be rejected as invalid_module naming
// the index, and its one-less twin accepted.
func TestUploadRejectsIndicesThatMeteringWouldDefine(t *testing.T) {
	loop := func(body []byte) []byte {
		return append(append([]byte{0x03, 0x40}, body...), 0x0c, 0x00, 0x0b)
	}
	oneLocal := []byte{1, 1, byte(wasmbin.I64)}
	tests := []struct {
		name   string
		m      wasmtest.Module
		reject string // a word the message must hold; "" accepts
	}{
		{"the 77-byte module: local.set 1 of one local", wasmtest.Module{Locals: oneLocal, Bodies: [][]byte{loop(append(bytes.Clone(i64Max), 0x21, 0x01))}}, "local"},
		{"local.set 0 of one local", wasmtest.Module{Locals: oneLocal, Bodies: [][]byte{loop(append(bytes.Clone(i64Max), 0x21, 0x00))}}, ""},
		{"global.set 0 without globals", wasmtest.Module{Bodies: [][]byte{loop(append(bytes.Clone(i64Max), 0x24, 0x00))}}, "global"},
		{"block of type 1 with one type", wasmtest.Module{Bodies: [][]byte{{0x02, 0x01, 0x0b}}}, "type"},
	}
	rt := newRuntime(t, nil)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := rt.Validate(context.Background(), writeModule(t, tt.m.Bytes()))
			if tt.reject == "" {
				if err != nil {
					t.Fatalf("Validate: %v; want it accepted", err)
				}
				c.Close(context.Background())
				return
			}
			var rej *RejectedError
			if !errors.As(err, &rej) || len(rej.Rejections) != 1 || rej.Rejections[0].Code != CodeInvalidModule {
				t.Fatalf("Validate: %v; want one invalid_module rejection", err)
			}
			if msg := rej.Rejections[0].Message; !strings.Contains(msg, tt.reject) {
				t.Fatalf("rejection %q does not name the %s index", msg, tt.reject)
			}
			// Each line holds alone: the validation of the module as
			// uploaded, without the rewriter's own index check.
			if err := rejection(rt.compiler.Validate(context.Background(), tt.m.Bytes(), rt.limits.CompileTimeout)); !errors.As(err, &rej) {
				t.Fatalf("validateModule: %v; want a rejection", err)
			}
		})
	}
}

// TestInflatedFuelDoesNotOutliveTheDeadline: the red team's second
// attack. 150 memory.grow(0x10000) that fail used to be charged 2^28 fuel
// each, the meter's slices doubled up to 2^34 instructions, and the
// memory.fill loop after them ran 11.9 s against a 200 ms limit. Now a
// failed growth costs its instructions, slices stay at a few milliseconds
// and the fuel and tick checks end the instance at its deadline: the command ends
// as a timeout, not out of fuel, and the runtime never logs an instance
// that would not stop.
func TestInflatedFuelDoesNotOutliveTheDeadline(t *testing.T) {
	grows := wasmtest.Repeat([]byte{0x41, 0x80, 0x80, 0x04, 0x40, 0x00, 0x1a}, nil, 150) // i32.const 0x10000; memory.grow; drop
	fill := []byte{0x03, 0x40, 0x41, 0x00, 0x41, 0x07, 0x41, 0x80, 0x80, 0x04, 0xfc, 0x0b, 0x00, 0x0c, 0x00, 0x0b}
	path := writeModule(t, wasmtest.Module{Bodies: [][]byte{append(grows, fill...)}, MemoryPages: 1}.Bytes())
	lim := limits.Default()
	lim.CallTimeout = 200 * time.Millisecond
	rt := newRuntime(t, &lim)
	res, err := rt.RunCommand(context.Background(), path, Command{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Crash == nil || res.Crash.Reason != CrashTimeout {
		t.Fatalf("crash %+v; want %s", res.Crash, CrashTimeout)
	}
}

// TestFailedGrowReturnsMinusOneUnderDefaultFuel: memory.grow(-1) must
// just fail (the guest sees -1) with the default budget; it used to be
// charged 2^44 fuel and crash as out_of_fuel. The guest exits 0 only when
// it saw -1.
func TestFailedGrowReturnsMinusOneUnderDefaultFuel(t *testing.T) {
	// i32.const -1; memory.grow; i32.const -1; i32.ne; if; unreachable; end
	body := []byte{0x41, 0x7f, 0x40, 0x00, 0x41, 0x7f, 0x47, 0x04, 0x40, 0x00, 0x0b}
	rt := newRuntime(t, nil)
	res, err := rt.RunCommand(context.Background(), writeModule(t, wasmtest.Module{Bodies: [][]byte{body}}.Bytes()), Command{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Crash != nil || res.ExitCode != 0 {
		t.Fatalf("crash %+v, exit %d; want a clean exit after a grow that returned -1", res.Crash, res.ExitCode)
	}
}

// phaseRecorder keeps the phases of each upload.
type phaseRecorder struct {
	mu     sync.Mutex
	phases [][]string
}

func (p *phaseRecorder) Upload(_ context.Context, e UploadEvent) {
	p.mu.Lock()
	defer p.mu.Unlock()
	var names []string
	for _, ph := range e.Phases {
		names = append(names, ph.Name)
	}
	p.phases = append(p.phases, names)
}

func (p *phaseRecorder) Call(context.Context, CallEvent) {}

// TestValidationOnceAModuleIsKnown: a module this host metered before (at
// this metering version) was validated then; loading it again skips the
// validation (its cost is a sixth of a Go module's compile), and a module
// it never saw is validated.
func TestValidationOnceAModuleIsKnown(t *testing.T) {
	rec := &phaseRecorder{}
	rt, err := New(context.Background(), Config{Observer: rec})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close(context.Background())
	dir := "../testdata/packages/cgreet"
	for range 2 {
		pkg, err := rt.Load(context.Background(), dir)
		if err != nil {
			t.Fatal(err)
		}
		pkg.Close(context.Background())
	}
	want := [][]string{{"check", "validate", "meter", "compile", "discover"}, {"check", "meter", "compile", "discover"}}
	if fmt.Sprint(rec.phases) != fmt.Sprint(want) {
		t.Fatalf("phases %v; want %v", rec.phases, want)
	}
}
