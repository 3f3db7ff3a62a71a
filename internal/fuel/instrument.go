package fuel

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/subako/subako-runner/internal/abi"
	"github.com/subako/subako-runner/internal/wasmbin"
)

// The names the instrumented module uses to reach the host and expose its
// counter.
const (
	// ImportModule and ImportName name the injected import, of type
	// (i64) -> i64: called with the meter (CounterExport) when a charge
	// overdraws either half, it returns the meter's new value.
	ImportModule = abi.ModuleFuel
	ImportName   = "refuel"
	// CounterExport names the exported mutable i64 global holding the
	// meter (see tickShift in check.go): in its low 32 bits the fuel left
	// in the current slice, in its high 32 bits the tick, the deadline's
	// second line, a counter charged by the code's structure rather than
	// its cost model. It starts at 0, so the first charge refuels. No
	// instruction of the module as uploaded can name it (see
	// checkIndices); the host only reads it.
	CounterExport = "subako_fuel_counter"
	// GrowTableName names the second injected import, of type
	// (i32 table, i32 size, i32 delta) -> i32, added only to modules that
	// use table.grow: every table.grow asks it first and, when it returns
	// 0, yields -1 (the spec's "cannot grow") without growing. wazero has
	// no allocator hook for tables, and an unchecked table.grow of 2^32-2
	// elements makes the host allocate 32 GiB and die.
	GrowTableName = "grow_table"
)

// Cost model constants for the size-dependent instructions.
const (
	// BulkBytesPerFuel: memory.fill, memory.copy and memory.init cost one
	// fuel per this many bytes (rounded down), on top of their own 1.
	BulkBytesPerFuel = 1 << bulkShift
	// PageCost is the fuel memory.grow charges per 64 KiB page requested:
	// a page is priced as if filled in bulk.
	PageCost = 1 << pageShift

	// ImportCallCost is added to a direct call of an imported function
	// (a host function, under ABI 1): host calls take far longer than an
	// instruction, and a guest looping over a cheap one must still run out
	// of fuel, and reach refuel, in proportion to its time.
	ImportCallCost = 1000

	bulkShift = 4
	pageShift = 16 - bulkShift
)

// Errors Instrument returns besides the decoder's *wasmbin.Error (wrapped,
// so errors.As finds it).
var (
	// ErrInstrumented: the module already imports from ImportModule or
	// exports CounterExport, so it was instrumented before (or is forging
	// the meter's names).
	ErrInstrumented = errors.New("fuel: the module is already instrumented (it uses the " + ImportModule + " names)")
	// ErrUnsupported: the module uses a feature the rewriter does not
	// meter (64-bit memories or tables), none of which wazero runs either.
	ErrUnsupported = errors.New("fuel: unsupported module feature")
	// ErrIndex: an instruction names a local, global or type past the
	// module's own. Such a module is invalid as uploaded, and the rewrite,
	// which appends a local, globals and types, must not make it valid by
	// giving that index a meaning (the meter's own counter or tick).
	ErrIndex = errors.New("fuel: index out of range")
)

// importType is the signature of an injected import, from the table the
// host module is defined from.
func importType(name string) wasmbin.FuncType {
	f, _, _ := abi.Lookup(ImportModule, name)
	t := wasmbin.FuncType{}
	for _, v := range f.Params() {
		t.Params = append(t.Params, wasmbin.ValType(v))
	}
	for _, v := range f.Results() {
		t.Results = append(t.Results, wasmbin.ValType(v))
	}
	return t
}

// Instrument returns a copy of the module wasm with fuel metering injected
// (see the package doc). It does not type-check: a module wazero would
// reject may still be rewritten, and is still rejected after. It does
// check every local, global and type index against the module's own
// (ErrIndex), the indices the rewrite makes room for, so that no invalid
// module becomes valid by being metered. The input is not modified.
func Instrument(wasm []byte) ([]byte, error) { return instrument(wasm, bothLines) }

// lines chooses what the checks test: both counters (what Instrument
// does), or, for the tests that prove each line holds alone, only one.
type lines uint8

const (
	bothLines lines = iota
	counterLine
	tickLine
)

