package modcheck

import (
	"testing"

	"github.com/subako/subako-runner/internal/wasmbin"
	"github.com/subako/subako-runner/internal/wasmbin/wasmtest"
	"github.com/subako/subako-runner/limits"
)

// The default bounds on function types are what keeps one upload's
// leftovers on the compiling Runtime small (runtime/types_test.go
// measures them): each passes at its default and is refused one past it,
// the message naming the default.
func TestTypeBoundsAtTheirDefaults(t *testing.T) {
	st := limits.DefaultStructure()
	typesOf := func(n, values int) []wasmbin.FuncType {
		ts := make([]wasmbin.FuncType, n)
		for i := range ts {
			per := values / n
			if i < values%n {
				per++
			}
			ts[i].Params = make([]wasmbin.ValType, per)
			for j := range ts[i].Params {
				ts[i].Params[j] = wasmbin.ExternRef
			}
		}
		return ts
	}
	tests := []struct {
		name          string
		inside, above []wasmbin.FuncType // after the module's own () -> ()
		message       string
	}{
		{"types", typesOf(st.Types-1, 0), typesOf(st.Types, 0), "the module has 1001 function types, above the types limit of 1000"},
		{"type values", typesOf(20, st.TypeValues), typesOf(20, st.TypeValues+1), "the function types have 10001 parameters and results in all, above the type values limit of 10000"},
	}
	opts := Options{Structure: st}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if ps := CheckStructure(wasmtest.Module{Types: tt.inside}.Bytes(), opts); len(ps) > 0 {
				t.Fatalf("at the bound: %v", ps)
			}
			ps := CheckStructure(wasmtest.Module{Types: tt.above}.Bytes(), opts)
			if len(ps) != 1 || ps[0].Code != CodeModuleTooComplex || ps[0].Message != tt.message {
				t.Fatalf("one past the bound: %v; want module_too_complex: %s", ps, tt.message)
			}
		})
	}
}
