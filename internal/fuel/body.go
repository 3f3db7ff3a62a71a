package fuel

import (
	"errors"
	"io"

	"github.com/subako/subako-runner/internal/wasmbin"
)

// body returns the rewritten instructions of one function (valid until the
// next call). The walk keeps the current straight-line segment in fr.seg
// and its cost in fr.cost; at each point where control can enter from
// elsewhere (or leaves by a conditional branch) it flushes the segment
// behind a charge of its cost. After an unconditional branch the code is
// dead up to the end or else that closes its block: it is copied uncharged.
func (fr *funcRewriter) body(code *wasmbin.Code) ([]byte, error) {
	expr := code.Expr
	fr.w.Reset(expr, code.ExprOffset)
	fr.out = fr.out[:0]
	fr.seg = fr.seg[:0]
	fr.cost = 0
	fr.ctrl = fr.ctrl[:0]
	fr.wroteBack = -1
	fr.segCheck, fr.segCall, fr.segReenter, fr.segPostCall = fr.checkEntry, false, false, false
	fr.total, fr.postCallPatches = 0, fr.postCallPatches[:0]
	fr.regions, fr.open, fr.checkRegion = fr.regions[:0], fr.open[:0], -1
	if fr.checkEntry {
		fr.checkRegion = fr.openRegion(0)
	}
	if fr.local {
		fr.out = fr.reload(fr.out)
	}
	if fr.depth {
		fr.out = fr.enterDepth(fr.out)
	}
	dead := false
	in := &fr.in
	for {
		fr.closeRegions(len(fr.ctrl))
		if err := fr.w.Next(in); err != nil {
			if errors.Is(err, io.EOF) {
				break
			}
			return nil, err
		}
		if err := fr.checkIndices(in); err != nil { // dead code must be valid too
			return nil, err
		}
		final := fr.track(dead)
		if dead {
			dead = fr.deadInstr(expr)
			continue
		}
		if final || !free(in.Op) {
			fr.spend(1) // a function's final end is its return
		}
		if fr.instr(expr, final) {
			dead, fr.deadDepth = true, len(fr.ctrl)
		}
	}
	// The final end flushed the last segment.
	fr.closeRegions(-1)
	for _, p := range fr.postCallPatches {
		putRegionCharge(fr.out[p.at:p.at+regionChargeLen], fr.total, p.cost)
	}
	return fr.out, nil
}

// track follows the block structure, in dead code too: it opens a frame
// for the instruction that starts a block and reports whether the
// instruction is the function's final end.
func (fr *funcRewriter) track(dead bool) (final bool) {
	in := &fr.in
	switch in.Op {
	case wasmbin.OpBlock, wasmbin.OpLoop, wasmbin.OpIf, wasmbin.OpTry, wasmbin.OpTryTable:
		fr.ctrl = append(fr.ctrl, frame{op: in.Op})
		if in.Op == wasmbin.OpTryTable && !dead {
			for _, c := range in.Catches {
				fr.target(c.Label + 1) // catch labels count from outside the try_table
			}
		}
	case wasmbin.OpEnd:
		return len(fr.ctrl) == 0
	}
	return false
}

// deadInstr copies an instruction of dead code uncharged and reports
// whether the code after it is still dead. The end, else or catch of the
// block the dead stretch began in is reached only by branches: it starts
// a segment, and live code.
func (fr *funcRewriter) deadInstr(expr []byte) (stillDead bool) {
	switch fr.in.Op {
	case wasmbin.OpEnd, wasmbin.OpDelegate:
		if len(fr.ctrl) == fr.deadDepth {
			fr.joins()
			fr.copy(expr)
			fr.flush()
			return false
		}
		fr.ctrl = fr.ctrl[:len(fr.ctrl)-1]
	case wasmbin.OpElse, wasmbin.OpCatch, wasmbin.OpCatchAll:
		if len(fr.ctrl) == fr.deadDepth {
			fr.copy(expr)
			fr.flush()
			return false
		}
	}
	fr.copy(expr)
	return true
}

// instr rewrites one live instruction, already charged its unit, by its
// class: block structure, branches, exits from the frame, calls, and the
// instructions charged for their size; any other is copied as it is. It
// reports whether the code after it is dead (control leaves for good).
func (fr *funcRewriter) instr(expr []byte, final bool) (leaves bool) {
	switch fr.in.Op {
	case wasmbin.OpEnd, wasmbin.OpDelegate, wasmbin.OpElse, wasmbin.OpCatch, wasmbin.OpCatchAll,
		wasmbin.OpLoop, wasmbin.OpIf:
		fr.blockInstr(expr, final)
	case wasmbin.OpBrIf, wasmbin.OpBrOnNull, wasmbin.OpBrOnNonNull, wasmbin.OpBr, wasmbin.OpBrTable:
		return fr.branchInstr(expr)
	case wasmbin.OpReturnCall:
		fr.returnCall(expr)
		return true
	case wasmbin.OpReturn, wasmbin.OpUnreachable,
		wasmbin.OpReturnCallIndirect, wasmbin.OpReturnCallRef,
		wasmbin.OpThrow, wasmbin.OpRethrow, wasmbin.OpThrowRef:
		fr.exit(expr)
		return true
	case wasmbin.OpCall, wasmbin.OpCallIndirect, wasmbin.OpCallRef:
		fr.call(expr)
	case wasmbin.OpMemoryGrow, wasmbin.OpMemoryFill, wasmbin.OpMemoryCopy, wasmbin.OpMemoryInit,
		wasmbin.OpTableGrow, wasmbin.OpTableFill, wasmbin.OpTableCopy, wasmbin.OpTableInit:
		fr.sized(expr)
	default:
		fr.copy(expr)
	}
	return false
}

