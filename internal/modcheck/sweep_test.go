package modcheck

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"

	"github.com/subako/subako-runner/internal/fuel"
	"github.com/subako/subako-runner/internal/wasmbin"
	"github.com/subako/subako-runner/internal/wasmvalid"
	"github.com/subako/subako-runner/limits"
)

// The compile-cost sweep: generators build modules whose compile cost
// grows with one dimension, and a child process runs on each what the
// runtime runs on an upload (Check, wazero's validator as
// internal/wasmvalid runs it, fuel.Instrument, wazero's optimising
// compiler on the metered module) and reports its time and peak RSS.
// docs/security.md has the table.
//
// TestCompileCostAtLimits (skipped under -short) checks that the worst
// module found for each bound, built at the bound's default, passes Check,
// so the cases stay at the limits as the limits change. With
// SUBAKO_SWEEP=limits it also compiles each in a child and fails past
// sweepMaxRSS (about 25 s for all on an idle 2-core machine); with
// SUBAKO_SWEEP=explore it instead runs each generator at growing sizes
// past the limits, the sweep that found the dimensions.
// SUBAKO_SWEEP_ONLY=text keeps the cases whose name contains text.

// sweepModule is a WASI-command-shaped module of the sweep: memory 0
// exported as "memory", defined function 0 (type 0, () -> ()) exported as
// "_start".
type sweepModule struct {
	types   []wasmbin.FuncType // type 0 is prepended: () -> ()
	imports int                // imports of wasi fd_write (type added)
	funcs   []uint32           // the type of each defined function after _start
	globals []wasmbin.GlobalType
	tables  []uint32 // initial sizes of funcref tables
	exports int      // extra exports of _start under other names
	elems   []byte   // raw element section content
	data    []byte   // raw data section content
	bodies  []sweepBody
}

// sweepBody is a function body: its locals vector and its instructions
// without the final end. bodies[0] is _start's.
type sweepBody struct {
	locals []byte
	expr   []byte
}

func (m sweepModule) bytes() []byte {
	out := []byte{0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00}
	types := append([]wasmbin.FuncType{{}}, m.types...)
	importType := uint32(0)
	if m.imports > 0 {
		importType = uint32(len(types))
		types = append(types, wasmbin.FuncType{Params: []wasmbin.ValType{wasmbin.I32, wasmbin.I32, wasmbin.I32, wasmbin.I32}, Results: []wasmbin.ValType{wasmbin.I32}})
	}
	sec := wasmbin.AppendU32(nil, uint32(len(types)))
	for _, t := range types {
		sec = wasmbin.AppendFuncType(sec, t)
	}
	out = wasmbin.AppendSection(out, wasmbin.SectionType, sec)
	if m.imports > 0 {
		sec = wasmbin.AppendU32(nil, uint32(m.imports))
		for range m.imports {
			sec = wasmbin.AppendFuncImport(sec, "wasi_snapshot_preview1", "fd_write", importType)
		}
		out = wasmbin.AppendSection(out, wasmbin.SectionImport, sec)
	}
	funcs := append([]uint32{0}, m.funcs...)
	sec = wasmbin.AppendU32(nil, uint32(len(funcs)))
	for _, f := range funcs {
		sec = wasmbin.AppendU32(sec, f)
	}
	out = wasmbin.AppendSection(out, wasmbin.SectionFunction, sec)
	if len(m.tables) > 0 {
		sec = wasmbin.AppendU32(nil, uint32(len(m.tables)))
		for _, n := range m.tables {
			sec = wasmbin.AppendU32(append(sec, 0x70, 0x00), n)
		}
		out = wasmbin.AppendSection(out, wasmbin.SectionTable, sec)
	}
	out = wasmbin.AppendSection(out, wasmbin.SectionMemory, []byte{1, 0, 1})
	if len(m.globals) > 0 {
		sec = wasmbin.AppendU32(nil, uint32(len(m.globals)))
		for _, g := range m.globals {
			sec = wasmbin.AppendGlobalType(sec, g)
			switch g.Type {
			case wasmbin.I64:
				sec = append(sec, 0x42, 0x00, 0x0b)
			default:
				sec = append(sec, 0x41, 0x00, 0x0b)
			}
		}
		out = wasmbin.AppendSection(out, wasmbin.SectionGlobal, sec)
	}
	start := uint32(m.imports)
	sec = wasmbin.AppendU32(nil, uint32(2+m.exports))
	sec = wasmbin.AppendExport(sec, wasmbin.Export{Name: "memory", Kind: wasmbin.KindMemory})
	sec = wasmbin.AppendExport(sec, wasmbin.Export{Name: "_start", Kind: wasmbin.KindFunc, Index: start})
	for i := range m.exports {
		sec = wasmbin.AppendExport(sec, wasmbin.Export{Name: "e" + strconv.Itoa(i), Kind: wasmbin.KindFunc, Index: start})
	}
	out = wasmbin.AppendSection(out, wasmbin.SectionExport, sec)
	if m.elems != nil {
		out = wasmbin.AppendSection(out, wasmbin.SectionElement, m.elems)
	}
	sec = wasmbin.AppendU32(nil, uint32(len(funcs)))
	for i := range funcs {
		b := sweepBody{locals: []byte{0}}
		if i < len(m.bodies) {
			b = m.bodies[i]
			if b.locals == nil {
				b.locals = []byte{0}
			}
		}
		sec = wasmbin.AppendU32(sec, uint32(len(b.locals)+len(b.expr)+1))
		sec = append(sec, b.locals...)
		sec = append(sec, b.expr...)
		sec = append(sec, 0x0b)
	}
	out = wasmbin.AppendSection(out, wasmbin.SectionCode, sec)
	if m.data != nil {
		out = wasmbin.AppendSection(out, wasmbin.SectionData, m.data)
	}
	return out
}

