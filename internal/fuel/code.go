package fuel

import (
	"bytes"
	"errors"
	"fmt"
	"io"

	"github.com/subako/subako-runner/internal/wasmbin"
)

// code rewrites the code section: every body gets its charges, and call,
// return_call and ref.func their remapped indices.
func (rw *rewriter) code(sizeHint int) ([]byte, error) {
	m := rw.m
	c := make([]byte, 0, sizeHint+sizeHint/2+16)
	c = wasmbin.AppendU32(c, uint32(len(m.Codes)))
	fr := &funcRewriter{rw: rw}
	if err := rw.scanAll(); err != nil {
		return nil, err
	}
	var extra []wasmbin.ValType
	for i := range m.Codes {
		code := &m.Codes[i]
		expr, err := fr.function(i, code)
		if err != nil {
			return nil, err
		}
		extra = fr.extraLocals(extra[:0])
		c = appendCode(c, code, expr, extra)
	}
	return c, nil
}

// function sets fr up for the defined function i (its shape, locals and
// frame weight) and returns its rewritten body.
func (fr *funcRewriter) function(i int, code *wasmbin.Code) ([]byte, error) {
	rw, m := fr.rw, fr.rw.m
	ti := m.Functions[i]
	if uint64(ti) >= uint64(len(m.Types)) {
		return nil, fmt.Errorf("fuel: function %d has type index %d, past the %d types", int(rw.nImpFuncs)+i, ti, len(m.Types))
	}
	if len(code.Expr) > maxBodyBytes {
		return nil, fmt.Errorf("%w: function %d has %d bytes of code, over the %d the meter's halves are sized for", ErrUnsupported, int(rw.nImpFuncs)+i, len(code.Expr), maxBodyBytes)
	}
	nLocals := uint64(len(m.Types[ti].Params))
	for _, l := range code.Locals {
		nLocals += uint64(l.Count)
	}
	if nLocals >= 1<<32-8 {
		return nil, fmt.Errorf("fuel: function %d has too many locals to add the meter's", int(rw.nImpFuncs)+i)
	}
	hasLoop, hasCall := rw.shapes[i]&hasLoopBit != 0, rw.shapes[i]&hasCallBit != 0
	fr.local, fr.checkEntry, fr.usedTemp = hasLoop, hasCall, false
	fr.callersPay = rw.leafCost[i] > 0
	fr.postCalls, fr.nextPostCall = fr.postCalls[:0], 0
	if hasCall {
		var err error
		if fr.postCalls, err = rw.tails(code, fr.postCalls); err != nil {
			return nil, fmt.Errorf("fuel: function %d: %w", int(rw.nImpFuncs)+i, err)
		}
	}
	fr.nLocals, fr.meterLocal, fr.temp = uint32(nLocals), uint32(nLocals), uint32(nLocals)
	if fr.local {
		fr.temp++
	}
	fr.depth, fr.depthLocal = hasCall, fr.temp // depth.go
	if fr.depth {
		fr.temp++
		callAt, err := rw.lastCall(code)
		if err != nil {
			return nil, fmt.Errorf("fuel: function %d: %w", int(rw.nImpFuncs)+i, err)
		}
		fr.weight = frameWeight(nLocals, callAt)
	}
	fr.refLocals = fr.refLocals[:0]
	expr, err := fr.body(code)
	if err != nil {
		return nil, fmt.Errorf("fuel: function %d: %w", int(rw.nImpFuncs)+i, err)
	}
	return expr, nil
}

// extraLocals appends to extra the types of the locals the rewrite added
// to the function just rewritten: the i64 meter's cache, the call depth,
// the two i32 temporaries of size-charged instructions, and the reference
// temporaries, each when used.
func (fr *funcRewriter) extraLocals(extra []wasmbin.ValType) []wasmbin.ValType {
	if fr.local {
		extra = append(extra, wasmbin.I64)
	}
	if fr.depth {
		extra = append(extra, wasmbin.I32)
	}
	if fr.usedTemp {
		extra = append(extra, wasmbin.I32, wasmbin.I32)
	}
	return append(extra, fr.refLocals...)
}

// appendCode appends a function's code entry: its locals copied verbatim,
// one group of one local for each of extra, and expr.
func appendCode(c []byte, code *wasmbin.Code, expr []byte, extra []wasmbin.ValType) []byte {
	locals := code.Body[:code.ExprOffset-code.BodyOffset]
	if len(extra) == 0 {
		c = wasmbin.AppendU32(c, uint32(len(locals)+len(expr)))
		c = append(c, locals...)
		return append(c, expr...)
	}
	_, groupsLen, _ := wasmbin.ReadU32(locals) // decoded once already
	groups := wasmbin.AppendU32(nil, uint32(len(code.Locals)+len(extra)))
	size := len(groups) + len(locals) - groupsLen + 2*len(extra) + len(expr)
	c = wasmbin.AppendU32(c, uint32(size))
	c = append(c, groups...)
	c = append(c, locals[groupsLen:]...)
	for _, t := range extra {
		c = append(c, 1, byte(t))
	}
	return append(c, expr...)
}

// Function shapes, from scan.
const (
	hasLoopBit = 1 << iota
	hasCallBit
)

