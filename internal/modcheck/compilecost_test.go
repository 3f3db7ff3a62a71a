package modcheck

import (
	"fmt"
	"testing"

	"github.com/subako/subako-runner/internal/wasmbin"
	"github.com/subako/subako-runner/limits"
)

// TestClassOfEveryOpcodeFamily pins the compile cost model's class of
// each opcode family: a change of weights is a measurement, a change of
// class is a decision, and both show here.
func TestClassOfEveryOpcodeFamily(t *testing.T) {
	simdOp := func(sub uint32) wasmbin.Opcode { return wasmbin.Opcode(uint32(wasmbin.PrefixSIMD)<<16 | sub) }
	miscOp := func(sub uint32) wasmbin.Opcode { return wasmbin.Opcode(uint32(wasmbin.PrefixMisc)<<16 | sub) }
	tests := []struct {
		name     string
		op       wasmbin.Opcode
		imported bool
		want     instrClass
	}{
		{"nop", 0x01, false, classFree},
		{"block", wasmbin.OpBlock, false, classFree},
		{"end", wasmbin.OpEnd, false, classFree},
		{"br", wasmbin.OpBr, false, classFree},
		{"return", 0x0f, false, classFree},
		{"drop", 0x1a, false, classFree},
		{"local.get", wasmbin.OpLocalGet, false, classFree},
		{"local.tee", wasmbin.OpLocalTee, false, classFree},
		{"i32.const", 0x41, false, classFree},
		{"f64.const", 0x44, false, classFree},
		{"br_if", wasmbin.OpBrIf, false, classBranch},
		{"br_table", wasmbin.OpBrTable, false, classBranch},
		{"br_on_null", wasmbin.OpBrOnNull, false, classBranch},
		{"call of a defined function", wasmbin.OpCall, false, classCall},
		{"return_call of a defined function", wasmbin.OpReturnCall, false, classCall},
		{"call of an import", wasmbin.OpCall, true, classCallIndirect},
		{"call_indirect", wasmbin.OpCallIndirect, false, classCallIndirect},
		{"return_call_indirect", wasmbin.OpReturnCallIndirect, false, classCallIndirect},
		{"call_ref", wasmbin.OpCallRef, false, classCallIndirect},
		{"select", 0x1b, false, classALU},
		{"typed select", 0x1c, false, classALU},
		{"global.get", wasmbin.OpGlobalGet, false, classALU},
		{"global.set", wasmbin.OpGlobalSet, false, classALU},
		{"table.get", 0x25, false, classLoad},
		{"i32.load", 0x28, false, classLoad},
		{"i64.load32_u", 0x35, false, classLoad},
		{"i32.store", 0x36, false, classStore},
		{"i64.store32", 0x3e, false, classStore},
		{"memory.size", 0x3f, false, classALU},
		{"memory.grow", wasmbin.OpMemoryGrow, false, classMetered},
		{"i32.eqz", 0x45, false, classALU},
		{"i32.clz", 0x67, false, classALU},
		{"i32.mul", 0x6c, false, classALU},
		{"i32.div_s", 0x6d, false, classDivision},
		{"i32.rem_u", 0x70, false, classDivision},
		{"i32.and", 0x71, false, classALU},
		{"i64.mul", 0x7e, false, classALU},
		{"i64.div_s", 0x7f, false, classDivision},
		{"i64.rem_u", 0x82, false, classDivision},
		{"i64.and", 0x83, false, classALU},
		{"f32.sqrt", 0x91, false, classALU},
		{"f32.min", 0x96, false, classFloatMinMax},
		{"f32.copysign", 0x98, false, classFloatMinMax},
		{"f64.add", 0xa0, false, classALU},
		{"f64.max", 0xa5, false, classFloatMinMax},
		{"i32.wrap_i64", 0xa7, false, classALU},
		{"i32.trunc_f32_s", 0xa8, false, classConversion},
		{"i32.trunc_f64_u", 0xab, false, classConversion},
		{"i64.extend_i32_s", 0xac, false, classALU},
		{"i64.trunc_f32_s", 0xae, false, classConversion},
		{"f32.convert_i32_s", 0xb2, false, classConversion},
		{"f32.convert_i64_u", 0xb5, false, classConversion},
		{"f32.demote_f64", 0xb6, false, classALU},
		{"f64.convert_i64_u", 0xba, false, classConversion},
		{"f64.promote_f32", 0xbb, false, classALU},
		{"i32.reinterpret_f32", 0xbc, false, classALU},
		{"i64.extend32_s", 0xc4, false, classALU},
		{"ref.is_null", 0xd1, false, classALU},
		{"i32.trunc_sat_f32_s", miscOp(0), false, classConversion},
		{"i64.trunc_sat_f64_u", miscOp(7), false, classConversion},
		{"memory.init", miscOp(8), false, classMetered},
		{"data.drop", miscOp(9), false, classALU},
		{"memory.copy", miscOp(10), false, classMetered},
		{"memory.fill", wasmbin.OpMemoryFill, false, classMetered},
		{"table.copy", miscOp(14), false, classMetered},
		{"table.grow", wasmbin.OpTableGrow, false, classMetered},
		{"table.size", miscOp(16), false, classALU},
		{"table.fill", miscOp(17), false, classMetered},
		{"v128.load", simdOp(0x00), false, classSIMD},
		{"i8x16.shuffle", simdOp(0x0d), false, classSIMD},
		{"i8x16.popcnt", simdOp(0x62), false, classSIMD},
		{"f64x2.convert_low_i32x4_u", simdOp(0xff), false, classSIMD},
		{"an atomic", wasmbin.Opcode(uint32(wasmbin.PrefixThreads)<<16 | 0x10), false, classLoad},
		{"an unknown single-byte opcode", 0xff, false, classSIMD},
		{"an unknown 0xFC opcode", miscOp(200), false, classSIMD},
	}
	for _, tt := range tests {
		if got := classOf(tt.op, tt.imported); got != tt.want {
			t.Errorf("%s (%#x): class %s, want %s", tt.name, uint32(tt.op), got, tt.want)
		}
	}
	// The weights keep their order: what is costlier to compile weighs more.
	for _, c := range []struct{ cheaper, dearer instrClass }{
		{classFree, classALU}, {classALU, classFloatMinMax}, {classALU, classCall}, {classALU, classSIMD},
		{classCall, classCallIndirect}, {classDivision, classLoad}, {classCallIndirect, classMetered},
	} {
		if classWeights[c.cheaper] >= classWeights[c.dearer] {
			t.Errorf("%s weighs %d, not less than %s's %d", c.cheaper, classWeights[c.cheaper], c.dearer, classWeights[c.dearer])
		}
	}
}

