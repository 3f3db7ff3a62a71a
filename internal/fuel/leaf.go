package fuel

import (
	"bytes"
	"errors"
	"io"

	"github.com/subako/subako-runner/internal/wasmbin"
)

// Small leaves: their callers pay.
//
// A function that makes no calls, has no loops and no instruction charged
// by size (a leaf: a getter, a comparison, a hash step) cannot run long,
// yet charging it the usual way is the most expensive charge there is: it
// has no local to cache the counter in, so it loads and stores the global,
// and every caller that caches the counter writes it back before the call
// and reloads it after, a store-to-load round trip through memory on the
// caller's critical path at every call. A C qsort calls its comparison
// through call_indirect a couple of million times; on the C benchmark,
// charged the usual way, these round trips are a third of the metering's
// cost.
//
// So a small leaf (at most smallLeafBytes of code) charges nothing
// itself: every call site that can reach it adds the leaf's whole cost,
// every instruction of its body counted once whether it runs or not, to
// its own segment's charge, and does not write the counter back for it.
// For a direct call the callee is known. For call_indirect and call_ref
// it is one of the functions of the call's type whose reference the
// module can take (element segments, global initialisers and exports: a
// ref.func in code can name no other); the call site pays the dearest
// small leaf among them, and writes the counter back only if one of them
// is not a small leaf. Exported functions and the start function are
// never small leaves: the host calls them, and no call site would pay.
//
// The charge stays deterministic (same module, same input, same fuel); it
// is exact for a leaf without branches and over by at most the code a
// branch skipped otherwise, which is bounded by smallLeafBytes.

// smallLeafBytes bounds the code of a small leaf, in bytes of its
// expression, so at most that many instructions: what a call site pays
// beyond what runs stays small.
const smallLeafBytes = 96

// leaves finds the small leaves and their costs (rw.leafCost), and what a
// call through a reference of each type may reach (rw.indirect). It runs
// after scanAll has the functions' shapes.
func (rw *rewriter) leaves() error {
	m := rw.m
	rw.leafCost = make([]int64, len(m.Codes))
	host := make(map[uint32]bool, len(m.Exports)+1) // functions the host calls
	for _, e := range m.Exports {
		if e.Kind == wasmbin.KindFunc {
			host[e.Index] = true
		}
	}
	if m.HasStart {
		host[m.Start] = true
	}
	for i := range m.Codes {
		code := &m.Codes[i]
		if rw.shapes[i] != 0 || len(code.Expr) > smallLeafBytes || host[uint32(i)+rw.nImpFuncs] {
			continue
		}
		cost, ok, err := rw.leafBodyCost(code)
		if err != nil {
			return err
		}
		if ok {
			rw.leafCost[i] = cost
		}
	}
	// Group what a reference can reach by its type, compared by
	// structure as call_indirect compares them: one pass over the
	// referenced functions, however many types the module declares.
	key := func(t wasmbin.FuncType) string {
		b := make([]byte, 0, len(t.Params)+len(t.Results)+1)
		for _, v := range t.Params {
			b = append(b, byte(v))
		}
		b = append(b, 0xff)
		for _, v := range t.Results {
			b = append(b, byte(v))
		}
		return string(b)
	}
	rw.canon = make([]uint32, len(m.Types))
	firstOf := make(map[string]uint32, len(m.Types))
	for i, t := range m.Types {
		k := key(t)
		if c, ok := firstOf[k]; ok {
			rw.canon[i] = c
		} else {
			firstOf[k] = uint32(i)
			rw.canon[i] = uint32(i)
		}
	}
	rw.indirect = map[uint32]indirectCallees{}
	seen := map[uint32]bool{}
	funcTypes := make([]uint32, 0, rw.nImpFuncs)
	for _, im := range m.Imports {
		if im.Kind == wasmbin.KindFunc {
			funcTypes = append(funcTypes, im.TypeIndex)
		}
	}
	take := func(f uint32) {
		if seen[f] {
			return
		}
		seen[f] = true
		var t uint32
		switch {
		case f < rw.nImpFuncs:
			t = funcTypes[f]
		case uint64(f-rw.nImpFuncs) < uint64(len(m.Functions)):
			t = m.Functions[f-rw.nImpFuncs]
		default:
			return // invalid; validation refuses the module
		}
		if uint64(t) >= uint64(len(rw.canon)) {
			return
		}
		c := rw.indirect[rw.canon[t]]
		c.host = c.host || f < rw.nImpFuncs
		if cost := rw.leafCostOf(f); cost > 0 {
			c.leafCost = max(c.leafCost, cost)
		} else {
			c.needsSync = true
		}
		rw.indirect[rw.canon[t]] = c
	}
	for _, e := range m.Elements {
		for _, f := range e.Funcs {
			take(f)
		}
		for _, x := range e.Exprs {
			if err := rw.refFuncs(x.Bytes, x.Offset, take); err != nil {
				return err
			}
		}
	}
	for _, g := range m.Globals {
		if err := rw.refFuncs(g.Init.Bytes, g.Init.Offset, take); err != nil {
			return err
		}
	}
	// A ref.func in code may only name a function the module declares
	// outside its code (an element segment, a global's initialiser or an
	// export); wazero refuses any other, before metering as after, so the
	// code need not be searched.
	for _, e := range m.Exports {
		if e.Kind == wasmbin.KindFunc {
			take(e.Index)
		}
	}
	return nil
}

