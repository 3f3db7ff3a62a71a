package fuel

import (
	"errors"
	"io"

	"github.com/subako/subako-runner/internal/wasmbin"
)

// Checks after a call's return.
//
// Checks sit at loop headers and at the entries of functions that call:
// every unbounded execution repeats one or the other. A deep recursion
// that unwinds repeats neither, and each frame runs the code after its
// call on the way back, with no check at all: unchecked, 20,000 frames of
// a function with 100,000 instructions after its recursive call run 1.2 s
// past a 200 ms deadline, on both lines, and finish; a call stack holds
// millions of frames. So the code after a call that may charge the meter
// (one whose callee is not a small leaf) starts with a check when, along
// some path, it can run more than maxUncheckedTail before it reaches a
// check or the function's exit.
//
// "Along some path" matters for Go's output, whose functions are one
// dispatch loop: after a call, control soon branches back to the loop's
// header, a check, however much code follows in the function's layout.

// maxUncheckedTail is the most the code after a call may cost, along any
// path to the next check or the function's exit, without a check of its
// own. An unwinding guest then runs at most one long tail, or
// maxUncheckedTail a frame, between two checks: with the few million
// frames a call stack holds, some 2·10^8 units (a fraction of a second),
// far inside the fuel half's range.
const maxUncheckedTail = 64

// tailInstr is what the backward pass of tails needs of one instruction
// that branches, calls, opens or closes a block; the instructions between
// two such are only counted, in the first's plain.
type tailInstr struct {
	op wasmbin.Opcode
	// opener is the op that opened the block an end or delegate closes.
	opener wasmbin.Opcode
	index  uint32 // label, function or type index
	start  int32  // offset in the expression, to match call sites
	plain  int32  // the cost of the plain instructions that follow
	// labels is where br_table's labels start in tailLabels (the default
	// is index).
	labels, nLabels int32
}

// tailFrame is a block open in the backward pass: the cost from its
// label (what follows its end for a block or if; 0 for a loop, whose
// header checks), from just after its end, and from the start of its
// else arm (or catch) when it has one.
type tailFrame struct {
	fromLabel, fromEnd, fromElse int64
	hasElse                      bool
}

// tailShaped reports whether tails records op rather than only counting
// it.
func tailShaped(op wasmbin.Opcode) bool {
	switch op {
	case wasmbin.OpBlock, wasmbin.OpLoop, wasmbin.OpIf, wasmbin.OpTry, wasmbin.OpTryTable,
		wasmbin.OpEnd, wasmbin.OpDelegate, wasmbin.OpElse, wasmbin.OpCatch, wasmbin.OpCatchAll,
		wasmbin.OpBr, wasmbin.OpBrIf, wasmbin.OpBrOnNull, wasmbin.OpBrOnNonNull, wasmbin.OpBrTable,
		wasmbin.OpReturn, wasmbin.OpReturnCall, wasmbin.OpReturnCallIndirect, wasmbin.OpReturnCallRef,
		wasmbin.OpUnreachable, wasmbin.OpThrow, wasmbin.OpRethrow, wasmbin.OpThrowRef,
		wasmbin.OpMemoryGrow, wasmbin.OpMemoryFill, wasmbin.OpMemoryCopy, wasmbin.OpMemoryInit,
		wasmbin.OpTableGrow, wasmbin.OpTableFill, wasmbin.OpTableCopy, wasmbin.OpTableInit,
		wasmbin.OpCall, wasmbin.OpCallIndirect, wasmbin.OpCallRef:
		return true
	}
	return false
}

// errTailShape is returned for block structure the decoder let through
// but that does not nest (the module is invalid, and validation refuses
// it; the rewrite must only not panic).
var errTailShape = errors.New("the function's blocks do not nest")

