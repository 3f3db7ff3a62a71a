package modcheck

import (
	"context"
	"testing"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"

	"github.com/subako/subako-runner/internal/wasmbin"
)

// The allowlist must be exactly wasi_snapshot_preview1 as wazero defines it
// from the witx: same names, same signatures, nothing more or less.
func TestWASIFunctionsMatchWazero(t *testing.T) {
	ctx := context.Background()
	r := wazero.NewRuntime(ctx)
	defer r.Close(ctx)
	compiled, err := wasi_snapshot_preview1.NewBuilder(r).Compile(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defs := compiled.ExportedFunctions()
	ours := WASIFunctions()
	if len(ours) != len(defs) || len(ours) != 46 {
		t.Fatalf("we list %d functions, wazero defines %d", len(ours), len(defs))
	}
	for _, f := range ours {
		d, ok := defs[f.Name]
		if !ok {
			t.Errorf("%s: not defined by wazero", f.Name)
			continue
		}
		theirs := wasmbin.FuncType{Params: vals(d.ParamTypes()), Results: vals(d.ResultTypes())}
		if !theirs.Equal(f.Type) {
			t.Errorf("%s: ours %s, wazero %s", f.Name, f.Type, theirs)
		}
		if f.Module != ModuleWASI {
			t.Errorf("%s: module %q", f.Name, f.Module)
		}
	}
}

func vals(ts []byte) []wasmbin.ValType {
	out := make([]wasmbin.ValType, len(ts))
	for i, t := range ts {
		out[i] = wasmbin.ValType(t)
	}
	return out
}

func TestLookupImport(t *testing.T) {
	tests := []struct {
		module, name string
		want         string
		ok           bool
	}{
		{"subako_http", "request", "(i32, i32) -> i32", true},
		{"subako_http", "read_response", "(i32, i32) -> i32", true},
		{"wasi_snapshot_preview1", "proc_exit", "(i32) -> ()", true},
		{"wasi_snapshot_preview1", "sched_yield", "() -> i32", true},
		{"wasi_snapshot_preview1", "path_open", "(i32, i32, i32, i32, i32, i64, i64, i32, i32) -> i32", true},
		{"wasi_snapshot_preview1", "request", "", false},
		{"subako_http", "fd_write", "", false},
		{"wasi_unstable", "fd_write", "", false},
		{"env", "memory", "", false},
	}
	for _, tt := range tests {
		got, ok := LookupImport(tt.module, tt.name)
		if ok != tt.ok || (ok && got.String() != tt.want) {
			t.Errorf("LookupImport(%q, %q) = %s, %v; want %s, %v", tt.module, tt.name, got, ok, tt.want, tt.ok)
		}
	}
}

func TestFunctionTablesAreCopies(t *testing.T) {
	a := SubakoHTTPFunctions()
	a[0].Name = "changed"
	a[0].Type.Params[0] = wasmbin.F64
	if b := SubakoHTTPFunctions(); b[0].Name != "request" || b[0].Type.Params[0] != wasmbin.I32 {
		t.Fatalf("the table was changed through a returned copy: %+v", b[0])
	}
	if got, _ := LookupImport("subako_http", "request"); got.Params[0] != wasmbin.I32 {
		t.Fatal("LookupImport shares storage with a returned copy")
	}
}
