package abi_test

import (
	"context"
	"maps"
	"slices"
	"testing"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"

	"github.com/subako/subako-runner/hostmod/subakohttp"
	"github.com/subako/subako-runner/internal/abi"
	"github.com/subako/subako-runner/internal/fuel"
	"github.com/subako/subako-runner/wasi"
)

// defs is name → definition of the functions a host module exports.
type defs map[string]api.FunctionDefinition

// compare checks that a module's exported functions are exactly the
// table's: same names, same signatures.
func compare(t *testing.T, module string, got defs) {
	t.Helper()
	want := map[string]abi.Func{}
	for f := range abi.Functions(module) {
		want[f.Name] = f
	}
	if len(want) == 0 {
		t.Fatalf("no table for %s", module)
	}
	for name, d := range got {
		f, ok := want[name]
		switch {
		case !ok:
			t.Errorf("%s exports %s, which the table lacks", module, name)
		case !abi.Matches(f, d.ParamTypes(), d.ResultTypes()):
			t.Errorf("%s.%s: exported as %v -> %v, the table has %v -> %v", module, name, d.ParamTypes(), d.ResultTypes(), f.Params(), f.Results())
		}
	}
	for _, name := range slices.Sorted(maps.Keys(want)) {
		if _, ok := got[name]; !ok {
			t.Errorf("%s does not export %s, which the table lists", module, name)
		}
	}
}

func instantiated(t *testing.T, ctx context.Context, r wazero.Runtime, module string) defs {
	t.Helper()
	m := r.Module(module)
	if m == nil {
		t.Fatalf("%s is not instantiated", module)
	}
	return m.ExportedFunctionDefinitions()
}

// TestHostModulesMatchTheTable instantiates our three host modules, as the
// runtime does, and compares what they export with the table uploads are
// checked against (and that metering injects).
func TestHostModulesMatchTheTable(t *testing.T) {
	ctx := context.Background()
	r := wazero.NewRuntime(ctx)
	defer r.Close(ctx)
	for _, inst := range []func(context.Context, wazero.Runtime) (api.Closer, error){wasi.Instantiate, subakohttp.Instantiate, fuel.Instantiate} {
		if _, err := inst(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	for _, module := range []string{abi.ModuleWASI, abi.ModuleSubakoHTTP, abi.ModuleFuel} {
		t.Run(module, func(t *testing.T) { compare(t, module, instantiated(t, ctx, r, module)) })
	}
	if n := len(instantiated(t, ctx, r, abi.ModuleWASI)); n != 46 {
		t.Errorf("our wasi_snapshot_preview1 exports %d functions; preview 1 has 46", n)
	}
}

// TestWASIMatchesTheWitx: the WASI table is preview 1 as wazero defines it
// from the witx, so our module and the checks agree with the standard too.
func TestWASIMatchesTheWitx(t *testing.T) {
	ctx := context.Background()
	r := wazero.NewRuntime(ctx)
	defer r.Close(ctx)
	compiled, err := wasi_snapshot_preview1.NewBuilder(r).Compile(ctx)
	if err != nil {
		t.Fatal(err)
	}
	compare(t, abi.ModuleWASI, compiled.ExportedFunctions())
}

func TestLookup(t *testing.T) {
	if f, known, ok := abi.Lookup(abi.ModuleFuel, "refuel"); !known || !ok || !abi.Matches(f, []byte{abi.I64}, []byte{abi.I64}) {
		t.Errorf("refuel: %+v %v %v", f, known, ok)
	}
	if _, known, ok := abi.Lookup("env", "f"); known || ok {
		t.Error("env is not a host module")
	}
	if _, known, ok := abi.Lookup(abi.ModuleSubakoHTTP, "fd_write"); !known || ok {
		t.Error("subako_http has no fd_write")
	}
	if abi.Importable(abi.ModuleFuel) || !abi.Importable(abi.ModuleWASI) || !abi.Importable(abi.ModuleSubakoHTTP) {
		t.Error("Importable")
	}
	f, _, _ := abi.Lookup(abi.ModuleWASI, "path_open")
	p := f.Params()
	p[0] = abi.I64
	if g, _, _ := abi.Lookup(abi.ModuleWASI, "path_open"); g.Params()[0] != abi.I32 {
		t.Error("Params shares storage with the table")
	}
}
