package modcheck

import (
	"fmt"
	"io"
	"strings"

	"github.com/subako/subako-runner/internal/wasmbin"
	"github.com/subako/subako-runner/limits"
)

// instrClass is a class of instructions by what wazero's optimising
// compiler spends on one: the classes of the compile cost model
// (limits.Structure.CompileCost). Each class's weight was measured on a
// live chain of its instructions (classsweep_test.go): each takes the
// previous one's result and the last is stored, so the compiler removes
// none of them.
type instrClass uint8

const (
	// classFree: constants, locals, drop, nop, block structure, br and
	// return. The compiler lowers them to little or nothing (the control
	// bounds price blocks and branches).
	classFree instrClass = iota
	// classALU: integer and float arithmetic, comparisons, select,
	// extensions, wrap, promote/demote, reinterpretation, globals,
	// memory.size and table.size, references.
	classALU
	// classFloatMinMax: min, max and copysign, which handle NaN and signed
	// zero in several instructions.
	classFloatMinMax
	// classDivision: integer division and remainder, each with its traps
	// (zero, overflow).
	classDivision
	// classConversion: float to integer truncations (trapping and
	// saturating) and integer to float conversions.
	classConversion
	// classLoad: loads, with their bounds check and its trap; table.get
	// and table.set.
	classLoad
	// classStore: stores.
	classStore
	// classBranch: br_if, br_table and br_on_*, which end a block.
	classBranch
	// classCall: a call of a defined function.
	classCall
	// classCallIndirect: call_indirect and call_ref, with their table and
	// signature checks, and a call of an imported (host) function.
	classCallIndirect
	// classMetered: memory.grow, the bulk memory and table instructions:
	// the meter charges each dynamically and checks the counter after it
	// (an if and a call), on top of the host call.
	classMetered
	// classSIMD: every SIMD instruction; many are lowered to long
	// sequences of machine instructions (i8x16.popcnt, the unsigned
	// conversions).
	classSIMD
	numClasses
)

var classNames = [numClasses]string{"free", "ALU", "float min/max", "division", "conversion", "load", "store", "branch", "call", "indirect or host call", "metered bulk", "SIMD"}

func (c instrClass) String() string { return classNames[c] }

// classWeights are the compile cost units of one instruction of each
// class: a unit is a microsecond of compile CPU per instruction of a
// 16,384-long chain on the 2-core machine the sweep ran on (under load),
// less in longer functions, and 100 to 200 bytes of the compiler's peak
// memory. Each is the costliest chain of its class measured, rounded up
// (docs/security.md has the measurements); a load's is its bounds check,
// which funcCost leaves out when wazero skips it.
var classWeights = [numClasses]int64{
	classFree:         0,
	classALU:          5,
	classFloatMinMax:  14,
	classDivision:     26,
	classConversion:   28,
	classLoad:         34,
	classStore:        34,
	classBranch:       8,
	classCall:         12,
	classCallIndirect: 40,
	classMetered:      64,
	classSIMD:         28,
}

// classCodeBytes are the bytes of machine code (as wazero's compilation
// cache stores it) one instruction of each class compiles to, measured
// like the weights; a load whose check wazero skips is an ALU
// instruction's. They make the package set's resident estimate
// (CodeBytes).
var classCodeBytes = [numClasses]int64{
	classFree:         1,
	classALU:          8,
	classFloatMinMax:  40,
	classDivision:     125,
	classConversion:   120,
	classLoad:         60,
	classStore:        66,
	classBranch:       13,
	classCall:         15,
	classCallIndirect: 206,
	classMetered:      142,
	classSIMD:         84,
}