// Instruction pieces of the generators.
var (
	opNop     = []byte{0x01}
	opDrop    = []byte{0x1a}
	i32Zero   = []byte{0x41, 0x00}
	emptyBody = sweepBody{}
)

func call(fn uint32) []byte { return wasmbin.AppendU32([]byte{0x10}, fn) }

func localGet(i uint32) []byte  { return wasmbin.AppendU32([]byte{0x20}, i) }
func globalGet(i uint32) []byte { return wasmbin.AppendU32([]byte{0x23}, i) }

// repeatN is n copies of piece.
func repeatN(piece []byte, n int) []byte { return bytes.Repeat(piece, n) }

// localsOf declares n locals of type i32 in one group.
func localsOf(n int) []byte {
	return append(wasmbin.AppendU32([]byte{1}, uint32(n)), byte(wasmbin.I32))
}

func mutableGlobals(n int) []wasmbin.GlobalType {
	g := make([]wasmbin.GlobalType, n)
	for i := range g {
		g[i] = wasmbin.GlobalType{Type: wasmbin.I32, Mutable: true}
	}
	return g
}

func manyBodies(b sweepBody, n int) []sweepBody {
	out := make([]sweepBody, n)
	for i := range out {
		out[i] = b
	}
	return out
}

// sweepDim is one dimension of the exploring sweep: gen builds the module
// for size n; explore are the sizes SUBAKO_SWEEP=explore runs.
type sweepDim struct {
	name    string
	gen     func(n int) []byte
	explore []int
}

// limitCase is one module at the default limits: the worst shape found for
// a bound, with the bound's value in it. Each must pass Check.
type limitCase struct {
	name  string
	bound string // the limits.Structure field(s) it is at
	gen   func(s limits.Structure) []byte
}

