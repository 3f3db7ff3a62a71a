package wasmvalid

import (
	"context"
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
				compiled, err := Validate(ctx, wz, tt.module)
				if compiled != nil {
					defer compiled.Close(ctx)
				}
				if tt.reject != "" {
					if err == nil || !strings.Contains(err.Error(), tt.reject) {
						t.Fatalf("Validate: %v; want an error naming the %s", err, tt.reject)
					}
					return
				}
				if err != nil {
					t.Fatalf("Validate: %v; want it accepted", err)
				}
				if tt.functions != (compiled == nil) {
					t.Fatalf("compiled = %v for a module with functions %v: want it stopped before the engine exactly when there are functions", compiled, tt.functions)
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
	_, _ = Validate(context.Background(), nil, wasmtest.Module{}.Bytes())
}