// classOf is the class of op. imported says whether a call's target is an
// imported function; an opcode the table does not know is priced as the
// costliest class.
func classOf(op wasmbin.Opcode, importedCall bool) instrClass {
	switch op.Prefix() {
	case wasmbin.PrefixSIMD:
		return classSIMD
	case wasmbin.PrefixMisc:
		switch s := op.Sub(); {
		case s <= 7: // trunc_sat
			return classConversion
		case s == 9 || s == 13: // data.drop, elem.drop
			return classALU
		case s == 16: // table.size
			return classALU
		case s <= 17: // memory.init, copy, fill; table.init, copy, grow, fill
			return classMetered
		}
		return classSIMD
	case wasmbin.PrefixThreads:
		return classLoad // refused at upload (threads); priced as a load
	case 0:
	default:
		return classSIMD
	}
	b := byte(op)
	switch {
	case b <= 0x0b: // unreachable, nop, block, loop, if, else, try..., end
		return classFree
	case b == 0x0c || b == 0x0f: // br, return
		return classFree
	case b == 0x0d || b == 0x0e || b == 0xd5 || b == 0xd6: // br_if, br_table, br_on_null, br_on_non_null
		return classBranch
	case b == 0x10 || b == 0x12: // call, return_call
		if importedCall {
			return classCallIndirect
		}
		return classCall
	case b >= 0x11 && b <= 0x15: // call_indirect, return_call_indirect, call_ref, return_call_ref
		return classCallIndirect
	case b >= 0x18 && b <= 0x19: // delegate, catch_all
		return classFree
	case b == 0x1a: // drop
		return classFree
	case b == 0x1b || b == 0x1c: // select
		return classALU
	case b >= 0x20 && b <= 0x22: // local.get, set, tee
		return classFree
	case b == 0x23 || b == 0x24: // global.get, set
		return classALU
	case b == 0x25 || b == 0x26: // table.get, set
		return classLoad
	case b >= 0x28 && b <= 0x35: // loads
		return classLoad
	case b >= 0x36 && b <= 0x3e: // stores
		return classStore
	case b == 0x3f: // memory.size
		return classALU
	case b == 0x40: // memory.grow
		return classMetered
	case b >= 0x41 && b <= 0x44: // constants
		return classFree
	case b >= 0x6d && b <= 0x70, b >= 0x7f && b <= 0x82: // div, rem
		return classDivision
	case b == 0x96 || b == 0x97 || b == 0x98 || b == 0xa4 || b == 0xa5 || b == 0xa6: // f32/f64 min, max, copysign
		return classFloatMinMax
	case b >= 0xa8 && b <= 0xab, b >= 0xae && b <= 0xb5, b >= 0xb7 && b <= 0xba: // trunc, convert
		return classConversion
	case b >= 0x45 && b <= 0xc4: // the rest of the numeric instructions
		return classALU
	case b >= 0xd0 && b <= 0xd4: // ref.null, is_null, func, eq, as_non_null
		return classALU
	}
	return classSIMD
}

// isAddressOnly reports whether op is a memory access whose only operand
// is its address (a load): that operand is what the instruction before it
// pushed. A store's address is under its value, which a linear pass does
// not follow, so a store always pays for its check.
func isAddressOnly(op wasmbin.Opcode) bool {
	switch op.Prefix() {
	case 0:
		return op >= 0x28 && op <= 0x35
	case wasmbin.PrefixSIMD:
		s := op.Sub()
		return s <= 0x0a || s == 0x5c || s == 0x5d // v128.load*, load*_splat, load*_zero
	}
	return false
}

// funcCost weighs one function's instructions.
//
// A load whose address is read straight from a local or a global that an
// earlier load of the function already used as its address, and that has
// not been written since (nor a global reloaded after a call), is weighed
// as an ALU instruction: wazero remembers the bound it checked for
// that SSA value and does not check it again (its frontend's
// knownSafeBounds). Every other access pays for its check.
type funcCost struct {
	total   int64
	code    int64             // machine code bytes (classCodeBytes)
	byClass [numClasses]int64 // instructions of each class
	// version of each local and global (set and tee bump it; a call bumps
	// every global, through calls) and, for those used as an address, the
	// version that was (plus one; zero: never).
	version, checked []uint64
	calls            uint64
	locals           int
	lastGet          int // the local or global the previous instruction read, or -1
}