// limitCases are the sweep's modules at the default limits.
func limitCases() []limitCase {
	return []limitCase{
		{"10,000 mutable globals reloaded after 396 calls", "Globals, GlobalCost", func(s limits.Structure) []byte {
			m := s.Globals - meterGlobals // (m+2)(k+4) = GlobalCost
			k := int(s.GlobalCost)/(m+meterGlobals) - 4
			return sweepModule{funcs: []uint32{0}, globals: mutableGlobals(m), bodies: []sweepBody{{expr: repeatN(call(1), k)}, emptyBody}}.bytes()
		}},
		{"998 mutable globals reloaded after 3,996 calls", "GlobalCost", func(s limits.Structure) []byte {
			k := int(s.GlobalCost)/1000 - 4
			return sweepModule{funcs: []uint32{0}, globals: mutableGlobals(998), bodies: []sweepBody{{expr: repeatN(call(1), k)}, emptyBody}}.bytes()
		}},
		{"1,000 functions of 999 locals", "Locals, LocalCost", func(s limits.Structure) []byte {
			return sweepModule{funcs: make([]uint32, 999), bodies: manyBodies(sweepBody{locals: localsOf(999)}, 1000)}.bytes()
		}},
		{"999 locals read after 999 merges", "LocalCost", func(s limits.Structure) []byte {
			return sweepModule{bodies: []sweepBody{localsMerges(999, 999)}}.bytes()
		}},
		{"6,899 locals read after 20 merges", "LocalCost", func(s limits.Structure) []byte {
			return sweepModule{bodies: []sweepBody{localsMerges(6_899, 20)}}.bytes()
		}},
		{"one br_table of 65,536 labels", "BrTableTargets, BrTableCost", func(s limits.Structure) []byte {
			return sweepModule{bodies: []sweepBody{{expr: brTable(s.BrTableTargets)}}}.bytes()
		}},
		{"5 br_tables of 31,622 labels", "BrTableCost", func(s limits.Structure) []byte {
			return sweepModule{bodies: []sweepBody{{expr: repeatN(brTable(31_622), 5)}}}.bytes()
		}},
		{"1,000 br_ifs out of a block of 1,000 results", "BranchValues", func(s limits.Structure) []byte {
			k := int(s.BranchValues) / 1000
			b := append([]byte{0x02, 0x01}, repeatN(i32Zero, 1000)...)
			b = append(b, repeatN([]byte{0x41, 0x00, 0x0d, 0x00}, k)...)
			b = append(append(b, 0x0b), repeatN(opDrop, 1000)...)
			return sweepModule{types: fill1000Results(), bodies: []sweepBody{{expr: b}}}.bytes()
		}},
		{"a br_table of 999 labels to a block of 1,000 results", "BranchValues", func(s limits.Structure) []byte {
			return sweepModule{types: fill1000Results(), bodies: []sweepBody{{expr: brTableWide(int(s.BranchValues)/1000-1, 1000)}}}.bytes()
		}},
		{"15,811 sequential ifs in one function", "ControlCost", func(s limits.Structure) []byte {
			return sweepModule{bodies: []sweepBody{{expr: repeatN([]byte{0x41, 0x00, 0x04, 0x40, 0x0b}, 15_811)}}}.bytes()
		}},
		{"10,000 nested blocks", "Nesting", func(s limits.Structure) []byte {
			return sweepModule{bodies: []sweepBody{{expr: append(repeatN([]byte{0x02, 0x40}, s.Nesting), repeatN([]byte{0x0b}, s.Nesting)...)}}}.bytes()
		}},
		{"1,000 nested loops with a br_if each", "LoopNesting", func(s limits.Structure) []byte {
			return sweepModule{bodies: []sweepBody{{expr: append(repeatN([]byte{0x03, 0x40, 0x41, 0x00, 0x0d, 0x00}, s.LoopNesting), repeatN([]byte{0x0b}, s.LoopNesting)...)}}}.bytes()
		}},
		{"100,000 functions", "Functions", func(s limits.Structure) []byte {
			return sweepModule{funcs: make([]uint32, s.Functions-1)}.bytes()
		}},
		{"100,000 imported functions", "Functions", func(s limits.Structure) []byte {
			return sweepModule{imports: s.Functions - 1}.bytes()
		}},
		{"10 types of 1,000 parameters", "TypeArity, TypeValues", func(s limits.Structure) []byte {
			return sweepModule{types: wideTypes(s.TypeValues/s.TypeArity, s.TypeArity)}.bytes()
		}},
		{"999 types of 10 parameters", "Types, TypeValues", func(s limits.Structure) []byte {
			return sweepModule{types: wideTypes(s.Types-1, s.TypeValues/s.Types)}.bytes()
		}},
		{"99,998 exports", "(decoder: 100,000 exports)", func(s limits.Structure) []byte {
			return sweepModule{exports: wasmbin.MaxExports - 2}.bytes()
		}},
		{"1,000,000 element entries", "ElementEntries", func(s limits.Structure) []byte {
			return sweepModule{elems: passiveElements(s.ElementEntries)}.bytes()
		}},
		{"100,000 data segments", "DataSegments", func(s limits.Structure) []byte {
			return sweepModule{data: dataSegments(s.DataSegments)}.bytes()
		}},
		{"1,000,000 table elements", "TableElements", func(s limits.Structure) []byte {
			return sweepModule{tables: []uint32{uint32(s.TableElements)}}.bytes()
		}},
		{"32 MiB of straight code in 2 MiB functions", "CodeSize, FunctionSize", func(s limits.Structure) []byte {
			return straightCode(int(s.CodeSize), int(s.FunctionSize))
		}},
	}
}