// TestCheckCompileCostBoundary pins both compile cost bounds: a module one
// unit under or at the limit passes, one unit over is module_too_complex
// naming the function, the cost, the limit and what it is made of.
func TestCheckCompileCostBoundary(t *testing.T) {
	alu := classWeights[classALU]
	simdW := classWeights[classSIMD]
	// eqz is i32.const 0, k × i32.eqz, drop: k ALU instructions.
	eqz := func(k int) sweepBody {
		return sweepBody{expr: append(append([]byte{0x41, 0x00}, repeatN([]byte{0x45}, k)...), 0x1a)}
	}
	// popcnt is a v128 constant, k × i8x16.popcnt, drop.
	popcnt := func(k int) sweepBody {
		b := append([]byte{0xfd, 0x0c}, make([]byte, 16)...)
		return sweepBody{expr: append(append(b, repeatN([]byte{0xfd, 0x62}, k)...), 0x1a)}
	}
	tests := []struct {
		name          string
		st            limits.Structure
		under, at, up []byte
		phrase        []string
	}{
		{"one function's cost", limits.Structure{FunctionCompileCost: 100 * alu},
			sweepModule{bodies: []sweepBody{eqz(99)}}.bytes(), sweepModule{bodies: []sweepBody{eqz(100)}}.bytes(), sweepModule{bodies: []sweepBody{eqz(101)}}.bytes(),
			[]string{`function 0 (export "_start") would take too long to compile`, "is 505, above the function compile cost limit of 500", "101 ALU instructions"}},
		{"one unit over", limits.Structure{FunctionCompileCost: 101*alu - 1},
			sweepModule{bodies: []sweepBody{eqz(99)}}.bytes(), sweepModule{bodies: []sweepBody{eqz(100)}}.bytes(), sweepModule{bodies: []sweepBody{eqz(101)}}.bytes(),
			[]string{"is 505, above the function compile cost limit of 504"}},
		{"SIMD weighs more", limits.Structure{FunctionCompileCost: 10 * simdW},
			sweepModule{bodies: []sweepBody{popcnt(8)}}.bytes(), sweepModule{bodies: []sweepBody{popcnt(9)}}.bytes(), sweepModule{bodies: []sweepBody{popcnt(10)}}.bytes(),
			[]string{fmt.Sprintf("is %d, above the function compile cost limit of %d", 11*simdW, 10*simdW), "11 SIMD instructions"}}, // v128.const is one
		{"the module's cost, every function counted", limits.Structure{CompileCost: 300 * alu},
			sweepModule{funcs: []uint32{0, 0}, bodies: []sweepBody{eqz(100), eqz(100), eqz(99)}}.bytes(),
			sweepModule{funcs: []uint32{0, 0}, bodies: []sweepBody{eqz(100), eqz(100), eqz(100)}}.bytes(),
			sweepModule{funcs: []uint32{0, 0}, bodies: []sweepBody{eqz(100), eqz(101), eqz(100)}}.bytes(),
			[]string{"the code would take too long to compile", "is 1505, above the compile cost limit of 1500", "function 1 contributes 505 with 101 ALU instructions"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			opts := Options{Structure: tt.st}
			for name, check := range map[string]func([]byte, Options) []Problem{"Check": Check, "CheckStructure": CheckStructure} {
				for _, inside := range [][]byte{tt.under, tt.at} {
					if ps := check(inside, opts); len(ps) > 0 {
						t.Errorf("%s: a module inside the limit was rejected:\n%s", name, list(ps))
					}
				}
				found := false
				for _, p := range check(tt.up, opts) {
					found = found || p.Code == CodeModuleTooComplex && containsAll(p.Message, tt.phrase)
				}
				if !found {
					t.Errorf("%s: no %s problem naming %q one unit over the limit:\n%s", name, CodeModuleTooComplex, tt.phrase, list(check(tt.up, opts)))
				}
			}
		})
	}
}

