package fuel

import "github.com/subako/subako-runner/internal/wasmbin"

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
// subtraction of both charges (region<<32 + cost) and one test, where two
// would take two subtractions, an or and a test, and a loop keeps one
// value of the meter's in a register instead of two (the C benchmark:
// 1.10× with two, 1.07× with one, metered against unmetered). A fuel charge that
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
// out of line. Measured on the C benchmark, this shape costs half of what
// "i64.lt_s; if; refuel; end" does.
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

// takesNoParams reports whether a block of type bt starts with an empty
// operand stack of its own, so that code inside it can branch to a loop
// of that type with nothing to pass.
func (rw *rewriter) takesNoParams(bt wasmbin.BlockType) bool {
	if bt < 0 {
		return true // empty, or a single result
	}
	return uint64(bt) < uint64(len(rw.m.Types)) && len(rw.m.Types[bt].Params) == 0
}
