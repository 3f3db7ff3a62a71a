package fuel

import "github.com/subako/subako-runner/internal/wasmbin"

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

// sized rewrites the instructions charged for the size they work on:
// the growths after they succeed (grown), the bulk instructions after
// they ran (done).
func (fr *funcRewriter) sized(expr []byte) {
	in := &fr.in
	switch in.Op {
	case wasmbin.OpMemoryGrow:
		fr.grown(pageShift, func() { fr.copy(expr) })
	case wasmbin.OpMemoryFill, wasmbin.OpMemoryCopy, wasmbin.OpMemoryInit:
		fr.done(bulkShift, func() { fr.copy(expr) })
	case wasmbin.OpTableGrow:
		fr.grown(0, func() { fr.tableGrow(in.Index) })
	case wasmbin.OpTableFill, wasmbin.OpTableCopy, wasmbin.OpTableInit:
		fr.done(0, func() { fr.copy(expr) })
	}
}