// TestMemoryAccessesWeighTheirBoundsCheck: a load pays for its bounds
// check unless its address is a local or global an earlier load already
// checked and nothing wrote since, as wazero skips the check only then; a
// store always pays.
func TestMemoryAccessesWeighTheirBoundsCheck(t *testing.T) {
	const (
		get0  = "\x20\x00"
		set0  = "\x21\x00"
		get1  = "\x20\x01"
		gget0 = "\x23\x00"
		gset0 = "\x24\x00"
		load  = "\x28\x02\x00"
		store = "\x36\x02\x00"
		call  = "\x10\x00"
		drop  = "\x1a"
		zero  = "\x41\x00"
	)
	access, alu := classWeights[classLoad], classWeights[classALU]
	tests := []struct {
		name string
		expr string
		want int64
	}{
		{"one load", get0 + load + drop, access},
		{"the same local again", get0 + load + drop + get0 + load + drop, access + alu},
		{"a store after a load of the same local", get0 + load + drop + get0 + zero + store, access + classWeights[classStore]},
		{"the local written between", get0 + load + drop + zero + set0 + get0 + load + drop, access + access},
		{"another local", get0 + load + drop + get1 + load + drop, access + access},
		{"a computed address", zero + load + drop + zero + load + drop, access + access},
		{"a global twice", gget0 + load + drop + gget0 + load + drop, access + 3*alu},
		{"a global set between", gget0 + load + drop + zero + gset0 + gget0 + load + drop, access + access + 3*alu},
		{"a store whose value is a checked local", get0 + load + drop + zero + get0 + store, access + classWeights[classStore]},
		{"a global reloaded after a call", gget0 + load + drop + call + gget0 + load + drop, access + access + 2*alu + classWeights[classCall]},
		{"a local kept across a call", get0 + load + drop + call + get0 + load + drop, access + alu + classWeights[classCall]},
	}
	for _, tt := range tests {
		var f funcCost
		f.reset(2, 1)
		w := wasmbin.NewWalker([]byte(tt.expr+"\x0b"), 0)
		var in wasmbin.Instr
		for w.Next(&in) == nil {
			f.note(&in, 0)
		}
		if f.total != tt.want {
			t.Errorf("%s: cost %d, want %d", tt.name, f.total, tt.want)
		}
	}
}

