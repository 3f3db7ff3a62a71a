package fuel

import (
	"errors"
	"fmt"
	"io"

	"github.com/subako/subako-runner/internal/wasmbin"
)

// Call depth: the host memory of an instance's call stack.
//
// wazero keeps a guest's call stack in a Go byte slice that doubles as
// the guest goes deeper, up to about 100 MB an instance, counted by no
// limit: unbounded, a recursion under a 1 MiB memory limit takes the host
// to 190 MB (the old stack and its copy live together while it grows). So the
// rewriter bounds the call depth itself. A mutable i32 global the module
// cannot name (it sits past the meter, and checkIndices refuses every
// global index past the module's own) holds the frames left, starting at
// maxCallDepth. Only a function that makes calls can be more than the
// last frame of a stack, so only those count: on entry such a function
// reads the global, takes its weight off (its frame's cost, see
// frameWeight) and keeps the result in a local of its own, its level;
// below zero, it ends the instance (refuel is called with the meter 0,
// which no check ever passes, and fails the call with
// ErrCallStackExhausted); else it stores its level. After each call that
// may reach such a function, the caller stores its own level again,
// whatever the callee left there (a callee that left by a trap ends the
// instance anyway); a tail call first gives its frame's weight back, as
// its callee takes the frame's place; a return, and the function's final
// end, give it back too, so that the host's calls of an export leave the
// count where they found it. (A branch out of the function, and an
// exception that unwinds frames, which the runtime does not enable, do
// not give it back: the count then errs towards fewer frames, never
// more.)

// maxCallDepth is the units of frame weight (frameWeight) an instance's
// stack may hold: 2^16 frames of the smallest functions, and about
// frameUnit bytes of wazero's stack a unit, 8 MiB in all.
const maxCallDepth = 1 << 16

// frameUnit is the stack bytes a unit of frame weight stands for.
const frameUnit = 128

// ErrCallStackExhausted is the error a call fails with (errors.Is) when
// its guest went deeper than the rewriter's call depth bound: the
// instance has ended, as on a trap.
var ErrCallStackExhausted = fmt.Errorf("call stack exhausted: the guest's frames passed the %d MiB the rewriter allows an instance", maxCallDepth*frameUnit>>20)

// stackExhausted is the meter the depth check hands refuel: both halves
// zero, which no overdraft check ever passes (it calls refuel only when a
// half is negative).
const stackExhausted = 0

// frameWeight is what a frame of a function with nLocals parameters and
// locals, whose last call is callAt bytes into its code, counts against
// maxCallDepth, in frameUnit bytes: its frame in wazero holds a fixed
// part (return address, saved registers: one unit), its locals (a v128
// local spills 16 bytes: 1 unit per 8 locals) and the values live across
// its calls, which the code before the last call pushed (each by an
// instruction of 2 bytes at least, a v128 one 16 bytes: 1 unit per 16
// bytes of that code).
func frameWeight(nLocals uint64, callAt int) int64 {
	return int64(min(1+nLocals/8+uint64(callAt)/16, maxCallDepth+1))
}

// lastCall returns the offset in code's expression of its last call
// instruction (of any kind).
func (rw *rewriter) lastCall(code *wasmbin.Code) (int, error) {
	w := &rw.scanW
	w.Reset(code.Expr, code.ExprOffset)
	in := &rw.scanIn
	last := 0
	for {
		if err := w.Next(in); err != nil {
			if errors.Is(err, io.EOF) {
				return last, nil
			}
			return 0, err
		}
		switch in.Op {
		case wasmbin.OpCall, wasmbin.OpCallIndirect, wasmbin.OpCallRef,
			wasmbin.OpReturnCall, wasmbin.OpReturnCallIndirect, wasmbin.OpReturnCallRef:
			last = in.Start
		}
	}
}

// enterDepth appends a counting function's entry:
//
//	global.get D; i32.const w; i32.sub; local.tee L; i32.const 0; i32.lt_s;
//	if; i64.const 0; call refuel; drop; end; local.get L; global.set D
func (fr *funcRewriter) enterDepth(b []byte) []byte {
	b = append(b, 0x23)
	b = wasmbin.AppendU32(b, fr.rw.depthGlobal)
	b = append(b, 0x41)
	b = wasmbin.AppendS64(b, fr.weight)
	b = append(b, 0x6b, 0x22) // i32.sub; local.tee
	b = wasmbin.AppendU32(b, fr.depthLocal)
	b = append(b, 0x41, 0x00, 0x48, 0x04, 0x40, 0x42, stackExhausted, 0x10) // i32.const 0; i32.lt_s; if; i64.const 0; call
	b = wasmbin.AppendU32(b, fr.rw.refuel)
	b = append(b, 0x1a, 0x0b) // drop; end
	return fr.storeLevel(b, false)
}

// storeLevel appends local.get L; [i32.const w; i32.add;] global.set D:
// the function's own level, or with leave the level it found on entry.
func (fr *funcRewriter) storeLevel(b []byte, leave bool) []byte {
	if !fr.depth {
		return b
	}
	b = append(b, 0x20)
	b = wasmbin.AppendU32(b, fr.depthLocal)
	if leave {
		b = append(b, 0x41)
		b = wasmbin.AppendS64(b, fr.weight)
		b = append(b, 0x6a) // i32.add
	}
	b = append(b, 0x24)
	return wasmbin.AppendU32(b, fr.rw.depthGlobal)
}
