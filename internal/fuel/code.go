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
		// The locals: copied verbatim, plus the i64 meter's cache and
		// the two i32 temporaries of size-charged instructions when used.
		extra = extra[:0]
		if fr.local {
			extra = append(extra, wasmbin.I64)
		}
		if fr.depth {
			extra = append(extra, wasmbin.I32)
		}
		if fr.usedTemp {
			extra = append(extra, wasmbin.I32, wasmbin.I32)
		}
		extra = append(extra, fr.refLocals...)
		locals := code.Body[:code.ExprOffset-code.BodyOffset]
		if len(extra) == 0 {
			c = wasmbin.AppendU32(c, uint32(len(locals)+len(expr)))
			c = append(c, locals...)
			c = append(c, expr...)
			continue
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
		c = append(c, expr...)
	}
	return c, nil
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

// funcRewriter holds the buffers reused across function bodies.
type funcRewriter struct {
	rw   *rewriter
	w    wasmbin.Walker
	in   wasmbin.Instr
	out  []byte // the rewritten expression
	seg  []byte // the current segment, not yet charged
	cost int64  // static cost of seg
	// local: the meter is cached in local meterLocal (see reload and
	// writeback).
	local      bool
	nLocals    uint32 // the function's own parameters and locals
	meterLocal uint32
	temp       uint32 // index of the first i32 temporary; the second is temp+1
	usedTemp   bool
	// depth: the function counts its frame (depth.go), its level in
	// local depthLocal, its frame's weight weight.
	depth      bool
	depthLocal uint32
	weight     int64
	// refLocals are the types of the reference temporaries table.grow
	// needs, one per element type, declared after the temporaries.
	refLocals []wasmbin.ValType
	ctrl      []frame // the open blocks, innermost last
	// deadDepth is len(ctrl) where the current dead stretch began.
	deadDepth int
	// wroteBack is len(seg) just after the last writeback, so that a
	// br_table with several labels out of the function writes back once.
	wroteBack int
	splits    []splitPoint
	// segCheck: the current segment's charge is followed by a check;
	// checkEntry: the function's entry segment is.
	segCheck, checkEntry bool
	// segCall: the current segment makes a call that may charge the
	// counter (not one of a small leaf).
	segCall bool
	// callersPay: this function is a small leaf, whose callers pay its
	// cost (see leaves); it charges nothing itself.
	callersPay bool
	// segReenter: the pending check is at a loop header the refuel arm
	// can branch back to (see check).
	segReenter bool
	// segPostCall: the pending check follows a call's return (see
	// postCall); it charges the tick the function's whole cost, total,
	// written at the function's end where postCallPatches say.
	segPostCall     bool
	total           int64
	postCallPatches []patch
	// postCalls are the offsets of the calls that get a check after
	// their return (see tails), nextPostCall the first not yet passed.
	postCalls    []int
	nextPostCall int

	// The tick's regions (see region): all of this function's, the open
	// ones innermost last, and the one the pending check charges.
	regions     []region
	open        []int
	checkRegion int
}

// region is the code one check pays for in the tick: the instructions
// of the loop (or, for a function's entry check, the function) whose
// header the check is at, outside the nested loops that check on their
// own, plus what the calls made from it run before their callees check.
// Between two passes of a check, no more than its region runs, so the
// tick, charged a region's cost at every check, bounds what the guest ran
// whatever the fuel counter says.
type region struct {
	owner int   // len(ctrl) when the region's frame is open; 0: the function
	cost  int64 // the region's cost so far
	// patch and rePatch are where its cost goes in out: the check's
	// charge and, in a re-entering check, the refuel arm's give-back (-1:
	// not emitted yet); patchCost and rePatchCost the fuel charges that
	// share those constants (see regionCharge).
	patch, rePatch         int
	patchCost, rePatchCost int64
	done                   bool // closed: cost is final
}

// frame is an open block. An end is a join point, where a new segment
// must start, only if something other than the fall-through reaches the
// code after it: a branch to the block's label, or the false edge of an if
// without else. A loop's label is its header, so the code after a loop's
// end is reached by fall-through only.
type frame struct {
	op       wasmbin.Opcode
	targeted bool
}

