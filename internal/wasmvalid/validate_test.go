package wasmvalid

import (
	"context"
	"encoding/binary"
	"runtime"
	"strings"
	"testing"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"

	"github.com/subako/subako-runner/internal/wasmbin"
	"github.com/subako/subako-runner/internal/wasmbin/wasmtest"
)

// noFunctions is a module of one memory and nothing else, with extra
// sections appended: one whose compilation wazero's engine runs whole,
// since no listener is ever asked for.
func noFunctions(extra ...[]byte) []byte {
	out := []byte{0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00}
	out = wasmbin.AppendSection(out, wasmbin.SectionMemory, []byte{1, 0, 1})
	for _, e := range extra {
		out = append(out, e...)
	}
	return out
}

// TestValidateRefuses: validation that stops before the engine compiles
// still refuses every kind of invalid module, whether what is wrong is in
// a body (the first, the last of several) or elsewhere (an element, a data
// segment, an export), and accepts valid ones, those with functions
// without compiling them. Were wazero to ask for function listeners before
// it validates, the invalid modules with functions would pass here. Both
// engines, so that the verdict does not hang on the validating runtime's.
func TestValidateRefuses(t *testing.T) {
	fine := []byte{0x41, 0x01, 0x1a} // i32.const 1; drop
	tests := []struct {
		name      string
		module    []byte
		reject    string // a word the error must hold; "" accepts
		functions bool   // the module defines functions
	}{
		{"valid", wasmtest.Module{Bodies: [][]byte{fine, fine}}.Bytes(), "", true},
		{"valid, no functions", noFunctions(), "", false},
		{"i32.add on an empty stack", wasmtest.Module{Bodies: [][]byte{{0x6a}}}.Bytes(), "function[0]", true},
		{"local.get of a local it does not have, in the last body", wasmtest.Module{Bodies: [][]byte{fine, fine, {0x20, 0x05, 0x1a}}}.Bytes(), "function[2]", true},
		{"global.get without globals", wasmtest.Module{Bodies: [][]byte{{0x23, 0x00, 0x1a}}}.Bytes(), "global", true},
		{"block of a type the module does not have", wasmtest.Module{Bodies: [][]byte{{0x02, 0x07, 0x0b}}}.Bytes(), "type", true},
		{"element segment for a table the module does not have", wasmtest.Module{Bodies: [][]byte{fine}, Elements: []byte{1, 0, 0x41, 0x00, 0x0b, 1, 0}}.Bytes(), "table", true},
		{"data segment offset of the wrong type", wasmtest.Module{Bodies: [][]byte{fine}, Data: []byte{1, 0, 0x42, 0x00, 0x0b, 1, 'x'}}.Bytes(), "offset", true},
		{"no functions, an export of function 3", noFunctions(wasmbin.AppendSection(nil, wasmbin.SectionExport, wasmbin.AppendExport([]byte{1}, wasmbin.Export{Name: "f", Kind: wasmbin.KindFunc, Index: 3}))), "function", false},
	}
	ctx := context.Background()
	for engine, cfg := range map[string]wazero.RuntimeConfig{"interpreter": wazero.NewRuntimeConfigInterpreter(), "compiler": wazero.NewRuntimeConfig()} {
		wz := wazero.NewRuntimeWithConfig(ctx, cfg.WithCoreFeatures(api.CoreFeaturesV2))
		defer wz.Close(ctx)
		for _, tt := range tests {
			t.Run(engine+"/"+tt.name, func(t *testing.T) {
				compiled, err := validate(ctx, wz, tt.module)
				if compiled != nil {
					defer compiled.Close(ctx)
				}
				if tt.reject != "" {
					if err == nil || !strings.Contains(err.Error(), tt.reject) {
						t.Fatalf("validate: %v; want an error naming the %s", err, tt.reject)
					}
					return
				}
				if err != nil {
					t.Fatalf("validate: %v; want it accepted", err)
				}
				if tt.functions != (compiled == nil) {
					t.Fatalf("compiled = %v for a module with functions %v: want it stopped before the engine exactly when there are functions", compiled, tt.functions)
				}
			})
			t.Run(engine+"/"+tt.name+"/Validate", func(t *testing.T) {
				err := Validate(ctx, cfg.WithCoreFeatures(api.CoreFeaturesV2), tt.module)
				if (err != nil) != (tt.reject != "") || (err != nil && !strings.Contains(err.Error(), tt.reject)) {
					t.Fatalf("Validate: %v; want an error naming %q (none if empty)", err, tt.reject)
				}
			})
		}
	}
}

// A panic other than the listener's own is not taken for a validation:
// it goes on up.
func TestValidatePassesOtherPanicsOn(t *testing.T) {
	defer func() {
		if r := recover(); r == nil {
			t.Fatal("a nil runtime's panic was swallowed")
		}
	}()
	_, _ = validate(context.Background(), nil, wasmtest.Module{}.Bytes())
}

// wideTypes is a module of n function types of 10 parameters each, the
// types numbered from first on (in base 4 over i32, i64, f32, f64): each
// different from those of any other first.
func wideTypes(first, n int) []byte {
	payload := binary.AppendUvarint(nil, uint64(n))
	kinds := []byte{0x7f, 0x7e, 0x7d, 0x7c}
	for i := range n {
		payload = append(payload, 0x60, 10)
		for x, j := first+i, 0; j < 10; x, j = x/4, j+1 {
			payload = append(payload, kinds[x%4])
		}
		payload = append(payload, 0) // no results
	}
	return wasmbin.AppendSection([]byte{0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00}, wasmbin.SectionType, payload)
}

// TestValidateKeepsNothing: validating modules whose function types no
// other module has keeps nothing of them once it returns. One wazero
// runtime validating them all keeps an ID for each type: the control
// shows the measure sees that.
func TestValidateKeepsNothing(t *testing.T) {
	ctx := context.Background()
	cfg := wazero.NewRuntimeConfigInterpreter().WithCoreFeatures(api.CoreFeaturesV2)
	const modules, types = 20, 10000
	heap := func() uint64 {
		runtime.GC()
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return m.HeapAlloc
	}
	grew := func(validate func(module []byte) error) int64 {
		before := heap()
		for i := range modules {
			if err := validate(wideTypes((i+1)*types, types)); err != nil {
				t.Fatal(err)
			}
		}
		return int64(heap()) - int64(before)
	}
	shared := wazero.NewRuntimeWithConfig(ctx, cfg)
	defer shared.Close(ctx)
	kept := grew(func(module []byte) error {
		compiled, err := shared.CompileModule(ctx, module)
		if err == nil {
			err = compiled.Close(ctx)
		}
		return err
	})
	// 20 modules of 10,000 new types: about 17 MB kept by one runtime.
	if kept < 8<<20 {
		t.Fatalf("the control kept %d bytes: the measure cannot see what a runtime keeps", kept)
	}
	if got := grew(func(module []byte) error { return Validate(ctx, cfg, module) }); got > 2<<20 {
		t.Fatalf("Validate kept %d bytes of %d modules' types (one runtime for all kept %d)", got, modules, kept)
	}
}
