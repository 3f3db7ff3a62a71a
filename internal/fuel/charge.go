package fuel

import "github.com/subako/subako-runner/internal/wasmbin"

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
// makes the code after its return a segment that checks, lest a guest
// unwinding a deep recursion run every frame's code after the call with
// no check at all (tail.go says which calls get one). The check charges the tick the function's whole cost (an upper bound of
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