// scanAll scans every function before any is rewritten: a call site's
// tick charge needs to know whether its callee checks on entry, and how
// much the callee may run if it does not (see unchecked).
func (rw *rewriter) scanAll() error {
	m := rw.m
	rw.shapes = make([]uint8, len(m.Codes))
	rw.maxUnchecked = 0
	for i := range m.Codes {
		hasLoop, hasCall, err := rw.scan(&m.Codes[i])
		if err != nil {
			return fmt.Errorf("fuel: function %d: %w", int(rw.nImpFuncs)+i, err)
		}
		if hasLoop {
			rw.shapes[i] |= hasLoopBit
		}
		if hasCall {
			rw.shapes[i] |= hasCallBit
		}
		rw.maxUnchecked = max(rw.maxUnchecked, rw.unchecked(uint32(i)+rw.nImpFuncs))
	}
	return rw.leaves()
}

// unchecked bounds what a call of function f (an input index) runs
// before the callee reaches a check of its own: nothing for a function
// that checks on entry (it makes calls) or an import (a host function,
// back in Go); for any other, its body's size in bytes, at least one
// byte an instruction and one unit each (its loops check on their own,
// so this bounds the code outside them as well).
func (rw *rewriter) unchecked(f uint32) int64 {
	if f < rw.nImpFuncs {
		return 0
	}
	i := f - rw.nImpFuncs
	if uint64(i) >= uint64(len(rw.shapes)) || rw.shapes[i]&hasCallBit != 0 {
		return 0
	}
	return int64(len(rw.m.Codes[i].Expr))
}

// scan finds whether a function has loops and calls. Between two checks of
// the counter (refuel happens only there) a guest must not be able to run
// unboundedly, and every unbounded execution repeats either a loop body or
// a function that calls (recursion), so only loop headers and the entries
// of functions that call are checked; every other segment just subtracts.
//
// Functions with loops also keep the counter in a local. A global lives in
// memory, so a charge on it is a load, a subtraction and a store, and in a
// tight loop the store-to-load round trip of the next iteration's charge
// becomes the loop's critical path. A local lives in a register; the
// price is writing it back to the global before every call and exit and
// reloading it after every call, which only pays off around loops.
func (rw *rewriter) scan(code *wasmbin.Code) (hasLoop, hasCall bool, err error) {
	e := code.Expr
	if bytes.IndexByte(e, byte(wasmbin.OpLoop)) < 0 && bytes.IndexByte(e, byte(wasmbin.OpCall)) < 0 &&
		bytes.IndexByte(e, byte(wasmbin.OpCallIndirect)) < 0 && bytes.IndexByte(e, byte(wasmbin.OpCallRef)) < 0 &&
		bytes.IndexByte(e, byte(wasmbin.OpReturnCall)) < 0 && bytes.IndexByte(e, byte(wasmbin.OpReturnCallIndirect)) < 0 &&
		bytes.IndexByte(e, byte(wasmbin.OpReturnCallRef)) < 0 {
		return false, false, nil
	}
	w := &rw.scanW
	w.Reset(e, code.ExprOffset)
	in := &rw.scanIn
	for {
		if err := w.Next(in); err != nil {
			if errors.Is(err, io.EOF) {
				return hasLoop, hasCall, nil
			}
			return false, false, err
		}
		switch in.Op {
		case wasmbin.OpLoop:
			hasLoop = true
		case wasmbin.OpCall, wasmbin.OpCallIndirect, wasmbin.OpCallRef,
			wasmbin.OpReturnCall, wasmbin.OpReturnCallIndirect, wasmbin.OpReturnCallRef:
			hasCall = true
		}
		if hasLoop && hasCall {
			return true, true, nil
		}
	}
}

// checkIndices refuses an instruction that names a local, global or type
// index past the module's own: the rewrite appends a local to the
// function and globals and types to the module, and would otherwise give
// such an index a meaning (a module as uploaded that sets "local 1" in a
// function of one local would be setting the meter's counter).
func (fr *funcRewriter) checkIndices(in *wasmbin.Instr) error {
	var kind, owner string
	var idx, n uint64
	switch in.Op {
	case wasmbin.OpLocalGet, wasmbin.OpLocalSet, wasmbin.OpLocalTee:
		kind, owner, idx, n = "local", "the function has", uint64(in.Index), uint64(fr.nLocals)
	case wasmbin.OpGlobalGet, wasmbin.OpGlobalSet:
		kind, owner, idx, n = "global", "the module has", uint64(in.Index), uint64(fr.rw.counter)
	case wasmbin.OpCallIndirect, wasmbin.OpReturnCallIndirect, wasmbin.OpCallRef, wasmbin.OpReturnCallRef:
		kind, owner, idx, n = "type", "the module has", uint64(in.Index), uint64(fr.rw.nTypes)
	case wasmbin.OpBlock, wasmbin.OpLoop, wasmbin.OpIf, wasmbin.OpTry, wasmbin.OpTryTable:
		if in.Block < 0 {
			return nil
		}
		kind, owner, idx, n = "type", "the module has", uint64(in.Block), uint64(fr.rw.nTypes)
	case wasmbin.OpRefNull:
		if in.HeapType < 0 {
			return nil
		}
		kind, owner, idx, n = "type", "the module has", uint64(in.HeapType), uint64(fr.rw.nTypes)
	default:
		return nil
	}
	if idx < n {
		return nil
	}
	return fmt.Errorf("%w: %s at offset %d uses %s index %d, but %s %d", ErrIndex, in.Op, in.Offset, kind, idx, owner, n)
}
