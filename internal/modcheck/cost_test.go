package modcheck

import (
	"testing"

	"github.com/subako/subako-runner/internal/wasmbin"
	"github.com/subako/subako-runner/limits"
)

// TestCheckCompileCostBounds pins both sides of each bound the compile-cost
// sweep found (limits.Structure's globals, locals, br_table, type and table
// bounds): a module exactly at a limit passes, one unit over is rejected as
// module_too_complex (table_too_large for tables) with a message that names
// the dimension, the count and the limit. Each case sets only its own bound
// (a zero field is not checked), so no other bound can be what rejects it.
func TestCheckCompileCostBounds(t *testing.T) {
	// callsTo is _start making k calls of function 1 (empty), with m
	// mutable globals: the global cost is (m+2)(k+4) (see shape.end).
	callsTo := func(m, k int) []byte {
		return sweepModule{funcs: []uint32{0}, globals: mutableGlobals(m),
			bodies: []sweepBody{{expr: repeatN(call(1), k)}, emptyBody}}.bytes()
	}
	immutable := func(n int) []wasmbin.GlobalType {
		g := make([]wasmbin.GlobalType, n)
		for i := range g {
			g[i] = wasmbin.GlobalType{Type: wasmbin.I32}
		}
		return g
	}
	fill := func(ts []wasmbin.FuncType, v wasmbin.ValType) []wasmbin.FuncType {
		for i := range ts {
			for j := range ts[i].Params {
				ts[i].Params[j] = v
			}
			for j := range ts[i].Results {
				ts[i].Results[j] = v
			}
		}
		return ts
	}
	arityI32 := func(params, results int) []byte {
		return sweepModule{types: fill([]wasmbin.FuncType{{Params: make([]wasmbin.ValType, params), Results: make([]wasmbin.ValType, results)}}, wasmbin.I32)}.bytes()
	}
	// branchesOf2 is a block of two results left by k br_ifs, or by a
	// br_table of n labels (n+1 edges) when n > 0.
	branchesOf2 := func(k, n int) []byte {
		b := []byte{0x02, 0x01, 0x41, 0x00, 0x41, 0x00}
		b = append(b, repeatN([]byte{0x41, 0x00, 0x0d, 0x00}, k)...)
		if n > 0 {
			b = append(b, 0x41, 0x00, 0x0e, byte(n))
			b = append(b, make([]byte, n+1)...)
		}
		b = append(b, 0x0b, 0x1a, 0x1a)
		return sweepModule{types: fill([]wasmbin.FuncType{{Results: make([]wasmbin.ValType, 2)}}, wasmbin.I32), bodies: []sweepBody{{expr: b}}}.bytes()
	}
	tests := []struct {
		name   string
		st     limits.Structure
		inside []byte
		over   []byte
		code   string
		phrase []string
	}{
		{"globals", limits.Structure{Globals: 10},
			sweepModule{globals: immutable(10)}.bytes(), sweepModule{globals: immutable(11)}.bytes(), CodeModuleTooComplex,
			[]string{"11 globals", "globals limit of 10"}},
		{"global cost: mutable globals times call sites", limits.Structure{GlobalCost: 100},
			callsTo(8, 6), callsTo(8, 7), CodeModuleTooComplex,
			[]string{"every call site reloads the 10 mutable ones", "global cost of 110, above the limit of 100", `function 0 (export "_start") (8 call sites) contributes 90`}},
		{"global cost: immutable globals in every function", limits.Structure{GlobalCost: 12 * 100},
			sweepModule{funcs: make([]uint32, 99), globals: immutable(8)}.bytes(), sweepModule{funcs: make([]uint32, 99), globals: immutable(9)}.bytes(), CodeModuleTooComplex,
			[]string{"declares all 11 globals", "global cost of 1300, above the limit of 1200"}},
		{"locals in all", limits.Structure{Locals: 100},
			sweepModule{funcs: []uint32{0}, bodies: []sweepBody{{locals: localsOf(50)}, {locals: localsOf(50)}}}.bytes(),
			sweepModule{funcs: []uint32{0}, bodies: []sweepBody{{locals: localsOf(50)}, {locals: localsOf(51)}}}.bytes(), CodeModuleTooComplex,
			[]string{"101 locals (parameters included) in all", "locals limit of 100"}},
		{"local cost: locals squared times blocks", limits.Structure{LocalCost: 1000},
			sweepModule{bodies: []sweepBody{localsMerges(9, 9)}}.bytes(), sweepModule{bodies: []sweepBody{localsMerges(9, 10)}}.bytes(), CodeModuleTooComplex,
			[]string{"local cost", "is 1100, above the limit of 1000", `function 0 (export "_start") (10 locals, 10 blocks) contributes 1100`}},
		{"br_table cost: labels squared", limits.Structure{BrTableCost: 2 * 100 * 100},
			sweepModule{bodies: []sweepBody{{expr: append(brTable(100), brTable(100)...)}}}.bytes(),
			sweepModule{bodies: []sweepBody{{expr: append(brTable(100), brTable(101)...)}}}.bytes(), CodeModuleTooComplex,
			[]string{"br_table cost (the sum of the squares of their label counts) is 20201, above the limit of 20000", `function 0 (export "_start") contributes 20201`}},
		{"values carried by br_ifs", limits.Structure{BranchValues: 10},
			branchesOf2(5, 0), branchesOf2(6, 0), CodeModuleTooComplex,
			[]string{"carry 12 values in all", "branch values limit of 10", `function 0 (export "_start") carries 12`}},
		{"values carried by a br_table", limits.Structure{BranchValues: 10},
			branchesOf2(0, 4), branchesOf2(0, 5), CodeModuleTooComplex,
			[]string{"carry 12 values in all", "branch values limit of 10"}},
		{"types", limits.Structure{Types: 5},
			sweepModule{types: make([]wasmbin.FuncType, 4)}.bytes(), sweepModule{types: make([]wasmbin.FuncType, 5)}.bytes(), CodeModuleTooComplex,
			[]string{"6 function types", "types limit of 5"}},
		{"parameters of a type", limits.Structure{TypeArity: 3},
			arityI32(3, 3), arityI32(4, 0), CodeModuleTooComplex,
			[]string{"type 1 has 4 parameters", "type arity limit of 3"}},
		{"results of a type", limits.Structure{TypeArity: 3},
			arityI32(0, 3), arityI32(0, 4), CodeModuleTooComplex,
			[]string{"type 1 has 4 results", "type arity limit of 3"}},
		{"parameters and results of all types", limits.Structure{TypeValues: 10},
			sweepModule{types: wideTypes(2, 5)}.bytes(), sweepModule{types: fill([]wasmbin.FuncType{{Params: make([]wasmbin.ValType, 5), Results: make([]wasmbin.ValType, 6)}}, wasmbin.I32)}.bytes(), CodeModuleTooComplex,
			[]string{"11 parameters and results in all", "type values limit of 10"}},
		{"table elements", limits.Structure{TableElements: 1000},
			sweepModule{tables: []uint32{600, 400}}.bytes(), sweepModule{tables: []uint32{600, 401}}.bytes(), CodeTableTooLarge,
			[]string{"tables start at 1001 elements in all", "table elements limit of 1000", "8008 bytes at 8 bytes each"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			opts := Options{Structure: tt.st}
			for name, check := range map[string]func([]byte, Options) []Problem{"Check": Check, "CheckStructure": CheckStructure} {
				if ps := check(tt.inside, opts); len(ps) > 0 {
					t.Errorf("%s: the module at the limit was rejected:\n%s", name, list(ps))
				}
				ps := check(tt.over, opts)
				found := false
				for _, p := range ps {
					if p.Code == tt.code && containsAll(p.Message, tt.phrase) {
						found = true
					}
				}
				if !found {
					t.Errorf("%s: no %s problem naming %q one unit over the limit:\n%s", name, tt.code, tt.phrase, list(ps))
				}
			}
		})
	}
}