// TestBranchesAndMeterChecksCountAsBlocks: the control cost counts the
// instructions that end a compiled block though the module has no block
// there (branches that fall through, and the meter's check after a call,
// memory.grow and bulk instructions, a fill as three and a copy as two):
// 16,384 br_ifs in one function took 3.7 s of CPU to compile, 16,384 host
// calls 10 s, 16,384 memory.fill over 45 s, under the control bound that
// counted only blocks.
func TestBranchesAndMeterChecksCountAsBlocks(t *testing.T) {
	brIfs := func(k int) []byte {
		return sweepModule{bodies: []sweepBody{{expr: repeatN([]byte{0x41, 0x00, 0x0d, 0x00}, k)}}}.bytes()
	}
	grows := func(k int) []byte {
		return sweepModule{bodies: []sweepBody{{expr: append(repeatN([]byte{0x41, 0x00, 0x40, 0x00, 0x1a}, k), 0x41, 0x00, 0x1a)}}}.bytes()
	}
	calls := func(k int) []byte {
		return sweepModule{imports: 1, bodies: []sweepBody{{expr: repeatN([]byte{0x41, 0x00, 0x41, 0x00, 0x41, 0x00, 0x41, 0x00, 0x10, 0x00, 0x1a}, k)}}}.bytes()
	}
	// bulk is k × (three zeros; the instruction); each counts blocks.
	bulk := func(op []byte) func(int) []byte {
		return func(k int) []byte {
			return sweepModule{bodies: []sweepBody{{expr: repeatN(append([]byte{0x41, 0x00, 0x41, 0x00, 0x41, 0x00}, op...), k)}}}.bytes()
		}
	}
	for _, c := range []struct {
		name   string
		gen    func(int) []byte
		blocks int // each counts
	}{
		{"br_if", brIfs, 1}, {"memory.grow", grows, 1}, {"host call", calls, 1},
		{"memory.copy", bulk([]byte{0xfc, 0x0a, 0x00, 0x00}), 2}, {"memory.fill", bulk([]byte{0xfc, 0x0b, 0x00}), 3},
	} {
		k := 100 / c.blocks
		limit := int64(k*c.blocks) * int64(k*c.blocks)
		opts := Options{Structure: limits.Structure{ControlCost: limit}}
		if ps := Check(c.gen(k), opts); len(ps) > 0 {
			t.Errorf("%s: %d in one function rejected at a control cost of %d:\n%s", c.name, k, limit, list(ps))
		}
		found := false
		for _, p := range Check(c.gen(k+1), opts) {
			found = found || p.Code == CodeModuleTooComplex && containsAll(p.Message, []string{fmt.Sprintf("is %d, above the limit of %d", (k+1)*c.blocks*(k+1)*c.blocks, limit)})
		}
		if !found {
			t.Errorf("%s: %d in one function not over a control cost of %d:\n%s", c.name, k+1, limit, list(Check(c.gen(k+1), opts)))
		}
	}
}