func instrument(wasm []byte, only lines) ([]byte, error) {
	m, err := wasmbin.Decode(wasm)
	if err != nil {
		return nil, fmt.Errorf("fuel: %w", err)
	}
	for _, im := range m.Imports {
		if im.Module == ImportModule {
			return nil, ErrInstrumented
		}
		if (im.Kind == wasmbin.KindMemory && im.Memory.Is64) || (im.Kind == wasmbin.KindTable && im.Table.Limits.Is64) {
			return nil, fmt.Errorf("%w: 64-bit %s import %q.%q", ErrUnsupported, im.Kind, im.Module, im.Name)
		}
	}
	for _, e := range m.Exports {
		if e.Name == CounterExport {
			return nil, ErrInstrumented
		}
	}
	for _, mem := range m.Memories {
		if mem.Is64 {
			return nil, fmt.Errorf("%w: 64-bit memory", ErrUnsupported)
		}
	}
	for _, t := range m.Tables {
		if t.Limits.Is64 {
			return nil, fmt.Errorf("%w: 64-bit table", ErrUnsupported)
		}
	}

	rw := &rewriter{m: m, nImpFuncs: uint32(m.NumImported(wasmbin.KindFunc)), added: 1, only: only}
	rw.refuel = rw.nImpFuncs
	rw.counter = uint32(m.NumImported(wasmbin.KindGlobal) + len(m.Globals))
	rw.depthGlobal = rw.counter + 1
	rw.nTypes = uint32(len(m.Types))
	rw.refuelType = rw.typeIndex(importType(ImportName))
	if c, ok := joinData(m); ok {
		rw.data = c
	}
	grows, err := rw.growsTables()
	if err != nil {
		return nil, err
	}
	if grows {
		rw.added = 2
		rw.growTable = rw.nImpFuncs + 1
		rw.growTableType = rw.typeIndex(importType(GrowTableName))
		rw.tableTypes = make([]wasmbin.ValType, 0, len(m.Tables))
		for _, im := range m.Imports {
			if im.Kind == wasmbin.KindTable {
				rw.tableTypes = append(rw.tableTypes, im.Table.ElemType)
			}
		}
		for _, t := range m.Tables {
			rw.tableTypes = append(rw.tableTypes, t.ElemType)
		}
	}
	return rw.module(wasm)
}

// typeIndex returns the index of type t, appending it to the types the
// rewriter adds when the module has no equal one.
func (rw *rewriter) typeIndex(t wasmbin.FuncType) uint32 {
	for i, u := range rw.m.Types {
		if u.Equal(t) {
			return uint32(i)
		}
	}
	for i, u := range rw.newTypes {
		if u.Equal(t) {
			return uint32(len(rw.m.Types) + i)
		}
	}
	rw.newTypes = append(rw.newTypes, t)
	return uint32(len(rw.m.Types) + len(rw.newTypes) - 1)
}

// growsTables reports whether any function uses table.grow. Only bodies
// holding the 0xfc prefix byte somewhere are walked.
func (rw *rewriter) growsTables() (bool, error) {
	w := &rw.scanW
	in := &rw.scanIn
	for i := range rw.m.Codes {
		code := &rw.m.Codes[i]
		if bytes.IndexByte(code.Expr, 0xfc) < 0 {
			continue
		}
		w.Reset(code.Expr, code.ExprOffset)
		for {
			err := w.Next(in)
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				return false, fmt.Errorf("fuel: function %d: %w", int(rw.nImpFuncs)+i, err)
			}
			if in.Op == wasmbin.OpTableGrow {
				return true, nil
			}
		}
	}
	return false, nil
}

