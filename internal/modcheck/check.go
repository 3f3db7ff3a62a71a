package modcheck

import (
	"errors"
	"fmt"
	"io"
	"math"
	"strings"

	"github.com/subako/subako-runner/internal/abi"
	"github.com/subako/subako-runner/internal/wasmbin"
	"github.com/subako/subako-runner/limits"
)

const pageSize = 64 << 10

// maxMalformedReports bounds the invalid_module problems for function
// bodies; the rest are counted in one more problem.
const maxMalformedReports = 3

// Check runs every check of docs/abi.md §2 on a module's bytes and
// returns every problem found, in a stable order (nil for a module that
// passes). A header that is not a core module (not_wasm, component) or a
// module that does not decode (invalid_module) is reported alone, since the
// other checks have nothing sound to look at; otherwise every check runs.
func Check(wasm []byte, opts Options) []Problem {
	if _, err := wasmbin.ParseHeader(wasm); err != nil {
		switch {
		case errors.Is(err, wasmbin.ErrNotWasm):
			return []Problem{{CodeNotWasm, "this is not a WebAssembly module: " + errMsg(err)}}
		case errors.Is(err, wasmbin.ErrComponent):
			return []Problem{{CodeComponent, "this is a WebAssembly component, ABI 1 needs a core module (WASI preview 1 command)"}}
		}
		return []Problem{{CodeInvalidModule, "the module header is invalid: " + errMsg(err)}}
	}
	m, problems := decode(wasm)
	if m == nil {
		return problems
	}
	c := &checker{m: m, opts: opts}
	c.types()
	c.imports()
	c.memories()
	c.tables()
	c.tags()
	c.exports()
	c.segments()
	c.declarations()
	c.code()
	return c.problems
}

// decode decodes the module, or says why it cannot be checked: a count
// over the decoder's limits is module_too_complex, anything else
// invalid_module.
func decode(wasm []byte) (*wasmbin.Module, []Problem) {
	m, err := wasmbin.Decode(wasm)
	if err == nil {
		if ps := nameProblems(m); ps != nil { // names.go
			return nil, ps
		}
		return m, nil
	}
	if errors.Is(err, wasmbin.ErrLimit) {
		return nil, []Problem{{CodeModuleTooComplex, "the module is too large to check " + errWhere(err)}}
	}
	return nil, []Problem{{CodeInvalidModule, "the module is malformed " + errWhere(err)}}
}

// CheckStructure runs only the structural bounds (module_too_complex,
// table_too_large and memory_too_large): the checks that keep compiling
// and instantiating a module bounded, for paths that compile a module
// without the full upload checks (`run`). A module that does not decode is
// reported as Check reports it.
func CheckStructure(wasm []byte, opts Options) []Problem {
	m, problems := decode(wasm)
	if m == nil {
		return problems
	}
	c := &checker{m: m, opts: opts}
	c.memories()
	c.tables()
	c.segments()
	c.declarations()
	c.code()
	var out []Problem
	for _, p := range c.problems {
		switch p.Code {
		case CodeModuleTooComplex, CodeTableTooLarge, CodeMemoryTooLarge, CodeInvalidModule:
			out = append(out, p)
		}
	}
	return out
}

func errMsg(err error) string {
	var e *wasmbin.Error
	if errors.As(err, &e) {
		return e.Msg
	}
	return err.Error()
}

// errWhere renders a decoder error as "at byte 0x1f: <what>".
func errWhere(err error) string {
	var e *wasmbin.Error
	if errors.As(err, &e) {
		return fmt.Sprintf("at byte offset 0x%x: %s", e.Offset, e.Msg)
	}
	return ": " + err.Error()
}

type checker struct {
	m        *wasmbin.Module
	opts     Options
	problems []Problem
	// typesOK is false when some function refers to a missing type, so
	// signature checks must not index m.Types blindly.
	typesOK bool
}

func (c *checker) add(code, format string, args ...any) {
	p := Problem{code, fmt.Sprintf(format, args...)}
	for _, q := range c.problems {
		if q == p {
			return // identical duplicate imports would repeat the sentence
		}
	}
	c.problems = append(c.problems, p)
}