// target marks the block a branch to label depth d leaves (catch clauses
// and delegate, which the runtime cannot leave through metered code).
func (fr *funcRewriter) target(d uint32) {
	if uint64(d) < uint64(len(fr.ctrl)) {
		fr.ctrl[len(fr.ctrl)-1-int(d)].targeted = true
	}
}

// joins pops the innermost block at its end and reports whether the code
// after it is a join point.
func (fr *funcRewriter) joins() bool {
	if len(fr.ctrl) == 0 {
		return true // the function's final end: nothing follows
	}
	f := fr.ctrl[len(fr.ctrl)-1]
	fr.ctrl = fr.ctrl[:len(fr.ctrl)-1]
	switch f.op {
	case wasmbin.OpLoop:
		return false
	case wasmbin.OpIf:
		return true // both arms, or the arm and the false edge, meet
	case wasmbin.OpBlock, wasmbin.OpTryTable:
		return f.targeted
	}
	return true // legacy try: its catches fall through to the end
}

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
		// The block structure is tracked in dead code too.
		final := false
		switch in.Op {
		case wasmbin.OpBlock, wasmbin.OpLoop, wasmbin.OpIf, wasmbin.OpTry, wasmbin.OpTryTable:
			fr.ctrl = append(fr.ctrl, frame{op: in.Op})
			if in.Op == wasmbin.OpTryTable && !dead {
				for _, c := range in.Catches {
					fr.target(c.Label + 1) // catch labels count from outside the try_table
				}
			}
		case wasmbin.OpEnd:
			final = len(fr.ctrl) == 0
		}
		if dead {
			switch in.Op {
			case wasmbin.OpEnd, wasmbin.OpDelegate:
				if len(fr.ctrl) == fr.deadDepth {
					// The end of the block the dead code is in: reached
					// only by branches, so a join.
					fr.joins()
					dead = false
					fr.copy(expr)
					fr.flush()
					continue
				}
				fr.ctrl = fr.ctrl[:len(fr.ctrl)-1]
			case wasmbin.OpElse, wasmbin.OpCatch, wasmbin.OpCatchAll:
				if len(fr.ctrl) == fr.deadDepth {
					dead = false
					fr.copy(expr)
					fr.flush()
					continue
				}
			}
			fr.copy(expr)
			continue
		}
		if final || !free(in.Op) {
			fr.spend(1) // a function's final end is its return
		}
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
			// A loop body is entered again by every backward branch: a new
			// segment, with the check. The check pending for the segment
			// that ends here moves to this loop's header when that segment
			// runs straight into it (no conditional, no call): every way
			// round the outer loop, and every path from a function's entry,
			// then passes this check first. Nested loops otherwise each
			// got an if/else of their own, and wazero's compile time,
			// quadratic in a function's blocks, went from 6.6 s to 105 s
			// for 20,000 of them.
			// The moved check keeps its region, which then spans this
			// loop too: it is passed on every way round either.
			fr.copy(expr)
			// A check after a call's return stays where it is (tails
			// asked for it only when the code before this header can run
			// long, and it charges the tick for that code): moved here it
			// would charge the function's whole cost at every iteration.
			moved := fr.segCheck && !fr.segPostCall && len(fr.splits) == 0 && !fr.segCall
			if moved {
				fr.segCheck = false
			}
			block := in.Block
			fr.flush()
			fr.segCheck, fr.segReenter = true, fr.rw.takesNoParams(block)
			if !moved {
				fr.checkRegion = fr.openRegion(len(fr.ctrl))
			}
		case wasmbin.OpIf:
			// The then arm runs only if the condition says so.
			fr.copy(expr)
			fr.split()
		case wasmbin.OpBrIf, wasmbin.OpBrOnNull, wasmbin.OpBrOnNonNull:
			// The code after a conditional branch runs only if it is not
			// taken. After a backward branch it is the loop's exit, which
			// runs once where the loop body runs many times: always a new
			// segment then, lest every iteration pay for the exit.
			back := fr.branch(in.Index)
			fr.copy(expr)
			if back {
				fr.flush()
			} else {
				fr.split()
			}
		case wasmbin.OpBr:
			fr.branch(in.Index)
			fr.copy(expr)
			dead, fr.deadDepth = true, len(fr.ctrl)
		case wasmbin.OpBrTable:
			for _, l := range in.Labels {
				fr.branch(l)
			}
			fr.branch(in.Index)
			fr.copy(expr)
			dead, fr.deadDepth = true, len(fr.ctrl)
		case wasmbin.OpReturnCall:
			if fr.reachesHost(in) {
				fr.hostCall()
			}
			fr.regionAdd(fr.rw.unchecked(in.Index))
			fr.cost += fr.rw.leafCostOf(in.Index)
			fr.seg = fr.storeLevel(fr.seg, true)
			fr.writeback()
			fr.copy(expr)
			dead, fr.deadDepth = true, len(fr.ctrl)
		case wasmbin.OpReturn, wasmbin.OpUnreachable,
			wasmbin.OpReturnCallIndirect, wasmbin.OpReturnCallRef,
			wasmbin.OpThrow, wasmbin.OpRethrow, wasmbin.OpThrowRef:
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
			dead, fr.deadDepth = true, len(fr.ctrl)
		case wasmbin.OpCall, wasmbin.OpCallIndirect, wasmbin.OpCallRef:
			// A small leaf's cost is paid here, with this segment's
			// charge (the tick's region has its size already, as that of
			// any callee that does not check on entry).
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
				// Nothing it calls touches the counter: no writeback,
				// and the segment runs on as straight code.
				fr.copy(expr)
				break
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
		case wasmbin.OpMemoryGrow:
			fr.grown(pageShift, func() { fr.copy(expr) })
		case wasmbin.OpMemoryFill, wasmbin.OpMemoryCopy, wasmbin.OpMemoryInit:
			fr.done(bulkShift, func() { fr.copy(expr) })
		case wasmbin.OpTableGrow:
			fr.grown(0, func() { fr.tableGrow(in.Index) })
		case wasmbin.OpTableFill, wasmbin.OpTableCopy, wasmbin.OpTableInit:
			fr.done(0, func() { fr.copy(expr) })
		default:
			fr.copy(expr)
		}
	}
	// The final end flushed the last segment.
	fr.closeRegions(-1)
	for _, p := range fr.postCallPatches {
		putRegionCharge(fr.out[p.at:p.at+regionChargeLen], fr.total, p.cost)
	}
	return fr.out, nil
}