// straightCode is n bytes of i32.const 0; drop in functions of at most
// per bytes.
func straightCode(n, per int) []byte {
	var bodies []sweepBody
	for left := n; left > 0; left -= per {
		k := (min(left, per) - 16) / 3
		bodies = append(bodies, sweepBody{expr: repeatN([]byte{0x41, 0x00, 0x1a}, k)})
	}
	return sweepModule{funcs: make([]uint32, len(bodies)-1), bodies: bodies}.bytes()
}

// sweepDims are the dimensions. Each puts n against the compiler's work in
// the most expensive shape found for it.
func sweepDims() []sweepDim {
	return []sweepDim{
		{
			// wazevo reloads every mutable global after every call: the
			// work is globals × call sites (issue 25: 100k × 100 took
			// 8.4 s and 1.75 GB).
			name: "mutable globals x call sites (100 calls)",
			gen: func(n int) []byte {
				return sweepModule{funcs: []uint32{0}, globals: mutableGlobals(n),
					bodies: []sweepBody{{expr: repeatN(call(1), 100)}, emptyBody}}.bytes()
			},
			explore: []int{1_000, 10_000, 30_000},
		},
		{
			name: "call sites x mutable globals (100 globals)",
			gen: func(n int) []byte {
				return sweepModule{funcs: []uint32{0}, globals: mutableGlobals(100),
					bodies: []sweepBody{{expr: repeatN(call(1), n)}, emptyBody}}.bytes()
			},
			explore: []int{1_000, 10_000, 30_000},
		},
		{
			// Every function's compilation declares every global.
			name: "globals x functions (1000 functions)",
			gen: func(n int) []byte {
				return sweepModule{funcs: make([]uint32, 999), globals: mutableGlobals(n)}.bytes()
			},
			explore: []int{1_000, 10_000, 100_000},
		},
		{
			// Every declared local is a zero constant at the entry.
			name: "locals x functions (1000 functions)",
			gen: func(n int) []byte {
				return sweepModule{funcs: make([]uint32, 999), bodies: manyBodies(sweepBody{locals: localsOf(n)}, 1000)}.bytes()
			},
			explore: []int{100, 1_000, 10_000},
		},
		{
			// A use of a local after b merges makes b phis.
			name: "locals x if-merges (1000 ifs, all locals used after)",
			gen: func(n int) []byte {
				expr := repeatN([]byte{0x41, 0x00, 0x04, 0x40, 0x0b}, 1000)
				for i := range n {
					expr = append(expr, localGet(uint32(i))...)
					expr = append(expr, opDrop...)
				}
				return sweepModule{bodies: []sweepBody{{locals: localsOf(n), expr: expr}}}.bytes()
			},
			explore: []int{1_000, 2_000},
		},
		{
			name: "if-merges x locals (1000 locals used after)",
			gen: func(n int) []byte {
				expr := repeatN([]byte{0x41, 0x00, 0x04, 0x40, 0x0b}, n)
				for i := range 1000 {
					expr = append(expr, localGet(uint32(i))...)
					expr = append(expr, opDrop...)
				}
				return sweepModule{bodies: []sweepBody{{locals: localsOf(1000), expr: expr}}}.bytes()
			},
			explore: []int{500, 1_000, 2_000},
		},
		{
			name: "br_table labels (one br_table)",
			gen: func(n int) []byte {
				return sweepModule{bodies: []sweepBody{{expr: brTable(n)}}}.bytes()
			},
			explore: []int{2_000, 8_000, 32_000},
		},
		{
			name: "locals x blocks (20 functions, L=B=n)",
			gen: func(n int) []byte {
				return sweepModule{funcs: make([]uint32, 19), bodies: manyBodies(localsMerges(n, n), 20)}.bytes()
			},
			explore: []int{300, 700},
		},
		{
			name: "locals x blocks (one function, 20 blocks)",
			gen: func(n int) []byte {
				return sweepModule{bodies: []sweepBody{localsMerges(n, 20)}}.bytes()
			},
			explore: []int{5_000, 25_000}, // 50,000: 85 s
		},
		{
			name: "functions",
			gen: func(n int) []byte {
				return sweepModule{funcs: make([]uint32, n-1)}.bytes()
			},
			explore: []int{10_000, 100_000},
		},
		{
			name: "types (10 params each)",
			gen: func(n int) []byte {
				t := make([]wasmbin.FuncType, n)
				for i := range t {
					t[i] = wasmbin.FuncType{Params: []wasmbin.ValType{wasmbin.I32, wasmbin.I32, wasmbin.I32, wasmbin.I32, wasmbin.I32, wasmbin.I32, wasmbin.I32, wasmbin.I32, wasmbin.I32, byte2val(i)}}
				}
				return sweepModule{types: t}.bytes()
			},
			explore: []int{10_000, 100_000, 1_000_000},
		},
		{
			name: "type arity (1000 types of n parameters)",
			gen: func(n int) []byte {
				return sweepModule{types: wideTypes(1000, n)}.bytes()
			},
			explore: []int{100, 300, 1_000},
		},
		{
			name: "types of 100 parameters",
			gen: func(n int) []byte {
				return sweepModule{types: wideTypes(n, 100)}.bytes()
			},
			explore: []int{1_000, 10_000},
		},
		{
			// Every br_table edge carries its label's values.
			name: "br_table labels x label arity (1000 results)",
			gen: func(n int) []byte {
				return sweepModule{types: fill1000Results(), bodies: []sweepBody{{expr: brTableWide(n, 1000)}}}.bytes()
			},
			explore: []int{1_000, 4_000}, // 16,000: 39 s
		},
		{
			name: "br_ifs x label arity (1000 results)",
			gen: func(n int) []byte {
				b := []byte{0x02, 0x01}
				b = append(b, repeatN(i32Zero, 1000)...)
				b = append(b, repeatN([]byte{0x41, 0x00, 0x0d, 0x00}, n)...)
				b = append(b, 0x0b)
				b = append(b, repeatN(opDrop, 1000)...)
				return sweepModule{types: fill1000Results(), bodies: []sweepBody{{expr: b}}}.bytes()
			},
			explore: []int{1_000, 4_000},
		},
		{
			name: "imports",
			gen: func(n int) []byte {
				return sweepModule{imports: n}.bytes()
			},
			explore: []int{10_000, 100_000},
		},
		{
			name: "exports",
			gen: func(n int) []byte {
				return sweepModule{exports: n}.bytes()
			},
			explore: []int{10_000, 99_000},
		},
		{
			name: "globals (immutable, unused)",
			gen: func(n int) []byte {
				g := make([]wasmbin.GlobalType, n)
				for i := range g {
					g[i] = wasmbin.GlobalType{Type: wasmbin.I64}
				}
				return sweepModule{globals: g}.bytes()
			},
			explore: []int{100_000, 1_000_000},
		},
		{
			name: "global.get of mutable globals",
			gen: func(n int) []byte {
				var expr []byte
				for i := range n {
					expr = append(expr, globalGet(uint32(i))...)
					expr = append(expr, opDrop...)
				}
				return sweepModule{globals: mutableGlobals(n), bodies: []sweepBody{{expr: expr}}}.bytes()
			},
			explore: []int{10_000, 100_000},
		},
		{
			name: "br_tables of 65536 labels",
			gen: func(n int) []byte {
				var expr []byte
				for range n {
					expr = append(expr, brTable(65_536)...)
				}
				return sweepModule{bodies: []sweepBody{{expr: expr}}}.bytes()
			},
			explore: []int{1, 4}, // 16: 45 s, 2.5 GB
		},
		{
			name: "straight code (bytes of i32.const 0; drop)",
			gen: func(n int) []byte {
				per := 1 << 20
				var bodies []sweepBody
				for left := n; left > 0; left -= per {
					k := min(left, per) / 3
					bodies = append(bodies, sweepBody{expr: repeatN([]byte{0x41, 0x00, 0x1a}, k)})
				}
				return sweepModule{funcs: make([]uint32, len(bodies)-1), bodies: bodies}.bytes()
			},
			explore: []int{1 << 20, 4 << 20},
		},
	}
}