// TestCheckRejectsIssue25CompileBombs: the red team's modules (issue 25)
// are rejected at upload under the default bounds, before anything
// compiles them, each by the bound the sweep found for it.
func TestCheckRejectsIssue25CompileBombs(t *testing.T) {
	manyLocals := sweepModule{bodies: []sweepBody{localsMerges(50_000, 20)}}.bytes()
	tests := []struct {
		name   string
		wasm   []byte
		code   string
		phrase []string
	}{
		// 692 KB, 8.4 s and 1.75 GB to validate; with 1,000 calls 16.7 GB.
		{"100k mutable globals, 100 call sites", sweepModule{funcs: []uint32{0}, globals: mutableGlobals(100_000),
			bodies: []sweepBody{{expr: repeatN(call(1), 100)}, emptyBody}}.bytes(), CodeModuleTooComplex,
			[]string{"100000 globals", "globals limit of 10000"}},
		{"100k mutable globals, 1000 call sites", sweepModule{funcs: []uint32{0}, globals: mutableGlobals(100_000),
			bodies: []sweepBody{{expr: repeatN(call(1), 1000)}, emptyBody}}.bytes(), CodeModuleTooComplex,
			[]string{"global cost of", "above the limit of 4000000"}},
		// Within the globals limit, over the cost: 10,000 × 1,000 reloads.
		{"10k mutable globals, 1000 call sites", sweepModule{funcs: []uint32{0}, globals: mutableGlobals(10_000),
			bodies: []sweepBody{{expr: repeatN(call(1), 1000)}, emptyBody}}.bytes(), CodeModuleTooComplex,
			[]string{"every call site reloads the 10002 mutable ones", "above the limit of 4000000"}},
		// 85 s of CPU to compile, 250 KB.
		{"50k locals read after 20 merges", manyLocals, CodeModuleTooComplex,
			[]string{"local cost", "(50001 locals, 20 blocks)", "above the limit of 1000000000"}},
		// 45 s and 2.5 GB to compile.
		{"16 br_tables of 65536 labels", sweepModule{bodies: []sweepBody{{expr: repeatN(brTable(65_536), 16)}}}.bytes(), CodeModuleTooComplex,
			[]string{"br_table cost", "is 68719476736, above the limit of 5000000000"}},
		// 39 s to compile, 16 KB.
		{"a br_table of 16,000 labels to a block of 1,000 results", sweepModule{types: fill1000Results(), bodies: []sweepBody{{expr: brTableWide(16_000, 1000)}}}.bytes(), CodeModuleTooComplex,
			[]string{"carry 16001000 values in all", "branch values limit of 1000000"}},
		// 4.25 GB of RSS for 60 calls with 2 instances at a time.
		{"30M-element table", sweepModule{tables: []uint32{30_000_000}}.bytes(), CodeTableTooLarge,
			[]string{"30000000 elements in all", "table elements limit of 1000000"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for name, check := range map[string]func([]byte, Options) []Problem{"Check": Check, "CheckStructure": CheckStructure} {
				ps := check(tt.wasm, defaultOpts)
				found := false
				for _, p := range ps {
					if p.Code == tt.code && containsAll(p.Message, tt.phrase) {
						found = true
					}
				}
				if !found {
					t.Errorf("%s: no %s problem naming %q:\n%s", name, tt.code, tt.phrase, list(ps))
				}
			}
		})
	}
}