type rewriter struct {
	m         *wasmbin.Module
	nImpFuncs uint32
	// added is how many imports the rewriter adds: refuel, and grow_table
	// when the module uses table.grow.
	added         uint32
	refuel        uint32 // function index of the import
	growTable     uint32 // function index of grow_table, when added
	counter       uint32 // global index of the meter; the module's own globals are those below it
	depthGlobal   uint32 // global index of the frames left (depth.go)
	nTypes        uint32 // the module's own types; the rewriter's come after
	refuelType    uint32
	growTableType uint32
	newTypes      []wasmbin.FuncType // appended to the type section
	// tableTypes are the element types of the tables, imported first.
	tableTypes []wasmbin.ValType
	// data is the data section's new content when joinData joined
	// segments (nil: the section is kept as it is).
	data   []byte
	scanW  wasmbin.Walker
	scanIn wasmbin.Instr
	// shapes holds each defined function's hasLoopBit and hasCallBit;
	// maxUnchecked is the most any call_indirect or call_ref may run
	// before its callee checks (see unchecked).
	shapes       []uint8
	maxUnchecked int64
	// leafCost is each defined function's cost when it is a small leaf,
	// which its callers pay, else 0; indirect is what a call through a
	// reference may reach, by the canonical index (canon) of its type
	// (see leaves).
	leafCost []int64
	canon    []uint32
	indirect map[uint32]indirectCallees
	// The buffers of tails, reused across functions.
	tailInstrs  []tailInstr
	tailLabels  []uint32
	tailOpeners []wasmbin.Opcode
	tailFrames  []tailFrame
	only        lines // bothLines but in tests
}

// fn maps a function index of the input to the output: the imports are
// appended after the imported functions, so defined functions move up by
// their number.
func (rw *rewriter) fn(i uint32) uint32 {
	if i >= rw.nImpFuncs {
		return i + rw.added
	}
	return i
}

// The sections Instrument adds to when present, and creates when not.
var addedSections = [...]wasmbin.SectionID{wasmbin.SectionType, wasmbin.SectionImport, wasmbin.SectionGlobal, wasmbin.SectionExport}

func (rw *rewriter) module(wasm []byte) ([]byte, error) {
	out := make([]byte, 0, len(wasm)+len(wasm)/3+64)
	out = append(out, wasm[:wasmbin.HeaderSize]...)
	present := map[wasmbin.SectionID]bool{}
	for _, s := range rw.m.Sections {
		present[s.ID] = true
	}
	next := 0 // index into addedSections of the next one that may be missing
	emitMissing := func(before int) {
		for ; next < len(addedSections) && addedSections[next].Order() < before; next++ {
			if id := addedSections[next]; !present[id] {
				out = wasmbin.AppendSection(out, id, rw.content(id, nil))
			}
		}
	}
	for _, s := range rw.m.Sections {
		if s.ID == wasmbin.SectionCustom {
			out = rw.custom(out, wasm, s)
			continue
		}
		emitMissing(s.ID.Order())
		switch s.ID {
		case wasmbin.SectionType, wasmbin.SectionImport, wasmbin.SectionGlobal, wasmbin.SectionExport:
			out = wasmbin.AppendSection(out, s.ID, rw.content(s.ID, s.Content))
		case wasmbin.SectionStart:
			out = wasmbin.AppendSection(out, s.ID, wasmbin.AppendU32(nil, rw.fn(rw.m.Start)))
		case wasmbin.SectionElement:
			c, err := rw.elements()
			if err != nil {
				return nil, err
			}
			out = wasmbin.AppendSection(out, s.ID, c)
		case wasmbin.SectionCode:
			c, err := rw.code(len(s.Content))
			if err != nil {
				return nil, err
			}
			out = wasmbin.AppendSection(out, s.ID, c)
		case wasmbin.SectionData:
			if rw.data == nil {
				out = append(out, wasm[s.Offset:s.End]...)
			} else {
				out = wasmbin.AppendSection(out, s.ID, rw.data)
			}
		default:
			out = append(out, wasm[s.Offset:s.End]...)
		}
	}
	emitMissing(1 << 30)
	return out, nil
}