// tracked is how many locals and globals funcCost follows; an address
// read from one past them is weighed as checked every time.
const tracked = 1 << 17

func (f *funcCost) reset(locals int64, globals int) {
	f.locals = int(min(locals, tracked))
	n := f.locals + min(globals, tracked)
	f.version = resize(f.version, n)
	f.checked = resize(f.checked, n)
	f.total, f.code, f.byClass, f.lastGet, f.calls = 0, 0, [numClasses]int64{}, -1, 0
}

func resize(s []uint64, n int) []uint64 {
	if cap(s) < n {
		return make([]uint64, n)
	}
	s = s[:n]
	clear(s)
	return s
}

// note adds in; imported is the number of imported functions.
func (f *funcCost) note(in *wasmbin.Instr, imported uint32) {
	call := in.Op == wasmbin.OpCall || in.Op == wasmbin.OpReturnCall
	c := classOf(in.Op, call && in.Index < imported)
	w, code := classWeights[c], classCodeBytes[c]
	if x := f.lastGet; isAddressOnly(in.Op) && x >= 0 {
		v := f.version[x]
		if x >= f.locals {
			v = v<<32 | f.calls&(1<<32-1)
		}
		if f.checked[x] == v+1 {
			w, code = classWeights[classALU], classCodeBytes[classALU]
		}
		f.checked[x] = v + 1
	}
	f.total = satAdd(f.total, w)
	f.code = satAdd(f.code, code)
	f.byClass[c]++
	f.lastGet = -1
	switch in.Op {
	case wasmbin.OpLocalGet:
		if int(in.Index) < f.locals {
			f.lastGet = int(in.Index)
		}
	case wasmbin.OpGlobalGet:
		if g := f.locals + int(in.Index); int(in.Index) < tracked && g < len(f.version) {
			f.lastGet = g
		}
	case wasmbin.OpLocalSet, wasmbin.OpLocalTee:
		if int(in.Index) < f.locals {
			f.version[in.Index]++
		}
	case wasmbin.OpGlobalSet:
		if g := f.locals + int(in.Index); int(in.Index) < tracked && g < len(f.version) {
			f.version[g]++
		}
	case wasmbin.OpCall, wasmbin.OpCallIndirect, wasmbin.OpReturnCall, wasmbin.OpReturnCallIndirect, wasmbin.OpCallRef, wasmbin.OpReturnCallRef:
		f.calls++
	}
}

// blocksEnded is how many compiled blocks op ends without being a block
// of the module's: a branch that may fall through ends one, and so does
// an instruction after which the meter checks its counter (an if and a
// call of its refuel function): a call (the meter cannot know from the
// call site whether the callee charges) and memory.grow; a bulk copy or
// init counts as two and a fill as three, what their quadratic part
// measured against an if's. The control and local costs count them with
// the blocks, since wazero's work grows with the compiled blocks (in one
// function, 16,384 br_ifs took 3.7 s of CPU, as many host calls 10 s, 4,096
// memory.fill 2.9 s).
func blocksEnded(op wasmbin.Opcode) int {
	switch op {
	case wasmbin.OpBrIf, wasmbin.OpBrTable, wasmbin.OpBrOnNull, wasmbin.OpBrOnNonNull,
		wasmbin.OpCall, wasmbin.OpCallIndirect, wasmbin.OpCallRef, wasmbin.OpMemoryGrow:
		return 1
	case wasmbin.OpMemoryFill, wasmbin.OpTableFill:
		return 3
	}
	if classOf(op, false) == classMetered {
		return 2
	}
	return 0
}

// compileShape sums the compile cost over a module's functions, for
// limits.Structure's CompileCost and FunctionCompileCost, and keeps the
// function that costs most, to name it.
type compileShape struct {
	limits   limits.Structure
	imported uint32 // imported functions: a call below is a host call
	globals  int
	fc       funcCost
	total    int64

	fn                int
	topFn             int
	topVal            int64
	topClasses        [numClasses]int64
	overFn, overCount int
	overVal           int64
	overClasses       [numClasses]int64
}