// leafBodyCost is what a call of a leaf pays: each instruction of its
// body once (block, loop, nop and the end of a block cost nothing, the
// final end 1, as everywhere), or !ok when the leaf has an instruction
// whose cost is its size (it must charge itself, after it ran).
func (rw *rewriter) leafBodyCost(code *wasmbin.Code) (cost int64, ok bool, err error) {
	w := &rw.scanW
	w.Reset(code.Expr, code.ExprOffset)
	in := &rw.scanIn
	depth := 0
	for {
		if err := w.Next(in); err != nil {
			if errors.Is(err, io.EOF) {
				return cost, true, nil
			}
			return 0, false, err
		}
		switch in.Op {
		case wasmbin.OpMemoryGrow, wasmbin.OpMemoryFill, wasmbin.OpMemoryCopy, wasmbin.OpMemoryInit,
			wasmbin.OpTableGrow, wasmbin.OpTableFill, wasmbin.OpTableCopy, wasmbin.OpTableInit:
			return 0, false, nil
		case wasmbin.OpBlock, wasmbin.OpLoop, wasmbin.OpIf, wasmbin.OpTry, wasmbin.OpTryTable:
			depth++
		case wasmbin.OpEnd:
			if depth == 0 {
				cost++ // the function's final end: its return
				continue
			}
			depth--
		}
		if !free(in.Op) {
			cost++
		}
	}
}

// refFuncs calls take with the function index of every ref.func in expr.
func (rw *rewriter) refFuncs(expr []byte, offset int, take func(uint32)) error {
	if bytes.IndexByte(expr, byte(wasmbin.OpRefFunc)) < 0 {
		return nil
	}
	w := wasmbin.NewWalker(expr, offset)
	var in wasmbin.Instr
	for {
		if err := w.Next(&in); err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
		if in.Op == wasmbin.OpRefFunc {
			take(in.Index)
		}
	}
}

// indirectCallees is what a call through a reference of one type may
// reach: the dearest small leaf's cost, which the call site pays, and
// whether any callee is not a small leaf (the counter must be written
// back for it), or is an imported function (the site pays a host call:
// hostcall.go).
type indirectCallees struct {
	leafCost  int64
	needsSync bool
	host      bool
}

// callees answers indirectCallees for calls through a reference of
// type index t.
func (rw *rewriter) callees(t uint32) indirectCallees {
	if uint64(t) >= uint64(len(rw.canon)) {
		return indirectCallees{needsSync: true, host: true} // invalid; validation refuses the module
	}
	return rw.indirect[rw.canon[t]]
}

// leafCostOf is the cost a call of function f (an input index) pays for
// it when it is a small leaf, else 0.
func (rw *rewriter) leafCostOf(f uint32) int64 {
	if f < rw.nImpFuncs {
		return 0
	}
	i := f - rw.nImpFuncs
	if uint64(i) >= uint64(len(rw.leafCost)) {
		return 0
	}
	return rw.leafCost[i]
}