// types reports type indices that point nowhere; wazero would refuse them
// too, but the signature checks below need to know.
func (c *checker) types() {
	c.typesOK = true
	n := uint64(len(c.m.Types))
	for _, im := range c.m.Imports {
		if (im.Kind == wasmbin.KindFunc || im.Kind == wasmbin.KindTag) && uint64(im.TypeIndex) >= n {
			c.add(CodeInvalidModule, "import %q.%q refers to type %d, but the module has %d types", im.Module, im.Name, im.TypeIndex, n)
			c.typesOK = false
		}
	}
	imported := c.m.NumImported(wasmbin.KindFunc)
	for i, t := range c.m.Functions {
		if uint64(t) >= n {
			c.add(CodeInvalidModule, "function %d refers to type %d, but the module has %d types", imported+i, t, n)
			c.typesOK = false
		}
	}
}

func (c *checker) imports() {
	for _, im := range c.m.Imports {
		switch im.Kind {
		case wasmbin.KindFunc:
		case wasmbin.KindTag:
			c.add(CodeExceptions, "import %q.%q is an exception tag; exception handling is not supported", im.Module, im.Name)
			continue
		default:
			c.add(CodeNonFunctionImport, "import %q.%q is a %s; ABI 1 modules may import only functions (define and export your own memory, tables and globals)", im.Module, im.Name, im.Kind)
			// Neither host module provides anything but functions, so the
			// import cannot link either: say so with the code a linker
			// failure has, naming the module when it is not a host one.
			if _, known, _ := lookupImport(im.Module, ""); known {
				c.add(CodeUnknownImport, "import %q.%q: %s provides only functions, no %s named %q", im.Module, im.Name, im.Module, im.Kind, im.Name)
			} else {
				c.add(CodeUnknownImport, "import %q.%q: subako provides only wasi_snapshot_preview1 and subako_http imports", im.Module, im.Name)
			}
			if im.Kind == wasmbin.KindMemory && im.Memory.Shared {
				c.add(CodeThreads, "imported memory %q.%q is shared (threads); shared memory is not supported", im.Module, im.Name)
			}
			continue
		}
		s, moduleKnown, ok := lookupImport(im.Module, im.Name)
		switch {
		case !moduleKnown:
			hint := ""
			if im.Module == "wasi_unstable" {
				hint = " (wasi_unstable is the WASI snapshot before preview 1; rebuild for wasi_snapshot_preview1)"
			}
			c.add(CodeUnknownImport, "import %q.%q: subako provides only wasi_snapshot_preview1 and subako_http imports%s", im.Module, im.Name, hint)
		case !ok:
			c.add(CodeUnknownImport, "import %q.%q: %s has no function named %q", im.Module, im.Name, im.Module, im.Name)
		case c.typesOK:
			if got := c.m.Types[im.TypeIndex]; !abi.Matches(s, got.Params, got.Results) {
				c.add(CodeImportSignature, "import %q.%q has type %s, but %s.%s is %s", im.Module, im.Name, got, im.Module, im.Name, funcType(s))
			}
		}
	}
}

func (c *checker) memories() {
	imported := c.m.NumImported(wasmbin.KindMemory)
	for i, l := range c.m.Memories {
		idx := imported + i
		if l.Shared {
			c.add(CodeThreads, "memory %d is shared (threads); shared memory is not supported", idx)
		}
		if max := c.opts.MaxMemoryBytes; max > 0 && l.Min > uint64(max)/pageSize {
			c.add(CodeMemoryTooLarge, "memory %d starts at %d pages of 64 KiB (%s), above the memory limit of %s", idx, l.Min, pagesBytes(l.Min), limits.HumanSize(max))
		}
	}
}