func (s *compileShape) start(fn int, locals int64) {
	s.fn = fn
	s.fc.reset(locals, s.globals)
}

func (s *compileShape) note(in *wasmbin.Instr) { s.fc.note(in, s.imported) }

func (s *compileShape) end() {
	v := s.fc.total
	s.total = satAdd(s.total, v)
	if v > s.topVal {
		s.topFn, s.topVal, s.topClasses = s.fn, v, s.fc.byClass
	}
	if l := s.limits.FunctionCompileCost; l > 0 && v > l {
		if s.overCount == 0 {
			s.overFn, s.overVal, s.overClasses = s.fn, v, s.fc.byClass
		}
		s.overCount++
	}
}

func (s *compileShape) report(c *checker) {
	if s.overCount > 0 {
		more := ""
		if s.overCount > 1 {
			more = fmt.Sprintf(" (%d functions in all)", s.overCount)
		}
		c.add(CodeModuleTooComplex, "%s would take too long to compile: its compile cost (its instructions weighted by what compiling each class costs) is %d, above the function compile cost limit of %d%s; it has %s", c.funcName(s.overFn), s.overVal, s.limits.FunctionCompileCost, more, classSummary(s.overClasses))
	}
	if l := s.limits.CompileCost; l > 0 && s.total > l {
		c.add(CodeModuleTooComplex, "the code would take too long to compile: its compile cost (every instruction weighted by what compiling its class costs) is %d, above the compile cost limit of %d; %s contributes %d with %s", s.total, l, c.funcName(s.topFn), s.topVal, classSummary(s.topClasses))
	}
}

// classSummary names the counts of the costly classes, costliest first:
// "120000 SIMD, 300 load".
func classSummary(n [numClasses]int64) string {
	var parts []string
	for range numClasses {
		best, bestCost := instrClass(0), int64(0)
		for c := classALU; c < numClasses; c++ {
			if cost := n[c] * classWeights[c]; cost > bestCost {
				best, bestCost = c, cost
			}
		}
		if bestCost == 0 {
			break
		}
		parts = append(parts, fmt.Sprintf("%d %s", n[best], best))
		n[best] = 0
		if len(parts) == 3 {
			break
		}
	}
	if len(parts) == 0 {
		return "no weighed instructions"
	}
	return strings.Join(parts, ", ") + " instructions"
}

// functionCodeBytes is the machine code and metadata of a function beyond
// its instructions' (prologue, epilogue, the cache's record of it).
const functionCodeBytes = 64

// CodeBytes estimates the machine code wazero's compiler makes of a
// module, from the same pass and classes as the compile cost: what a
// compiled package keeps mapped while it is open. A module that does not
// decode is an error.
func CodeBytes(wasm []byte) (int64, error) {
	m, err := wasmbin.Decode(wasm)
	if err != nil {
		return 0, err
	}
	imported := uint32(m.NumImported(wasmbin.KindFunc))
	globals := len(m.Globals) + m.NumImported(wasmbin.KindGlobal)
	var f funcCost
	var in wasmbin.Instr
	w := wasmbin.NewWalker(nil, 0)
	var total int64
	for i := range m.Codes {
		code := &m.Codes[i]
		var locals int64
		for _, l := range code.Locals {
			locals += int64(l.Count)
		}
		if i < len(m.Functions) && int(m.Functions[i]) < len(m.Types) {
			locals += int64(len(m.Types[m.Functions[i]].Params))
		}
		f.reset(locals, globals)
		w.Reset(code.Expr, code.ExprOffset)
		for {
			err := w.Next(&in)
			if err == io.EOF {
				break
			}
			if err != nil {
				return 0, err
			}
			f.note(&in, imported)
		}
		total = satAdd(total, satAdd(f.code, functionCodeBytes))
	}
	return total, nil
}