// blockInstr rewrites the structure of blocks: an end (a new segment if
// it is a join), an else or catch (always one), a loop header and an if.
func (fr *funcRewriter) blockInstr(expr []byte, final bool) {
	in := &fr.in
	switch in.Op {
	case wasmbin.OpEnd, wasmbin.OpDelegate:
		if in.Op == wasmbin.OpDelegate {
			fr.target(in.Index + 1)
		}
		if final {
			fr.seg = fr.storeLevel(fr.seg, true)
			fr.writeback()
		}
		fr.copy(expr)
		if fr.joins() {
			fr.flush()
		}
	case wasmbin.OpElse, wasmbin.OpCatch, wasmbin.OpCatchAll:
		fr.copy(expr)
		fr.flush()
	case wasmbin.OpLoop:
		fr.loopHeader(expr)
	case wasmbin.OpIf:
		// The then arm runs only if the condition says so.
		fr.copy(expr)
		fr.split()
	}
}

// loopHeader starts the segment of a loop body, entered again by every
// backward branch, with the check. The check pending for the segment that
// ends here moves to this loop's header when that segment runs straight
// into it (no conditional, no call): every way round the outer loop, and
// every path from a function's entry, then passes this check first.
// Without the move, nested loops would each get an if/else of their own,
// and wazero's compile time, quadratic in a function's blocks, goes from
// 6.6 s to 105 s for 20,000 of them. The moved check keeps its region,
// which then spans this loop too: it is passed on every way round either.
func (fr *funcRewriter) loopHeader(expr []byte) {
	fr.copy(expr)
	// A check after a call's return stays where it is (tails asked for it
	// only when the code before this header can run long, and it charges
	// the tick for that code): moved here it would charge the function's
	// whole cost at every iteration.
	moved := fr.segCheck && !fr.segPostCall && len(fr.splits) == 0 && !fr.segCall
	if moved {
		fr.segCheck = false
	}
	block := fr.in.Block
	fr.flush()
	fr.segCheck, fr.segReenter = true, fr.rw.takesNoParams(block)
	if !moved {
		fr.checkRegion = fr.openRegion(len(fr.ctrl))
	}
}

// branchInstr rewrites br, br_table and the conditional branches, and
// reports whether the code after it is dead (an unconditional branch).
func (fr *funcRewriter) branchInstr(expr []byte) (leaves bool) {
	in := &fr.in
	switch in.Op {
	case wasmbin.OpBr:
		fr.branch(in.Index)
		fr.copy(expr)
		return true
	case wasmbin.OpBrTable:
		for _, l := range in.Labels {
			fr.branch(l)
		}
		fr.branch(in.Index)
		fr.copy(expr)
		return true
	}
	// The code after a conditional branch runs only if it is not taken.
	// After a backward branch it is the loop's exit, which runs once
	// where the loop body runs many times: always a new segment then,
	// lest every iteration pay for the exit.
	back := fr.branch(in.Index)
	fr.copy(expr)
	if back {
		fr.flush()
	} else {
		fr.split()
	}
	return false
}

// returnCall rewrites a return_call: the callee's run before its own
// check joins the region, a small leaf's cost this segment, and the frame
// is left (depth.go) with the meter written back.
func (fr *funcRewriter) returnCall(expr []byte) {
	in := &fr.in
	if fr.reachesHost(in) {
		fr.hostCall()
	}
	fr.regionAdd(fr.rw.unchecked(in.Index))
	fr.cost += fr.rw.leafCostOf(in.Index)
	fr.seg = fr.storeLevel(fr.seg, true)
	fr.writeback()
	fr.copy(expr)
}

// exit rewrites the other ways out of the frame: return, unreachable,
// the indirect tail calls (charged as return_call is, for any callee of
// their type) and the throws.
func (fr *funcRewriter) exit(expr []byte) {
	in := &fr.in
	if in.Op == wasmbin.OpReturnCallIndirect || in.Op == wasmbin.OpReturnCallRef {
		if fr.reachesHost(in) {
			fr.hostCall()
		}
		fr.regionAdd(fr.rw.maxUnchecked)
		fr.cost += fr.rw.callees(in.Index).leafCost
	}
	if in.Op == wasmbin.OpReturn || in.Op == wasmbin.OpReturnCallIndirect || in.Op == wasmbin.OpReturnCallRef {
		fr.seg = fr.storeLevel(fr.seg, true) // leaving the frame (depth.go)
	}
	fr.writeback()
	fr.copy(expr)
}

// call rewrites call, call_indirect and call_ref. A small leaf's cost is
// paid here, with this segment's charge (the tick's region has its size
// already, as that of any callee that does not check on entry).
func (fr *funcRewriter) call(expr []byte) {
	in := &fr.in
	charges := true
	if fr.reachesHost(in) {
		fr.hostCall() // hostcall.go
	}
	if in.Op == wasmbin.OpCall {
		fr.regionAdd(fr.rw.unchecked(in.Index))
		leaf := fr.rw.leafCostOf(in.Index)
		fr.cost += leaf
		charges = leaf == 0
	} else {
		fr.regionAdd(fr.rw.maxUnchecked)
		c := fr.rw.callees(in.Index)
		fr.cost += c.leafCost
		charges = c.needsSync
	}
	if !charges {
		// Nothing it calls touches the counter: no writeback, and the
		// segment runs on as straight code.
		fr.copy(expr)
		return
	}
	fr.segCall = true
	// The callee charges the global.
	fr.writeback()
	fr.copy(expr)
	if fr.local {
		fr.seg = fr.reload(fr.seg)
	}
	fr.seg = fr.storeLevel(fr.seg, false)
	if fr.checksAfter(in.Start) {
		fr.postCall()
	}
}
