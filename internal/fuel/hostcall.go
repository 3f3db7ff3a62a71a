package fuel

import "github.com/subako/subako-runner/internal/wasmbin"

// Host calls: every one is charged, and none buys a long run.
//
// A host call is charged ImportCallCost on top of its call instruction,
// whether the guest names the import (call, return_call) or reaches it
// through a table or a reference (call_indirect, return_call_indirect,
// call_ref, return_call_ref of a type some import the module can take a
// reference of has: leaf.go's indirectCallees.host). The indirect site
// pays it whichever function of that type it reaches: the rewriter
// cannot tell which at rewrite time, and the charge stays deterministic.
// Were only a direct call to pay, 100,000 sched_yield through
// call_indirect would run under a budget of 10^7.
//
// A host call may take far longer than its cost says (a path lookup, a
// poll), and the fuel a slice grants was sized by the cheap code before
// it, so a charge alone does not keep a guest near its deadline. Each
// call site that may reach the host therefore sets the meter's tick to
// hostCallTick, negative: the next check goes back to Go, where refuel
// sees the deadline and, the tick having run out, grants initialSlice
// again (Meter.refill). A check always comes between two host calls:
// the next one is either in a function that makes calls, which checks on
// entry, or after the return of a call in the same function, and the
// path from that return to it costs ImportCallCost, over
// maxUncheckedTail, so tails puts a check after the return. So no host
// call starts once the host has seen a deadline pass after the previous
// one, and a slow host call is never followed by a slice sized before it.
// What this costs is a refuel per host call, a call into Go like the host
// call itself.

// hostCallTick is the tick a host call leaves: -1, all of the meter's
// high bits set (one i64.or), whatever the tick was, so it cannot wrap.
// Before the next test a check's region charge (at most maxRegionCost),
// or a dynamic charge (below 2^29), and a borrow from the fuel half take
// it no lower than -2^30-2, far above the half's -2^31.
const hostCallTick = -1

// hostCall appends, at a call that may reach the host, the tick's
// reset: <get>; i64.const -1<<32; i64.or; <set>. It comes before the
// writeback, which carries the tick to the global.
func (fr *funcRewriter) hostCall() {
	fr.seg = fr.get(fr.seg)
	fr.seg = append(fr.seg, 0x42)
	fr.seg = wasmbin.AppendS64(fr.seg, hostCallTick<<32)
	fr.seg = append(fr.seg, 0x84) // i64.or
	fr.seg = fr.set(fr.seg)
}

// reachesHost reports whether the call instruction in may reach an
// imported function, and charges it ImportCallCost if so.
func (fr *funcRewriter) reachesHost(in *wasmbin.Instr) bool {
	var host bool
	switch in.Op {
	case wasmbin.OpCall, wasmbin.OpReturnCall:
		host = in.Index < fr.rw.nImpFuncs
	default:
		host = fr.rw.callees(in.Index).host
	}
	if host {
		fr.spend(ImportCallCost)
	}
	return host
}