// tables checks the tables' initial sizes against the memory limit: the
// host holds 8 bytes per element (limits.TableElementBytes), allocated when
// the instance starts, before any instruction could be refused.
func (c *checker) tables() {
	if l := c.opts.Structure.TableElements; l > 0 {
		var total uint64
		for _, t := range c.m.Tables {
			total += t.Limits.Min
		}
		if total > uint64(l) {
			c.add(CodeTableTooLarge, "the module's tables start at %d elements in all, above the table elements limit of %d: every instance holds them on the host's heap (%s at %d bytes each); start smaller and grow with table.grow, which the memory limit covers", total, l, elemBytes(total), limits.TableElementBytes)
			return
		}
	}
	max := c.opts.MaxMemoryBytes
	if max <= 0 {
		return
	}
	imported := c.m.NumImported(wasmbin.KindTable)
	var total uint64
	for i, t := range c.m.Tables {
		idx := imported + i
		total += t.Limits.Min
		if t.Limits.Min > uint64(max/limits.TableElementBytes) {
			c.add(CodeTableTooLarge, "table %d starts at %d elements (%s at %d bytes each), above the memory limit of %s", idx, t.Limits.Min, elemBytes(t.Limits.Min), limits.TableElementBytes, limits.HumanSize(max))
			return
		}
	}
	if total > uint64(max/limits.TableElementBytes) {
		c.add(CodeTableTooLarge, "the module's %d tables start at %d elements in all (%s at %d bytes each), above the memory limit of %s", len(c.m.Tables), total, elemBytes(total), limits.TableElementBytes, limits.HumanSize(max))
		return
	}
	// Tables and linear memory share the limit.
	var memory uint64
	for _, l := range c.m.Memories {
		memory += l.Min * pageSize
	}
	if total > 0 && memory <= uint64(max) && total*uint64(limits.TableElementBytes)+memory > uint64(max) {
		c.add(CodeTableTooLarge, "the tables start at %d elements (%s at %d bytes each), which with the initial memory of %s is above the memory limit of %s", total, elemBytes(total), limits.TableElementBytes, limits.HumanSize(int64(memory)), limits.HumanSize(max))
	}
}

func elemBytes(n uint64) string {
	if n > 1<<50 {
		return fmt.Sprintf("%d elements", n)
	}
	return limits.HumanSize(int64(n) * limits.TableElementBytes)
}

// segments checks the function count and the element and data segments:
// each function, element entry and data segment costs the compiler or
// every instance host memory, whatever its size in the module.
func (c *checker) segments() {
	st := c.opts.Structure
	if n := len(c.m.Codes) + c.m.NumImported(wasmbin.KindFunc); st.Functions > 0 && n > st.Functions {
		c.add(CodeModuleTooComplex, "the module has %d functions, above the limit of %d", n, st.Functions)
	}
	if st.ElementEntries > 0 {
		entries := 0
		for _, e := range c.m.Elements {
			entries += len(e.Funcs) + len(e.Exprs)
		}
		if entries > st.ElementEntries {
			c.add(CodeModuleTooComplex, "the element segments have %d entries in all, above the limit of %d (every instance copies them)", entries, st.ElementEntries)
		}
	}
	if n := len(c.m.Data); st.DataSegments > 0 && n > st.DataSegments {
		c.add(CodeModuleTooComplex, "the module has %d data segments, above the limit of %d: merge them (every instance keeps each one)", n, st.DataSegments)
	}
	if st.CodeSize > 0 {
		var total int64
		for i := range c.m.Codes {
			total += int64(len(c.m.Codes[i].Body))
		}
		if total > st.CodeSize {
			c.add(CodeModuleTooComplex, "the module has %s of code, above the limit of %s", limits.HumanSize(total), limits.HumanSize(st.CodeSize))
		}
	}
}