// spend adds n to the cost of the current segment and of the region.
func (fr *funcRewriter) spend(n int64) {
	fr.cost += n
	fr.regionAdd(n)
}

// regionAdd adds n to the innermost open region's cost. Code outside
// every region (a function that makes no calls, outside its loops) runs
// at most once a call, and its caller's region paid for it.
func (fr *funcRewriter) regionAdd(n int64) {
	fr.total += n
	if len(fr.open) > 0 {
		fr.regions[fr.open[len(fr.open)-1]].cost += n
	}
}

// openRegion opens a region that the end of the frame at depth owner
// closes (0: the function's final end).
func (fr *funcRewriter) openRegion(owner int) int {
	fr.regions = append(fr.regions, region{owner: owner, patch: -1, rePatch: -1})
	fr.open = append(fr.open, len(fr.regions)-1)
	return len(fr.regions) - 1
}

// closeRegions closes the open regions whose frame has ended (depth is
// the number of frames still open; -1 closes all), writing each one's
// cost where its check was emitted.
func (fr *funcRewriter) closeRegions(depth int) {
	for len(fr.open) > 0 {
		r := &fr.regions[fr.open[len(fr.open)-1]]
		if depth >= 0 && r.owner <= depth {
			return
		}
		fr.open = fr.open[:len(fr.open)-1]
		r.done = true
		if r.patch >= 0 {
			putRegionCharge(fr.out[r.patch:r.patch+regionChargeLen], r.cost, r.patchCost)
		}
		if r.rePatch >= 0 {
			putRegionCharge(fr.out[r.rePatch:r.rePatch+regionChargeLen], r.cost, r.rePatchCost)
		}
	}
}

// regionChargeLen is the width of a check's charge in the code: an
// i64.const written before its region's cost is known, in a fixed-width
// LEB128 that closeRegions overwrites. Nine bytes hold 63 bits, and a
// charge is below 2^62.
const regionChargeLen = 9