// TestParametersAreLocals: a function's parameters count against the
// locals bounds as its declared locals do; wazero gives each the same
// work (issue 37: without them, 1,000-parameter types were a compile bomb
// the locals bounds did not see).
func TestParametersAreLocals(t *testing.T) {
	// One function of type 1 (p parameters) with d declared locals.
	withParams := func(p, d int) []byte {
		params := make([]wasmbin.ValType, p)
		for i := range params {
			params[i] = wasmbin.I32
		}
		return sweepModule{types: []wasmbin.FuncType{{Params: params}}, funcs: []uint32{1},
			bodies: []sweepBody{emptyBody, {locals: localsOf(d)}}}.bytes()
	}
	tests := []struct {
		name         string
		st           limits.Structure
		inside, over []byte
		phrase       []string
	}{
		{"locals in all", limits.Structure{Locals: 100}, withParams(60, 40), withParams(61, 40),
			[]string{"101 locals (parameters included) in all", "locals limit of 100"}},
		// (98 + 1 + the meter's counter)² + _start's 1²
		{"local cost", limits.Structure{LocalCost: 10_001}, withParams(98, 1), withParams(99, 1),
			[]string{"local cost", "is 10202, above the limit of 10001", "(101 locals, 0 blocks)"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			opts := Options{Structure: tt.st}
			if ps := Check(tt.inside, opts); len(ps) > 0 {
				t.Errorf("inside the limit, rejected:\n%s", list(ps))
			}
			found := false
			for _, p := range Check(tt.over, opts) {
				found = found || p.Code == CodeModuleTooComplex && containsAll(p.Message, tt.phrase)
			}
			if !found {
				t.Errorf("one parameter over: no problem naming %q:\n%s", tt.phrase, list(Check(tt.over, opts)))
			}
		})
	}
}

// TestBrTableCostIsTheModulesTotal: the br_table cost bound is on all
// functions together, not on each (issue 37: compared per function, 16
// functions of a 65,536-label br_table each passed).
func TestBrTableCostIsTheModulesTotal(t *testing.T) {
	opts := Options{Structure: limits.Structure{BrTableCost: 2 * 100 * 100}}
	inside := sweepModule{funcs: []uint32{0}, bodies: []sweepBody{{expr: brTable(100)}, {expr: brTable(100)}}}.bytes()
	over := sweepModule{funcs: []uint32{0}, bodies: []sweepBody{{expr: brTable(100)}, {expr: brTable(101)}}}.bytes()
	if ps := Check(inside, opts); len(ps) > 0 {
		t.Errorf("two functions at the limit together rejected:\n%s", list(ps))
	}
	found := false
	for _, p := range Check(over, opts) {
		found = found || p.Code == CodeModuleTooComplex && containsAll(p.Message, []string{"br_table cost", "is 20201, above the limit of 20000", "function 1 contributes 10201"})
	}
	if !found {
		t.Errorf("two functions over the limit together: no problem:\n%s", list(Check(over, opts)))
	}
	// The red team's module: 16 functions of one 65,536-label br_table.
	bomb := sweepModule{funcs: make([]uint32, 15), bodies: manyBodies(sweepBody{expr: brTable(65_536)}, 16)}.bytes()
	found = false
	for _, p := range Check(bomb, defaultOpts) {
		found = found || p.Code == CodeModuleTooComplex && containsAll(p.Message, []string{"br_table cost", "68719476736"})
	}
	if !found {
		t.Errorf("16 functions of 65,536 labels: no br_table cost problem:\n%s", list(Check(bomb, defaultOpts)))
	}
}