// declarations checks the counts whose compile cost multiplies against
// the code: globals, types and the arity of each type.
func (c *checker) declarations() {
	st := c.opts.Structure
	if n := len(c.m.Globals) + c.m.NumImported(wasmbin.KindGlobal); st.Globals > 0 && n > st.Globals {
		c.add(CodeModuleTooComplex, "the module has %d globals, above the globals limit of %d (every function's compilation and every instance holds each one)", n, st.Globals)
	}
	if n := len(c.m.Types); st.Types > 0 && n > st.Types {
		c.add(CodeModuleTooComplex, "the module has %d function types, above the types limit of %d", n, st.Types)
	}
	if l := st.TypeValues; l > 0 {
		n := 0
		for _, t := range c.m.Types {
			n += len(t.Params) + len(t.Results)
		}
		if n > l {
			c.add(CodeModuleTooComplex, "the function types have %d parameters and results in all, above the type values limit of %d", n, l)
		}
	}
	if l := st.TypeArity; l > 0 {
		for i, t := range c.m.Types {
			switch {
			case len(t.Params) > l:
				c.add(CodeModuleTooComplex, "type %d has %d parameters, above the type arity limit of %d", i, len(t.Params), l)
			case len(t.Results) > l:
				c.add(CodeModuleTooComplex, "type %d has %d results, above the type arity limit of %d", i, len(t.Results), l)
			default:
				continue
			}
			return // one is enough to act on
		}
	}
}

// meterGlobals is how many mutable globals fuel.Instrument adds (the
// counter and the tick): the compiler reloads them after every call
// like the module's own.
const meterGlobals = 2

func pagesBytes(pages uint64) string {
	if pages > 1<<40 {
		return fmt.Sprintf("%d pages", pages)
	}
	return limits.HumanSize(int64(pages) * pageSize)
}

func (c *checker) tags() {
	if n := len(c.m.Tags); n > 0 {
		c.add(CodeExceptions, "the module has a tag section (%s); exception handling is not supported", plural(n, "exception tag"))
	}
}

func (c *checker) exports() {
	var start, memory *wasmbin.Export
	for i := range c.m.Exports {
		e := &c.m.Exports[i]
		switch e.Name {
		case "_start":
			start = e
		case "memory":
			memory = e
		case "_initialize":
			c.add(CodeReactor, "the module exports _initialize, so it is a WASI reactor (a library); ABI 1 needs a WASI command, which exports _start and not _initialize")
		}
	}

	switch {
	case start == nil:
		c.add(CodeMissingStart, "the module exports no function named _start; ABI 1 runs WASI commands, whose entry point is _start")
	case start.Kind != wasmbin.KindFunc:
		c.add(CodeMissingStart, "export \"_start\" is a %s, not a function", start.Kind)
	default:
		t, ok := c.m.FuncType(start.Index)
		switch {
		case !ok && c.typesOK:
			c.add(CodeInvalidModule, "export \"_start\" refers to function %d, which does not exist", start.Index)
		case ok && (len(t.Params) != 0 || len(t.Results) != 0):
			c.add(CodeBadStartSignature, "_start has type %s; it must take no parameters and return nothing: () -> ()", t)
		}
	}

	switch {
	case memory != nil && memory.Kind != wasmbin.KindMemory:
		c.add(CodeMissingMemory, "export \"memory\" is a %s, not a memory; ABI 1 needs the module's memory exported as \"memory\"", memory.Kind)
	case memory == nil:
		other := ""
		for _, e := range c.m.Exports {
			if e.Kind == wasmbin.KindMemory {
				other = fmt.Sprintf(" (memory %d is exported as %q)", e.Index, e.Name)
				break
			}
		}
		if len(c.m.Memories) == 0 && c.m.NumImported(wasmbin.KindMemory) == 0 {
			c.add(CodeMissingMemory, "the module has no memory; ABI 1 needs a memory exported as \"memory\"")
		} else {
			c.add(CodeMissingMemory, "the module does not export its memory as \"memory\"%s; WASI needs it under that name", other)
		}
	}
}

// instrUse remembers the first use of a family of instructions and how many
// uses there are in how many functions.
type instrUse struct {
	first     wasmbin.Opcode
	firstFunc int
	// legacy and legacyFunc: the first legacy exception-handling
	// instruction, named in preference because wazero's own error for it is
	// the unhelpful "invalid instruction 0x6".
	legacy     wasmbin.Opcode
	legacyFunc int
	hasLegacy  bool
	count      int
	funcs      int
	ops        []wasmbin.Opcode // distinct opcodes, in order of first use
}