// maxRegionCost caps a region's charge to what the tick's half of the
// meter can take without running into its sign more than once. A region
// that costs more than a tick's grant (maxSlice<<tickShift, 2^26)
// refuels at every pass of its check anyway.
const maxRegionCost = 1<<30 - 1

// putRegionCharge writes region<<32 + cost into b as a padded signed
// LEB128, the region cost at least 1: every pass costs something, so the
// tick always moves.
func putRegionCharge(b []byte, region, cost int64) {
	v := min(max(region, 1), maxRegionCost)<<32 + cost
	for i := range regionChargeLen - 1 {
		b[i] = byte(v>>(7*i))&0x7f | 0x80
	}
	b[regionChargeLen-1] = byte(v>>(7*(regionChargeLen-1))) & 0x7f
}

// free reports whether an instruction costs nothing: block, loop, nop and
// the end of a block, loop or if only mark structure and compile to no
// code (a function's final end is its return and costs 1). Charging them
// would bill
// work that never runs, and a lot of it: Go's output opens one block per
// resume point at its functions' dispatch loop (hundreds in a big
// function) and re-enters that loop at every iteration of any loop the
// function has, so a busy loop of three real instructions was charged
// some 800. Every loop iteration still costs at least its back-edge
// branch, and every call its call instruction.
func free(op wasmbin.Opcode) bool {
	switch op {
	case wasmbin.OpBlock, wasmbin.OpLoop, wasmbin.OpEnd, wasmbin.OpNop:
		return true
	}
	return false
}

// branch notes a branch to label depth d: the block it leaves has a join
// at its end, and a branch out of the function must write the counter
// back first. It reports whether the target is a loop (a backward branch).
func (fr *funcRewriter) branch(d uint32) bool {
	if uint64(d) >= uint64(len(fr.ctrl)) {
		fr.writeback()
		return false
	}
	f := &fr.ctrl[len(fr.ctrl)-1-int(d)]
	f.targeted = true
	return f.op == wasmbin.OpLoop
}

// copy appends the current instruction to the segment, remapping its
// function index if it has one.
func (fr *funcRewriter) copy(expr []byte) {
	in := &fr.in
	switch in.Op {
	case wasmbin.OpCall, wasmbin.OpReturnCall, wasmbin.OpRefFunc:
		fr.seg = append(fr.seg, byte(in.Op))
		fr.seg = wasmbin.AppendU32(fr.seg, fr.rw.fn(in.Index))
	default:
		fr.seg = append(fr.seg, expr[in.Start:in.End]...)
	}
}

// writeback stores a cached meter into the global (local.get M;
// global.set C), once per point however many branches ask for it.
func (fr *funcRewriter) writeback() {
	if !fr.local || fr.wroteBack == len(fr.seg) {
		return
	}
	fr.seg = append(fr.seg, 0x20)
	fr.seg = wasmbin.AppendU32(fr.seg, fr.meterLocal)
	fr.seg = append(fr.seg, 0x24)
	fr.seg = wasmbin.AppendU32(fr.seg, fr.rw.counter)
	fr.wroteBack = len(fr.seg)
}

// reload appends global.get C; local.set M.
func (fr *funcRewriter) reload(b []byte) []byte {
	b = append(b, 0x23)
	b = wasmbin.AppendU32(b, fr.rw.counter)
	b = append(b, 0x21)
	return wasmbin.AppendU32(b, fr.meterLocal)
}

// get and set address the meter where it lives: the local M in a
// function that caches it, else the global C.
func (fr *funcRewriter) get(b []byte) []byte { return fr.access(b, false) }
func (fr *funcRewriter) set(b []byte) []byte { return fr.access(b, true) }

// access appends local.get/local.set of M, or global.get/global.set of C
// when the function keeps no cache.
func (fr *funcRewriter) access(b []byte, set bool) []byte {
	op, idx := byte(0x20), fr.meterLocal // local.get
	if !fr.local {
		op, idx = 0x23, fr.rw.counter // global.get
	}
	if set {
		op++ // local.set, global.set
	}
	return wasmbin.AppendU32(append(b, op), idx)
}