// localsMerges is a body with l locals, b sequential ifs (each a merge
// point), then a read of every local: l phis at every merge.
func localsMerges(l, b int) sweepBody {
	expr := repeatN([]byte{0x41, 0x00, 0x04, 0x40, 0x0b}, b)
	for i := range l {
		expr = append(expr, localGet(uint32(i))...)
		expr = append(expr, opDrop...)
	}
	return sweepBody{locals: localsOf(l), expr: expr}
}

// fill1000Results is type 1: () -> (1,000 × i32).
func fill1000Results() []wasmbin.FuncType {
	r := make([]wasmbin.ValType, 1000)
	for i := range r {
		r[i] = wasmbin.I32
	}
	return []wasmbin.FuncType{{Results: r}}
}

// brTableWide is a block of type 1 (arity results) ended by a br_table of
// n labels, all to that block, and the drops of its results.
func brTableWide(n, arity int) []byte {
	b := []byte{0x02, 0x01} // block (type 1)
	b = append(b, repeatN(i32Zero, arity)...)
	b = append(b, 0x41, 0x00, 0x0e)
	b = wasmbin.AppendU32(b, uint32(n))
	b = append(b, make([]byte, n+1)...)
	b = append(b, 0x0b)
	return append(b, repeatN(opDrop, arity)...)
}