func (u *instrUse) note(op wasmbin.Opcode, fn int, newFunc bool) {
	if u.count == 0 {
		u.first, u.firstFunc = op, fn
	}
	if !u.hasLegacy && op.IsLegacyExceptionHandling() {
		u.legacy, u.legacyFunc, u.hasLegacy = op, fn, true
	}
	u.count++
	if newFunc {
		u.funcs++
	}
	for _, o := range u.ops {
		if o == op {
			return
		}
	}
	if len(u.ops) < 16 {
		u.ops = append(u.ops, op)
	}
}

// code walks every function body once: it finds atomic and
// exception-handling instructions, and any instruction that does not
// decode.
func (c *checker) code() {
	imported := c.m.NumImported(wasmbin.KindFunc)
	var atomics, eh instrUse
	malformed := 0
	var in wasmbin.Instr
	w := wasmbin.NewWalker(nil, 0)
	st := &shape{limits: c.opts.Structure, types: c.m.Types}
	st.globals = int64(len(c.m.Globals) + c.m.NumImported(wasmbin.KindGlobal) + meterGlobals)
	st.mutable = meterGlobals
	for _, g := range c.m.Globals {
		if g.Type.Mutable {
			st.mutable++
		}
	}
	for _, im := range c.m.Imports {
		if im.Kind == wasmbin.KindGlobal && im.Global.Mutable {
			st.mutable++
		}
	}
	for i := range c.m.Codes {
		code := &c.m.Codes[i]
		fn := imported + i
		w.Reset(code.Expr, code.ExprOffset)
		lastAtomic, lastEH := -1, -1
		var locals int64
		for _, l := range code.Locals {
			locals += int64(l.Count)
		}
		if c.typesOK && i < len(c.m.Functions) && int(c.m.Functions[i]) < len(c.m.Types) {
			locals += int64(len(c.m.Types[c.m.Functions[i]].Params))
		}
		st.start(fn, len(code.Body), locals)
		if c.typesOK && i < len(c.m.Functions) && int(c.m.Functions[i]) < len(c.m.Types) {
			st.results = int64(len(c.m.Types[c.m.Functions[i]].Results))
		}
		for {
			err := w.Next(&in)
			if err == io.EOF {
				break
			}
			if err != nil {
				// A corrupted code section could fail in every function;
				// a few named ones are enough to act on.
				if malformed++; malformed <= maxMalformedReports {
					c.add(CodeInvalidModule, "%s is malformed %s", c.funcName(fn), errWhere(err))
				}
				break
			}
			st.note(&in)
			switch {
			case in.Op.IsAtomic():
				atomics.note(in.Op, fn, lastAtomic != fn)
				lastAtomic = fn
			case in.Op.IsExceptionHandling():
				eh.note(in.Op, fn, lastEH != fn)
				lastEH = fn
			}
		}
		st.end()
	}
	st.report(c)
	if extra := malformed - maxMalformedReports; extra > 0 {
		if extra == 1 {
			c.add(CodeInvalidModule, "1 more function is malformed")
		} else {
			c.add(CodeInvalidModule, "%d more functions are malformed", extra)
		}
	}
	if atomics.count > 0 {
		c.add(CodeThreads, "%s uses the atomic instruction `%s`; atomics (threads) are not supported%s",
			c.funcName(atomics.firstFunc), atomics.first, atomics.summary("atomic"))
	}
	if eh.count > 0 {
		op, fn, kind := eh.first, eh.firstFunc, "exception handling"
		if eh.hasLegacy {
			op, fn, kind = eh.legacy, eh.legacyFunc, "legacy exceptions"
		}
		c.add(CodeExceptions, "%s uses the exception-handling instruction `%s` (%s); exception handling is not supported%s",
			c.funcName(fn), op, kind, eh.summary("exception-handling"))
	}
}