// The meter: one i64 that holds both lines of the deadline, in the local
// M of a function with loops (a register), else in the global C.
//
//   - The fuel counter is its low 32 bits, a signed int32: the fuel left
//     in the slice, charged by the cost model.
//   - The tick is its high 32 bits, a signed int32: charged its region's
//     static cost at every check (an upper bound of what runs until the
//     check is passed again, see region), by the code's structure rather
//     than the cost model, and the dynamic costs of bulk instructions and
//     growths.
//
// Every check tests both sign bits, "meter & (1<<63 | 1<<31) == 0", else
// refuel; refuel returns both halves anew, the tick's grant tickShift
// bits above the fuel's. A guest whose fuel was fooled (written, or
// charged too little) still returns to Go, where the host checks its
// context, within a tick's grant: no goroutine of the host has to run to
// stop it, which matters because none can while a guest spinning in
// compiled code holds up a stop-the-world.
//
// Two counters in one register rather than two: a check is one
// subtraction of both charges (region<<32 + cost) and one test, where it
// was two subtractions, an or and a test, and a loop keeps one value of
// the meter's in a register where it kept two (the C benchmark: 1.10×
// with two, 1.07× with one, metered against unmetered). A fuel charge that
// takes the low half below zero borrows one from the tick, which only
// makes the tick's bound a unit tighter. The halves never run into each
// other: a slice grants at most maxSlice (2^22) fuel and 2^26 tick, a
// check's region charge is capped at maxRegionCost (2^30), and between
// two checks the fuel falls by at most the static cost of one function
// body (maxBodyBytes bounds it), maxUncheckedTail a frame of an unwinding
// stack (tail.go) and one dynamic charge (2^28 at most, and a check
// follows each).
const tickShift = 4

// maxBodyBytes bounds a function body, and with it what the fuel half
// can fall by between two checks: at most one unit a byte, or
// smallLeafBytes for a call of a small leaf (two bytes at least), 2^29
// in all, with one dynamic charge (2^28) and a slice (2^22) still well
// above the half's -2^31. The upload limits allow 32 MiB of code in all.
const maxBodyBytes = 1 << 24

// The meter's halves, as the check tests them.
const (
	fuelSign = 1 << 31
	tickSign = -1 << 63
)

// check appends the overdraft check: if either half of the meter is
// negative, hand the meter to refuel and store what comes back.
//
//	<get>; i64.const mask; i64.and; i64.eqz; if; else;
//	<get>; call refuel; <set>; end
//
// The empty then arm is deliberate: wazero lays the then arm out as the
// fall-through, so the common case runs straight on and the refuel call is
// out of line. Measured on the C benchmark, this shape cost half of what
// "i64.lt_s; if; refuel; end" did.
func (fr *funcRewriter) check(b []byte) []byte {
	b = fr.refuelArm(fr.test(b))
	return append(b, 0x0b)
}

// refuelArm appends the refuel: <get>; call refuel; <set>.
func (fr *funcRewriter) refuelArm(b []byte) []byte {
	b = fr.get(b)
	b = append(b, 0x10)
	b = wasmbin.AppendU32(b, fr.rw.refuel)
	return fr.set(b)
}

// reenteringCheck is check at a loop header, whose refuel arm branches
// back to the header instead of falling through:
//
//	<get>; i64.const mask; i64.and; i64.eqz; if; else;
//	<get>; call refuel; <set>;
//	<get>; i64.const region<<32 + cost; i64.add; <set>; br 1; end
//
// The arm gives back what the header charges again (the header's cost,
// the region's), so what the guest is charged stays exact. Falling
// through would join the arm's meter with the straight path's after the
// if: one more value for the compiler to merge at every iteration of the
// hottest loops, where the loop header already merges its back edges.
// Measured on the C benchmark (three runs each, metered against
// unmetered): 1.13×, 1.15×, 1.31× falling through; 1.09×, 1.09×, 1.10×
// re-entering.
func (fr *funcRewriter) reenteringCheck(b []byte, cost int64) []byte {
	b = fr.refuelArm(fr.test(b))
	b = fr.get(b)
	b = fr.regionCharge(b, true, cost)
	b = append(b, 0x7c) // i64.add
	b = fr.set(b)
	return append(b, 0x0c, 0x01, 0x0b) // br 1 (the loop); end
}