// wideTypes is n distinct function types of arity parameters each.
func wideTypes(n, arity int) []wasmbin.FuncType {
	t := make([]wasmbin.FuncType, n)
	for i := range t {
		p := make([]wasmbin.ValType, arity)
		for j := range p {
			p[j] = byte2val(i + j)
		}
		t[i] = wasmbin.FuncType{Params: p}
	}
	return t
}

func byte2val(i int) wasmbin.ValType {
	return []wasmbin.ValType{wasmbin.I32, wasmbin.I64, wasmbin.F32, wasmbin.F64}[i%4]
}

// sweepRun is what the child measured.
type sweepRun struct {
	size     int
	bytes    int
	seconds  float64
	maxRSS   int64 // bytes
	problems string
}

// sweepChild runs the upload path on the module of dimension name at size
// n and prints the time, its peak RSS and the problems.
func sweepChild(t *testing.T, spec string) {
	name, nstr, _ := strings.Cut(spec, "|")
	n, err := strconv.Atoi(nstr)
	if err != nil {
		t.Fatal(err)
	}
	var wasm []byte
	for _, d := range sweepDims() {
		if d.name == name {
			wasm = d.gen(n)
		}
	}
	for _, c := range limitCases() {
		if c.name == name {
			wasm = c.gen(limits.DefaultStructure())
		}
	}
	if wasm == nil {
		t.Fatalf("no dimension %q", name)
	}
	start := time.Now()
	ps := Check(wasm, defaultOpts)
	var problems []string
	for _, p := range ps {
		problems = append(problems, p.String())
	}
	ctx := context.Background()
	var stages []string
	lap := time.Now()
	stage := func(name string) {
		stages = append(stages, fmt.Sprintf("%s %.2fs", name, time.Since(lap).Seconds()))
		lap = time.Now()
	}
	stage("check")
	if len(ps) == 0 || os.Getenv("SUBAKO_SWEEP_FORCE") != "" {
		if err := wasmvalid.Validate(ctx, wazero.NewRuntimeConfigInterpreter().WithCoreFeatures(api.CoreFeaturesV2), wasm); err != nil {
			problems = append(problems, "validate: "+err.Error())
		}
		stage("validate")
		metered, err := fuel.Instrument(wasm)
		if err != nil {
			t.Fatalf("instrument: %v", err)
		}
		stage("instrument")
		wz := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfig().WithCoreFeatures(api.CoreFeaturesV2))
		if c, err := wz.CompileModule(ctx, metered); err != nil {
			problems = append(problems, "compile: "+err.Error())
		} else {
			c.Close(ctx)
		}
		wz.Close(ctx)
		stage("compile")
	}
	problems = append(problems, strings.Join(stages, ", "))
	fmt.Printf("SWEEP %d %.3f %d %q\n", len(wasm), time.Since(start).Seconds(), peakRSS(t), strings.Join(problems, "; "))
}