// shape measures the control structure of every function against
// limits.Structure in the same walk as the instruction checks, and keeps the
// first function over each bound, to name it.
type shape struct {
	limits limits.Structure
	fn     int
	depth  int
	blocks int
	loops  int
	cost   int64 // sum of the finished functions' (blocks+loops)^2
	// brCounted: this function is already counted over the br_table bound.
	brCounted bool

	// The costs of globals, locals and br_tables (limits.Structure), with
	// the function contributing most to each, to name it. globals and
	// mutable count the meter's own; locals and calls are this function's.
	globals, mutable                  int64
	locals, calls                     int64
	localsTotal                       int64
	globalCost, localCost, brCost     int64
	globalFn, localFn, brFn           int
	globalFnVal, localFnVal, brFnVal  int64
	globalFnCalls, localFnN, localFnB int64
	fnBrCost                          int64

	// types are the module's function types, for block types; arity is
	// the arity of each open block's label (a loop's parameters, another
	// block's results) and results the function's, its outermost label.
	types                     []wasmbin.FuncType
	arity                     []int64
	results                   int64
	branchValues, fnBranchVal int64
	branchFn                  int
	branchFnVal               int64

	// The first function over each bound (-1: none) and its value.
	// open: whether each open block is a loop; loopDepth counts the trues.
	open      []bool
	loopDepth int

	size, nesting, loopNesting, blocksOver, brTable struct {
		fn    int
		value int64
		n     int // functions over the bound
	}
	costFn    int   // the function that contributed most to cost
	costFnVal int64 // its contribution
}

func (s *shape) start(fn, size int, locals int64) {
	s.fn, s.depth, s.blocks, s.loops, s.brCounted = fn, 0, 0, 0, false
	s.locals, s.calls, s.fnBrCost = locals, 0, 0
	s.arity, s.results, s.fnBranchVal = s.arity[:0], 0, 0
	s.localsTotal = satAdd(s.localsTotal, locals)
	s.open, s.loopDepth = s.open[:0], 0
	if s.limits.FunctionSize > 0 && int64(size) > s.limits.FunctionSize {
		over(&s.size, fn, int64(size))
	}
}

func over(o *struct {
	fn    int
	value int64
	n     int
}, fn int, v int64) {
	if o.n == 0 {
		o.fn, o.value = fn, v
	}
	o.n++
}

func (s *shape) note(in *wasmbin.Instr) {
	switch in.Op {
	case wasmbin.OpLoop, wasmbin.OpBlock, wasmbin.OpIf, wasmbin.OpTry, wasmbin.OpTryTable:
		loop := in.Op == wasmbin.OpLoop
		if loop {
			s.loops++
			s.loopDepth++
			if l := s.limits.LoopNesting; l > 0 && s.loopDepth == l+1 {
				over(&s.loopNesting, s.fn, int64(s.loopDepth))
			}
		}
		s.open = append(s.open, loop)
		s.arity = append(s.arity, s.blockArity(in.Block, loop))
		s.blocks++
		s.depth++
		if l := s.limits.Nesting; l > 0 && s.depth == l+1 {
			over(&s.nesting, s.fn, int64(s.depth))
		}
		if l := s.limits.FunctionBlocks; l > 0 && s.blocks == l+1 {
			over(&s.blocksOver, s.fn, int64(s.blocks))
		}
	case wasmbin.OpEnd:
		s.depth--
		if n := len(s.open); n > 0 {
			if s.open[n-1] {
				s.loopDepth--
			}
			s.open = s.open[:n-1]
			s.arity = s.arity[:n-1]
		}
	case wasmbin.OpCall, wasmbin.OpCallIndirect, wasmbin.OpReturnCall, wasmbin.OpReturnCallIndirect, wasmbin.OpCallRef, wasmbin.OpReturnCallRef:
		s.calls++
	case wasmbin.OpBr, wasmbin.OpBrIf, wasmbin.OpBrOnNull, wasmbin.OpBrOnNonNull:
		s.fnBranchVal = satAdd(s.fnBranchVal, s.labelArity(in.Index))
	case wasmbin.OpBrTable:
		n := int64(len(in.Labels))
		s.fnBrCost = satAdd(s.fnBrCost, n*n)
		// Validation makes every label's arity the default's.
		s.fnBranchVal = satAdd(s.fnBranchVal, satMul(n+1, s.labelArity(in.Index)))
		if l := s.limits.BrTableTargets; l > 0 && len(in.Labels) > l && !s.brCounted {
			over(&s.brTable, s.fn, int64(len(in.Labels)))
			s.brCounted = true // count functions, not br_tables
		}
	}
}

