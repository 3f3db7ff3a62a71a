package fuel

import "github.com/subako/subako-runner/internal/wasmbin"

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

// free reports whether an instruction costs nothing: block, loop, nop and
// the end of a block, loop or if only mark structure and compile to no
// code (a function's final end is its return and costs 1). Charging them
// would bill work that never runs, and a lot of it: Go's output opens one
// block per resume point at its functions' dispatch loop (hundreds in a
// big function) and re-enters that loop at every iteration of any loop
// the function has, so a busy loop of three real instructions would be
// charged some 800. Every loop iteration still costs at least its back-edge
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
