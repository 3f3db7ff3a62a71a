package runtime

import (
	"context"
	goruntime "runtime"
	"strings"
	"testing"

	"github.com/subako/subako-runner/internal/wasmbin"
	"github.com/subako/subako-runner/internal/wasmbin/wasmtest"
	"github.com/subako/subako-runner/limits"
)

// wideTypes is n distinct function types of arity parameters each, all
// externref (the longest name in wazero's key for a type) but where the
// bits of the type's index make some funcref.
func wideTypes(n, arity int) []wasmbin.FuncType {
	ts := make([]wasmbin.FuncType, n)
	for i := range ts {
		params := make([]wasmbin.ValType, arity)
		for j := range params {
			params[j] = wasmbin.ExternRef
			if j < 32 && i>>j&1 == 1 {
				params[j] = wasmbin.FuncRef
			}
		}
		ts[i] = wasmbin.FuncType{Params: params}
	}
	return ts
}

// heapAfterGC is the live heap once the collector has run.
func heapAfterGC() int64 {
	var m goruntime.MemStats
	goruntime.GC()
	goruntime.GC()
	goruntime.ReadMemStats(&m)
	return int64(m.HeapAlloc)
}

// TestUploadOfManyWideTypesIsRefused: the red team's upload of 100 types
// of 1,000 externref parameters (100 KB) left 1.8 MB of Go heap on the
// Runtime for its life, accepted or not: wazero's store keeps every
// distinct function type it compiled. It is over the type values bound
// now, refused before anything compiles it.
func TestUploadOfManyWideTypesIsRefused(t *testing.T) {
	rt := newRuntime(t, nil)
	module := wasmtest.Module{Types: wideTypes(100, 1000)}.Bytes()
	_, err := rt.Validate(context.Background(), writeModule(t, module))
	if codes := rejectionCodes(err); len(codes) != 1 || codes[0] != CodeModuleTooComplex || !strings.Contains(err.Error(), "type values limit") {
		t.Fatalf("Validate: %v; want one module_too_complex rejection over the type values limit", err)
	}
}

// keptPerUploadMax is what one upload within the default structural
// bounds may leave on the Runtime that compiled it, at most (the
// function types wazero keeps; docs/security.md "Known gaps").
const keptPerUploadMax = 512 << 10

// TestTypesKeptPerUploadAtTheBounds: the uploads that leave the most
// behind at the default bounds — the values spent on few wide types of
// the longest value type, or on as many types as allowed — are accepted,
// and each leaves under keptPerUploadMax on the Runtime's heap, measured
// after the compiled module is closed against the same upload of a
// module of one type.
func TestTypesKeptPerUploadAtTheBounds(t *testing.T) {
	st := limits.DefaultStructure()
	shapes := []struct {
		name  string
		types []wasmbin.FuncType
	}{
		{"few wide types", wideTypes(st.TypeValues/st.TypeArity, st.TypeArity)},
		{"as many types as allowed", wideTypes(st.Types-1, st.TypeValues/st.Types)},
	}
	rt := newRuntime(t, nil)
	ctx := context.Background()
	upload := func(t *testing.T, types []wasmbin.FuncType) {
		t.Helper()
		c, err := rt.Validate(ctx, writeModule(t, wasmtest.Module{Types: types}.Bytes()))
		if err != nil {
			t.Fatalf("Validate: %v; want it accepted at the bounds", err)
		}
		c.Close(ctx)
	}
	upload(t, nil) // the control: warms what any upload leaves
	for _, s := range shapes {
		t.Run(s.name, func(t *testing.T) {
			values := 0
			for _, ft := range s.types {
				values += len(ft.Params) + len(ft.Results)
			}
			before := heapAfterGC()
			upload(t, s.types)
			kept := heapAfterGC() - before
			t.Logf("%d types, %d values: %d KiB kept", len(s.types)+1, values, kept>>10)
			if kept > keptPerUploadMax {
				t.Fatalf("the upload left %d KiB on the Runtime, above %d KiB", kept>>10, keptPerUploadMax>>10)
			}
		})
	}
}