// test appends the start of a check, up to its refuel arm:
//
//	<get>; i64.const mask; i64.and; i64.eqz; if; else
func (fr *funcRewriter) test(b []byte) []byte {
	var mask int64
	switch fr.rw.only {
	case counterLine:
		mask = fuelSign
	case tickLine:
		mask = tickSign
	default:
		mask = tickSign | fuelSign
	}
	b = fr.get(b)
	b = append(b, 0x42)
	b = wasmbin.AppendS64(b, mask)
	return append(b, 0x83, 0x50, 0x04, 0x40, 0x05) // i64.and; i64.eqz; if; else
}

// regionCharge appends i64.const with both of a check's charges: the
// pending check's region cost in the high half, cost (the fuel charge of
// the check's segment) in the low; or room for it that closeRegions
// fills, recorded as the region's check charge or, re, its refuel arm's
// give-back.
func (fr *funcRewriter) regionCharge(b []byte, re bool, cost int64) []byte {
	b = append(b, 0x42)
	pos := len(b)
	b = append(b, make([]byte, regionChargeLen)...)
	r := &fr.regions[fr.checkRegion]
	switch {
	case r.done:
		putRegionCharge(b[pos:], r.cost, cost)
	case re:
		r.rePatch, r.rePatchCost = pos, cost
	default:
		r.patch, r.patchCost = pos, cost
	}
	return b
}

// takesNoParams reports whether a block of type bt starts with an empty
// operand stack of its own, so that code inside it can branch to a loop
// of that type with nothing to pass.
func (rw *rewriter) takesNoParams(bt wasmbin.BlockType) bool {
	if bt < 0 {
		return true // empty, or a single result
	}
	return uint64(bt) < uint64(len(rw.m.Types)) && len(rw.m.Types[bt].Params) == 0
}

// mergeMax bounds the code a conditional skips that is still charged with
// the code before it (see split).
const mergeMax = 8

// split marks a point in the segment where the code that follows may be
// skipped (an if's then arm, the code after a forward br_if). The piece up
// to the next split or flush gets its own charge only if it costs more
// than mergeMax; a smaller one is charged with the code before it, even
// when skipped. Exact counting would charge every piece separately, and
// cost (measured on the MCP SDK guest) 5% more code, 30% longer
// compilation and a few percent of run time, for pieces that are mostly
// an "i32.const 1; return" after a call.
func (fr *funcRewriter) split() {
	fr.splits = append(fr.splits, splitPoint{pos: len(fr.seg), cost: fr.cost})
}

type splitPoint struct {
	pos  int   // offset in seg
	cost int64 // seg's cost up to pos
}

// flush emits the segment, each of its charge groups behind its charge
// (none for a group that costs nothing); the first group's charge is
// checked if the segment starts at a loop header or a calling function's
// entry.
//
//	<get>; i64.const cost; i64.sub; <set> (unchecked)
//	<get>; i64.const region<<32 + cost; i64.sub; <set>; check (checked)
func (fr *funcRewriter) flush() {
	start, cost := 0, int64(0) // the open group: seg[start:], charged cost
	for i, sp := range fr.splits {
		end := fr.cost
		if i+1 < len(fr.splits) {
			end = fr.splits[i+1].cost
		}
		if end-sp.cost > mergeMax { // the piece at sp gets its own charge
			fr.charge(sp.cost - cost)
			fr.out = append(fr.out, fr.seg[start:sp.pos]...)
			start, cost = sp.pos, sp.cost
		}
	}
	fr.charge(fr.cost - cost)
	fr.out = append(fr.out, fr.seg[start:]...)
	fr.splits = fr.splits[:0]
	fr.segCall = false
	fr.seg = fr.seg[:0]
	fr.wroteBack = -1
	fr.cost = 0
}