// content returns the new content of one of the addedSections, given the
// old content (nil when the section is absent).
func (rw *rewriter) content(id wasmbin.SectionID, old []byte) []byte {
	m := rw.m
	// appendVec re-emits the old vector's entries verbatim after a new count.
	appendVec := func(dst []byte, n int) []byte {
		dst = wasmbin.AppendU32(dst, uint32(n))
		if len(old) > 0 {
			_, k, _ := wasmbin.ReadU32(old) // decoded once already
			dst = append(dst, old[k:]...)
		}
		return dst
	}
	var c []byte
	switch id {
	case wasmbin.SectionType:
		if len(rw.newTypes) == 0 {
			return old
		}
		c = appendVec(make([]byte, 0, len(old)+16), len(m.Types)+len(rw.newTypes))
		for _, t := range rw.newTypes {
			c = wasmbin.AppendFuncType(c, t)
		}
	case wasmbin.SectionImport:
		c = appendVec(make([]byte, 0, len(old)+64), len(m.Imports)+int(rw.added))
		c = wasmbin.AppendFuncImport(c, ImportModule, ImportName, rw.refuelType)
		if rw.added == 2 {
			c = wasmbin.AppendFuncImport(c, ImportModule, GrowTableName, rw.growTableType)
		}
	case wasmbin.SectionGlobal:
		// Initialisers may hold ref.func, so globals are re-emitted.
		c = wasmbin.AppendU32(make([]byte, 0, len(old)+16), uint32(len(m.Globals)+2))
		for _, g := range m.Globals {
			c = wasmbin.AppendGlobalType(c, g.Type)
			c = rw.constExpr(c, g.Init.Bytes)
		}
		c = wasmbin.AppendGlobalType(c, wasmbin.GlobalType{Type: wasmbin.I64, Mutable: true}) // the meter
		c = append(c, 0x42, 0x00, 0x0b)                                                       // i64.const 0 end
		c = wasmbin.AppendGlobalType(c, wasmbin.GlobalType{Type: wasmbin.I32, Mutable: true}) // the frames left
		c = append(wasmbin.AppendS64(append(c, 0x41), maxCallDepth), 0x0b)
	case wasmbin.SectionExport:
		c = wasmbin.AppendU32(make([]byte, 0, len(old)+32), uint32(len(m.Exports)+1))
		for _, e := range m.Exports {
			if e.Kind == wasmbin.KindFunc {
				e.Index = rw.fn(e.Index)
			}
			c = wasmbin.AppendExport(c, e)
		}
		c = wasmbin.AppendExport(c, wasmbin.Export{Name: CounterExport, Kind: wasmbin.KindGlobal, Index: rw.counter})
	}
	return c
}

// constExpr appends a constant expression with its ref.func indices
// remapped. The decoder walked it already, so it walks cleanly.
func (rw *rewriter) constExpr(dst, expr []byte) []byte {
	if bytes.IndexByte(expr, byte(wasmbin.OpRefFunc)) < 0 {
		return append(dst, expr...)
	}
	w := wasmbin.NewWalker(expr, 0)
	var in wasmbin.Instr
	for w.Next(&in) == nil {
		if in.Op == wasmbin.OpRefFunc {
			dst = append(dst, byte(wasmbin.OpRefFunc))
			dst = wasmbin.AppendU32(dst, rw.fn(in.Index))
			continue
		}
		dst = append(dst, expr[in.Start:in.End]...)
	}
	return dst
}

func (rw *rewriter) elements() ([]byte, error) {
	c := wasmbin.AppendU32(nil, uint32(len(rw.m.Elements)))
	for _, e := range rw.m.Elements {
		if len(e.Funcs) > 0 {
			fs := make([]uint32, len(e.Funcs))
			for i, f := range e.Funcs {
				fs[i] = rw.fn(f)
			}
			e.Funcs = fs
		}
		if len(e.Exprs) > 0 {
			xs := make([]wasmbin.Expr, len(e.Exprs))
			for i, x := range e.Exprs {
				xs[i] = wasmbin.Expr{Bytes: rw.constExpr(nil, x.Bytes)}
			}
			e.Exprs = xs
		}
		c = wasmbin.AppendElement(c, e)
	}
	return c, nil
}

// custom copies, rewrites or drops a custom section. Sections that locate
// code by byte offset (DWARF, source maps, relocations) would lie about the
// rewritten code, so they are dropped, always; the name section is kept with
// its function indices remapped, or dropped whole if it does not parse.
func (rw *rewriter) custom(out, wasm []byte, s wasmbin.Section) []byte {
	switch {
	case s.Name == "name":
		if c, ok := rw.names(s.Content); ok {
			return wasmbin.AppendCustomSection(out, "name", c)
		}
		return out
	case strings.HasPrefix(s.Name, ".debug_"), s.Name == "sourceMappingURL", s.Name == "external_debug_info",
		strings.HasPrefix(s.Name, "reloc."), s.Name == "linking":
		return out
	}
	return append(out, wasm[s.Offset:s.End]...)
}