func (s *shape) end() {
	b := int64(s.blocks + s.loops)
	s.cost += b * b
	if b*b > s.costFnVal {
		s.costFn, s.costFnVal = s.fn, b*b
	}
	// Call sites of the metered function: its own calls, plus the
	// meter's refuel call at every loop header and at the entry.
	sites := s.calls + int64(s.loops) + 1
	g := satAdd(s.globals, satMul(s.mutable, sites))
	s.globalCost = satAdd(s.globalCost, g)
	if g > s.globalFnVal {
		s.globalFn, s.globalFnVal, s.globalFnCalls = s.fn, g, sites
	}
	l := s.locals + 1 // the meter's counter
	lc := satMul(satMul(l, l), int64(s.blocks)+1)
	s.localCost = satAdd(s.localCost, lc)
	if lc > s.localFnVal {
		s.localFn, s.localFnVal, s.localFnN, s.localFnB = s.fn, lc, l, int64(s.blocks)
	}
	s.branchValues = satAdd(s.branchValues, s.fnBranchVal)
	if s.fnBranchVal > s.branchFnVal {
		s.branchFn, s.branchFnVal = s.fn, s.fnBranchVal
	}
	s.brCost = satAdd(s.brCost, s.fnBrCost)
	if s.fnBrCost > s.brFnVal {
		s.brFn, s.brFnVal = s.fn, s.fnBrCost
	}
}

// blockArity is the arity of a block's label: what a branch to it carries.
func (s *shape) blockArity(bt wasmbin.BlockType, loop bool) int64 {
	switch {
	case bt == wasmbin.BlockEmpty:
		return 0
	case bt < 0:
		return 1 // a value type: one result, no parameters
	case bt >= wasmbin.BlockType(len(s.types)):
		return 0 // an invalid index: the validator refuses the module
	case loop:
		return int64(len(s.types[bt].Params))
	}
	return int64(len(s.types[bt].Results))
}

// labelArity is the arity of label l counted from the innermost open
// block; the outermost label is the function's (its results).
func (s *shape) labelArity(l uint32) int64 {
	n := len(s.arity)
	switch {
	case int(l) < n:
		return s.arity[n-1-int(l)]
	case int(l) == n:
		return s.results
	}
	return 0 // an invalid label: the validator refuses the module
}

// satAdd and satMul saturate at the largest int64: the costs multiply
// counts a hostile module chooses.
func satAdd(a, b int64) int64 {
	if a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}

func satMul(a, b int64) int64 {
	if a != 0 && b > math.MaxInt64/a {
		return math.MaxInt64
	}
	return a * b
}