// peakRSS is this process's peak resident set (VmHWM), in bytes. The
// kernel's rusage of a child is no use here: it counts the parent's
// resident set at the fork.
func peakRSS(t *testing.T) int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Skipf("no /proc/self/status: %v", err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return kb << 10
		}
	}
	t.Fatal("no VmHWM in /proc/self/status")
	return 0
}

// runSweepChild runs one measurement in a fresh process.
func runSweepChild(t *testing.T, dim string, n int, timeout time.Duration) (sweepRun, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestCompileCostAtLimits$", "-test.v")
	cmd.Env = append(os.Environ(), "SUBAKO_SWEEP_CHILD="+dim+"|"+strconv.Itoa(n))
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	r := sweepRun{size: n}
	if err != nil {
		return r, fmt.Errorf("%s at %d: %v\n%s", dim, n, err, out.String())
	}
	for _, line := range strings.Split(out.String(), "\n") {
		if rest, ok := strings.CutPrefix(line, "SWEEP "); ok {
			if _, err := fmt.Sscanf(rest, "%d %f %d %q", &r.bytes, &r.seconds, &r.maxRSS, &r.problems); err != nil {
				return r, fmt.Errorf("%s: cannot parse %q: %v", dim, line, err)
			}
			return r, nil
		}
	}
	return r, fmt.Errorf("%s at %d: no result\n%s", dim, n, out.String())
}

func TestCompileCostAtLimits(t *testing.T) {
	if spec := os.Getenv("SUBAKO_SWEEP_CHILD"); spec != "" {
		sweepChild(t, spec)
		return
	}
	if testing.Short() {
		t.Skip("the compile-cost sweep compiles a module at every limit (-short skips it)")
	}
	only := os.Getenv("SUBAKO_SWEEP_ONLY")
	if os.Getenv("SUBAKO_SWEEP") == "explore" {
		for _, d := range sweepDims() {
			if only != "" && !strings.Contains(d.name, only) {
				continue
			}
			for _, n := range d.explore {
				r, err := runSweepChild(t, d.name, n, 3*time.Minute)
				if err != nil {
					t.Logf("%v", err)
					break
				}
				t.Logf("%-55s n=%-9d %7.2f s %7.0f MB  %.150s", d.name, n, r.seconds, float64(r.maxRSS)/1e6, r.problems)
			}
		}
		return
	}
	cases := limitCases()
	for _, c := range cases {
		if ps := Check(c.gen(limits.DefaultStructure()), defaultOpts); len(ps) > 0 {
			t.Errorf("%s: the module at the limits is rejected:\n%s", c.name, list(ps))
		}
	}
	if os.Getenv("SUBAKO_SWEEP") != "limits" {
		t.Log("SUBAKO_SWEEP=limits compiles each module at the limits and reports time and peak RSS")
		return
	}
	var table strings.Builder
	table.WriteString("| module at the default limits | bound | size | time | peak RSS |\n|---|---|--:|--:|--:|\n")
	for _, c := range cases {
		if only != "" && !strings.Contains(c.name, only) {
			continue
		}
		r, err := runSweepChild(t, c.name, 0, 3*time.Minute)
		if err != nil {
			t.Error(err)
			continue
		}
		fmt.Fprintf(&table, "| %s | %s | %s | %.2f s | %.0f MB |\n", c.name, c.bound, limits.HumanSize(int64(r.bytes)), r.seconds, float64(r.maxRSS)/1e6)
		t.Logf("%s: %.2f s, %.0f MB (%s)", c.name, r.seconds, float64(r.maxRSS)/1e6, r.problems)
		if r.maxRSS > sweepMaxRSS {
			t.Errorf("%s: peak RSS %d bytes, above %d", c.name, r.maxRSS, sweepMaxRSS)
		}
	}
	t.Log("\n" + table.String())
}

// sweepMaxRSS is what compiling one module at the limits may take: a
// generous whole-process bound (the 14 MB SDK module takes about 1 GB).
const sweepMaxRSS = 3 << 30