// tails returns the offsets, in order, of the calls in code after which
// the rewrite puts a check (see maxUncheckedTail), appended to dst. It
// walks the function once forward to decode it and once backward, where
// the cost from each point to the next check or exit, along the dearest
// path, is known from what follows.
func (rw *rewriter) tails(code *wasmbin.Code, dst []int) ([]int, error) {
	rw.tailInstrs, rw.tailLabels = rw.tailInstrs[:0], rw.tailLabels[:0]
	openers := rw.tailOpeners[:0]
	w := &rw.scanW
	w.Reset(code.Expr, code.ExprOffset)
	in := &rw.scanIn
	for {
		if err := w.Next(in); err != nil {
			if errors.Is(err, io.EOF) {
				break
			}
			return dst, err
		}
		if !tailShaped(in.Op) {
			if n := len(rw.tailInstrs); n > 0 && !free(in.Op) {
				rw.tailInstrs[n-1].plain++
			} else if !free(in.Op) {
				// Before the first: a pseudo-instruction that only counts.
				rw.tailInstrs = append(rw.tailInstrs, tailInstr{op: wasmbin.OpNop, plain: 1})
			}
			continue
		}
		ti := tailInstr{op: in.Op, index: in.Index, start: int32(in.Start)}
		switch in.Op {
		case wasmbin.OpBlock, wasmbin.OpLoop, wasmbin.OpIf, wasmbin.OpTry, wasmbin.OpTryTable:
			openers = append(openers, in.Op)
		case wasmbin.OpEnd, wasmbin.OpDelegate:
			if len(openers) > 0 {
				ti.opener = openers[len(openers)-1]
				openers = openers[:len(openers)-1]
			}
		case wasmbin.OpBrTable:
			ti.labels, ti.nLabels = int32(len(rw.tailLabels)), int32(len(in.Labels))
			rw.tailLabels = append(rw.tailLabels, in.Labels...)
		}
		rw.tailInstrs = append(rw.tailInstrs, ti)
	}
	rw.tailOpeners = openers[:0]
	frames := rw.tailFrames[:0]
	defer func() { rw.tailFrames = frames[:0] }()
	from := func(d uint32) int64 {
		if uint64(d) >= uint64(len(frames)) {
			return 0 // the function's exit
		}
		return frames[len(frames)-1-int(d)].fromLabel
	}
	mark := len(dst)
	var c int64 // the dearest cost from here to a check or the exit
	last := len(rw.tailInstrs) - 1
	for i := last; i >= 0; i-- {
		ti := &rw.tailInstrs[i]
		c += int64(ti.plain) // what follows it, up to the next recorded one
		switch ti.op {
		case wasmbin.OpEnd, wasmbin.OpDelegate:
			if i == last {
				c = 1 // the function's final end, its return
				continue
			}
			// Backward, a block opens at its end.
			f := tailFrame{fromLabel: c, fromEnd: c}
			if ti.opener == wasmbin.OpLoop {
				f.fromLabel = 0 // a branch to a loop goes to its header's check
			}
			frames = append(frames, f)
		case wasmbin.OpElse, wasmbin.OpCatch, wasmbin.OpCatchAll:
			if len(frames) == 0 {
				return dst, errTailShape
			}
			f := &frames[len(frames)-1]
			f.fromElse, f.hasElse = max(f.fromElse, c), true
			c = f.fromEnd + 1 // the arm before ends by jumping past the end
		case wasmbin.OpBlock, wasmbin.OpLoop, wasmbin.OpIf, wasmbin.OpTry, wasmbin.OpTryTable:
			if len(frames) == 0 {
				return dst, errTailShape
			}
			f := frames[len(frames)-1]
			frames = frames[:len(frames)-1]
			switch ti.op {
			case wasmbin.OpLoop:
				c = 0 // the header checks
			case wasmbin.OpIf:
				other := f.fromEnd // the false edge of an if without else
				if f.hasElse {
					other = f.fromElse
				}
				c = max(c, other) + 1
			}
		case wasmbin.OpBr:
			c = from(ti.index) + 1
		case wasmbin.OpBrIf, wasmbin.OpBrOnNull, wasmbin.OpBrOnNonNull:
			c = max(c, from(ti.index)) + 1
		case wasmbin.OpBrTable:
			t := from(ti.index)
			for _, l := range rw.tailLabels[ti.labels : ti.labels+ti.nLabels] {
				t = max(t, from(l))
			}
			c = t + 1
		case wasmbin.OpReturn, wasmbin.OpUnreachable, wasmbin.OpThrow, wasmbin.OpRethrow, wasmbin.OpThrowRef:
			c = 1
		case wasmbin.OpReturnCall:
			// The callee runs in this frame's place before the return:
			// what it runs before a check of its own is this frame's.
			c = 1 + rw.leafCostOf(ti.index) + rw.unchecked(ti.index)
			if ti.index < rw.nImpFuncs {
				c += ImportCallCost
			}
		case wasmbin.OpReturnCallIndirect, wasmbin.OpReturnCallRef:
			c = 1 + rw.callees(ti.index).leafCost + rw.maxUnchecked
			if rw.callees(ti.index).host {
				c += ImportCallCost
			}
		case wasmbin.OpMemoryGrow, wasmbin.OpMemoryFill, wasmbin.OpMemoryCopy, wasmbin.OpMemoryInit,
			wasmbin.OpTableGrow, wasmbin.OpTableFill, wasmbin.OpTableCopy, wasmbin.OpTableInit:
			c = 1 // a check follows each
		case wasmbin.OpCall:
			if leaf := rw.leafCostOf(ti.index); leaf > 0 {
				c += 1 + leaf + rw.unchecked(ti.index)
				continue
			}
			if c > maxUncheckedTail {
				dst = append(dst, int(ti.start))
				c = 0
			}
			switch {
			case ti.index < rw.nImpFuncs:
				c += 1 + ImportCallCost
			case rw.unchecked(ti.index) == 0:
				c = 1 // the callee checks on entry
			default:
				c += 1 + rw.unchecked(ti.index)
			}
		case wasmbin.OpCallIndirect, wasmbin.OpCallRef:
			callees := rw.callees(ti.index)
			if callees.needsSync && c > maxUncheckedTail {
				dst = append(dst, int(ti.start))
				c = 0
			}
			c += 1 + callees.leafCost + rw.maxUnchecked
			if callees.host {
				c += ImportCallCost
			}
		case wasmbin.OpNop: // the count before the first recorded one
		}
	}
	// Found backward: put them in the order the rewrite meets them.
	for i, j := mark, len(dst)-1; i < j; i, j = i+1, j-1 {
		dst[i], dst[j] = dst[j], dst[i]
	}
	return dst, nil
}