// charge appends one charge to out; only the segment's first is checked.
// A checked charge of nothing still checks: a loop header or a calling
// function's entry may start with instructions that cost nothing (see
// free), and the check must not move off the path every iteration takes.
func (fr *funcRewriter) charge(cost int64) {
	switch {
	case fr.segCheck:
		// Both halves in one subtraction: the tick's region above the
		// segment's fuel.
		fr.out = fr.get(fr.out)
		if fr.segPostCall {
			fr.out = append(fr.out, 0x42)
			fr.postCallPatches = append(fr.postCallPatches, patch{at: len(fr.out), cost: cost})
			fr.out = append(fr.out, make([]byte, regionChargeLen)...)
		} else {
			fr.out = fr.regionCharge(fr.out, false, cost)
		}
		fr.out = append(fr.out, 0x7d) // i64.sub
		fr.out = fr.set(fr.out)
	case cost > 0 && !fr.callersPay:
		fr.out = fr.get(fr.out)
		fr.out = append(fr.out, 0x42)
		fr.out = wasmbin.AppendS64(fr.out, cost)
		fr.out = append(fr.out, 0x7d)
		fr.out = fr.set(fr.out)
	}
	if fr.segCheck {
		if fr.segReenter {
			fr.out = fr.reenteringCheck(fr.out, cost)
		} else {
			fr.out = fr.check(fr.out)
		}
	}
	fr.segCheck, fr.segReenter, fr.segPostCall = false, false, false
}

// postCall ends the segment at a call that may charge the meter, and
// makes the code after its return a segment that checks. Without it, a
// guest unwinding a deep recursion ran every frame's code after the call
// with no check at all: 20,000 frames of a function whose code after its
// recursive call was 300,000 instructions ran 1.2 s past a 200 ms
// deadline, and finished, and the stack holds millions of frames. The
// check charges the tick the function's whole cost (an upper bound of
// what runs from the return to the next check), so that the second line
// holds there too. A call straight before a loop header leaves it to the
// loop's check.
func (fr *funcRewriter) postCall() {
	fr.flush()
	fr.segCheck, fr.segPostCall = true, true
}

// checksAfter reports whether the call at offset start gets a check
// after its return.
func (fr *funcRewriter) checksAfter(start int) bool {
	for fr.nextPostCall < len(fr.postCalls) && fr.postCalls[fr.nextPostCall] < start {
		fr.nextPostCall++ // in dead code
	}
	return fr.nextPostCall < len(fr.postCalls) && fr.postCalls[fr.nextPostCall] == start
}

// patch is a check's charge written when the cost of what it charges for
// is known: at out[at:], with cost, the segment's fuel, in the low half.
type patch struct {
	at   int
	cost int64
}

// tableGrow appends table.grow x behind the host's permission: with the
// initial value and the delta on the stack,
//
//	local.set t; local.set r; i32.const x; table.size x; local.get t;
//	call grow_table; if (result i32); local.get r; local.get t;
//	table.grow x; else; i32.const -1; end
//
// so a refused growth yields -1, as a failed table.grow does, and the
// host never allocates for it. dynamic already made the temporary live.
func (fr *funcRewriter) tableGrow(x uint32) {
	var t wasmbin.ValType = wasmbin.FuncRef
	if uint64(x) < uint64(len(fr.rw.tableTypes)) {
		t = fr.rw.tableTypes[x]
	}
	r := fr.refLocal(t)
	b := append(fr.seg, 0x21)
	b = wasmbin.AppendU32(b, fr.temp)
	b = append(b, 0x21)
	b = wasmbin.AppendU32(b, r)
	b = append(b, 0x41)
	b = wasmbin.AppendS64(b, int64(int32(x)))
	b = append(b, 0xfc, 16) // table.size
	b = wasmbin.AppendU32(b, x)
	b = append(b, 0x20)
	b = wasmbin.AppendU32(b, fr.temp)
	b = append(b, 0x10)
	b = wasmbin.AppendU32(b, fr.rw.growTable)
	b = append(b, 0x04, 0x7f) // if (result i32)
	b = append(b, 0x20)
	b = wasmbin.AppendU32(b, r)
	b = append(b, 0x20)
	b = wasmbin.AppendU32(b, fr.temp)
	b = append(b, 0xfc, 15) // table.grow
	b = wasmbin.AppendU32(b, x)
	b = append(b, 0x05, 0x41, 0x7f, 0x0b) // else i32.const -1 end
	fr.seg = b
}