func (s *shape) report(c *checker) {
	more := func(n int) string {
		if n <= 1 {
			return ""
		}
		return fmt.Sprintf(" (%d functions in all)", n)
	}
	if o := s.size; o.n > 0 {
		c.add(CodeModuleTooComplex, "%s is %s, above the function size limit of %s%s", c.funcName(o.fn), limits.HumanSize(o.value), limits.HumanSize(s.limits.FunctionSize), more(o.n))
	}
	if o := s.nesting; o.n > 0 {
		c.add(CodeModuleTooComplex, "%s nests blocks more than %d deep, above the nesting limit of %d%s", c.funcName(o.fn), s.limits.Nesting, s.limits.Nesting, more(o.n))
	}
	if o := s.loopNesting; o.n > 0 {
		c.add(CodeModuleTooComplex, "%s nests loops more than %d deep, above the loop nesting limit of %d%s", c.funcName(o.fn), s.limits.LoopNesting, s.limits.LoopNesting, more(o.n))
	}
	if o := s.blocksOver; o.n > 0 {
		c.add(CodeModuleTooComplex, "%s has more than %d blocks, loops and ifs, above the limit of %d a function may have%s", c.funcName(o.fn), s.limits.FunctionBlocks, s.limits.FunctionBlocks, more(o.n))
	}
	if o := s.brTable; o.n > 0 {
		c.add(CodeModuleTooComplex, "%s has a br_table of %d labels, above the limit of %d%s", c.funcName(o.fn), o.value, s.limits.BrTableTargets, more(o.n))
	}
	if l := s.limits.GlobalCost; l > 0 && s.globalCost > l {
		c.add(CodeModuleTooComplex, "the globals would take too long to compile: every function declares all %d globals and every call site reloads the %d mutable ones (the meter's 2 of each included), a global cost of %d, above the limit of %d; %s (%d call sites) contributes %d", s.globals, s.mutable, s.globalCost, l, c.funcName(s.globalFn), s.globalFnCalls, s.globalFnVal)
	}
	if l := s.limits.Locals; l > 0 && s.localsTotal > l {
		c.add(CodeModuleTooComplex, "the functions have %d locals (parameters included) in all, above the locals limit of %d", s.localsTotal, l)
	}
	if l := s.limits.LocalCost; l > 0 && s.localCost > l {
		c.add(CodeModuleTooComplex, "the locals would take too long to compile: the local cost (the sum over functions of the square of their locals, parameters and the meter's counter included, times their blocks plus one) is %d, above the limit of %d; %s (%d locals, %d blocks) contributes %d", s.localCost, l, c.funcName(s.localFn), s.localFnN, s.localFnB, s.localFnVal)
	}
	if l := s.limits.BrTableCost; l > 0 && s.brCost > l {
		c.add(CodeModuleTooComplex, "the br_tables would take too long to compile: the br_table cost (the sum of the squares of their label counts) is %d, above the limit of %d; %s contributes %d", s.brCost, l, c.funcName(s.brFn), s.brFnVal)
	}
	if l := s.limits.BranchValues; l > 0 && s.branchValues > l {
		c.add(CodeModuleTooComplex, "the branches would take too long to compile: they carry %d values in all (the sum over br, br_if and every br_table label of the values its target block takes), above the branch values limit of %d; %s carries %d", s.branchValues, l, c.funcName(s.branchFn), s.branchFnVal)
	}
	if l := s.limits.ControlCost; l > 0 && s.cost > l {
		c.add(CodeModuleTooComplex, "the functions' control structure would take too long to compile: its cost (the sum over functions of the square of their block count, loops counted twice) is %d, above the limit of %d; %s contributes %d", s.cost, l, c.funcName(s.costFn), s.costFnVal)
	}
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}

func (u *instrUse) summary(what string) string {
	if u.count == 1 {
		return ""
	}
	names := make([]string, len(u.ops))
	for i, o := range u.ops {
		names[i] = "`" + o.String() + "`"
	}
	return fmt.Sprintf(" (in all, %s in %s: %s)", plural(u.count, what+" instruction"), plural(u.funcs, "function"), strings.Join(names, ", "))
}

// funcName names function idx for a package author: its index, plus its
// name from the name section when the module keeps one.
func (c *checker) funcName(idx int) string {
	if s, ok := c.m.CustomSection("name"); ok {
		if name, ok := wasmbin.FuncName(s.Content, uint32(idx)); ok && name != "" {
			return fmt.Sprintf("function %d (%s)", idx, name)
		}
	}
	for _, e := range c.m.Exports {
		if e.Kind == wasmbin.KindFunc && uint64(e.Index) == uint64(idx) {
			return fmt.Sprintf("function %d (export %q)", idx, e.Name)
		}
	}
	return fmt.Sprintf("function %d", idx)
}