// refLocal returns the index of the reference temporary of type t,
// declaring it on first use.
func (fr *funcRewriter) refLocal(t wasmbin.ValType) uint32 {
	for i, u := range fr.refLocals {
		if u == t {
			return fr.temp + 2 + uint32(i)
		}
	}
	fr.refLocals = append(fr.refLocals, t)
	return fr.temp + 1 + uint32(len(fr.refLocals))
}

// done appends a size-dependent instruction whose i32 size operand is
// on top of the stack (memory.fill/copy/init, table.fill/copy/init),
// emitted by op, followed by a charge of size>>shift. The charge comes
// after the work: an instruction that traps (out of bounds) did no work
// and ends the instance anyway, so the guest pays for what ran, never for
// what it asked for, and a huge size cannot buy a huge refill slice.
//
//	local.tee t; <op>; <get>; local.get t; i64.extend_i32_u;
//	[i64.const shift; i64.shr_u]; i64.sub; <set>; the same on the tick; check
func (fr *funcRewriter) done(shift int, op func()) {
	fr.usedTemp = true
	fr.seg = append(fr.seg, 0x22)
	fr.seg = wasmbin.AppendU32(fr.seg, fr.temp)
	op()
	fr.seg = fr.chargeBoth(fr.seg, func(b []byte) []byte {
		b = append(b, 0x20)
		b = wasmbin.AppendU32(b, fr.temp)
		b = append(b, 0xad) // i64.extend_i32_u
		if shift != 0 {
			b = append(b, 0x42, byte(shift), 0x88) // i64.const shift; i64.shr_u
		}
		return b
	})
}

// chargeBoth appends a dynamic charge, the i64 amount pushes, to both
// halves of the meter, then the check:
//
//	<get>; <amount>; i64.const 1<<32 + 1; i64.mul; i64.sub; <set>; check
//
// An amount is below 2^29 (a bulk instruction moves at most 4 GiB, 2^28
// fuel; a growth adds at most 65,536 pages, 2^28, or the elements the
// host let a table grow by), so the product is the amount in each half.
func (fr *funcRewriter) chargeBoth(b []byte, amount func([]byte) []byte) []byte {
	b = fr.get(b)
	b = amount(b)
	b = append(b, 0x42)
	b = wasmbin.AppendS64(b, 1<<32+1)
	b = append(b, 0x7e, 0x7d) // i64.mul; i64.sub
	b = fr.set(b)
	return fr.check(b)
}

// grown appends a growth (memory.grow, or table.grow behind the host's
// permission) whose i32 delta is on top of the stack, emitted by op,
// followed by a charge of delta<<shift only if it grew: a refused growth
// did no work and costs only its instruction. The result stays on the
// stack.
//
//	local.tee t; <op>; local.set t2; <get>; local.get t; i32.const 0;
//	local.get t2; i32.const -1; i32.ne; select; i64.extend_i32_u;
//	[i64.const shift; i64.shl]; i64.sub; <set>; the same on the tick;
//	check; local.get t2
func (fr *funcRewriter) grown(shift int, op func()) {
	fr.usedTemp = true
	fr.seg = append(fr.seg, 0x22)
	fr.seg = wasmbin.AppendU32(fr.seg, fr.temp)
	op()
	b := append(fr.seg, 0x21) // local.set t2
	b = wasmbin.AppendU32(b, fr.temp+1)
	b = fr.chargeBoth(b, func(b []byte) []byte {
		b = append(b, 0x20)
		b = wasmbin.AppendU32(b, fr.temp)
		b = append(b, 0x41, 0x00, 0x20) // i32.const 0; local.get t2
		b = wasmbin.AppendU32(b, fr.temp+1)
		b = append(b, 0x41, 0x7f, 0x47, 0x1b, 0xad) // i32.const -1; i32.ne; select; i64.extend_i32_u
		if shift != 0 {
			b = append(b, 0x42, byte(shift), 0x86) // i64.const shift; i64.shl
		}
		return b
	})
	b = append(b, 0x20)
	fr.seg = wasmbin.AppendU32(b, fr.temp+1)
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
