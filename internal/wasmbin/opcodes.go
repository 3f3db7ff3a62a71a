package wasmbin

import "fmt"

// Opcode is an instruction's opcode: the byte itself for single-byte
// opcodes, or prefix<<16 | sub-opcode for the 0xFC (bulk memory, reference
// types, saturating truncation), 0xFD (SIMD) and 0xFE (threads) prefixes.
type Opcode uint32

// The prefixes of multi-byte opcodes.
const (
	PrefixMisc    byte = 0xFC
	PrefixSIMD    byte = 0xFD
	PrefixThreads byte = 0xFE
	// PrefixGC is the GC proposal's prefix; its instructions are not decoded.
	PrefixGC byte = 0xFB
)

// Prefix returns 0 for a single-byte opcode, else its prefix byte.
func (o Opcode) Prefix() byte { return byte(o >> 16) }

// Sub returns the single byte, or the sub-opcode after the prefix.
func (o Opcode) Sub() uint32 { return uint32(o & 0xffff) }

// Opcodes callers (the checks, the fuel rewriter) branch on. Every other
// opcode is decoded too; these are just the ones worth a name in Go.
const (
	OpUnreachable        Opcode = 0x00
	OpNop                Opcode = 0x01
	OpBlock              Opcode = 0x02
	OpLoop               Opcode = 0x03
	OpIf                 Opcode = 0x04
	OpElse               Opcode = 0x05
	OpTry                Opcode = 0x06 // legacy exception handling
	OpCatch              Opcode = 0x07 // legacy exception handling
	OpThrow              Opcode = 0x08
	OpRethrow            Opcode = 0x09 // legacy exception handling
	OpThrowRef           Opcode = 0x0a
	OpEnd                Opcode = 0x0b
	OpBr                 Opcode = 0x0c
	OpBrIf               Opcode = 0x0d
	OpBrTable            Opcode = 0x0e
	OpReturn             Opcode = 0x0f
	OpCall               Opcode = 0x10
	OpCallIndirect       Opcode = 0x11
	OpReturnCall         Opcode = 0x12
	OpReturnCallIndirect Opcode = 0x13
	OpCallRef            Opcode = 0x14
	OpReturnCallRef      Opcode = 0x15
	OpDelegate           Opcode = 0x18 // legacy exception handling
	OpCatchAll           Opcode = 0x19 // legacy exception handling
	OpDrop               Opcode = 0x1a
	OpSelect             Opcode = 0x1b
	OpSelectTyped        Opcode = 0x1c
	OpTryTable           Opcode = 0x1f
	OpLocalGet           Opcode = 0x20
	OpLocalSet           Opcode = 0x21
	OpLocalTee           Opcode = 0x22
	OpGlobalGet          Opcode = 0x23
	OpGlobalSet          Opcode = 0x24
	OpMemorySize         Opcode = 0x3f
	OpMemoryGrow         Opcode = 0x40
	OpI32Const           Opcode = 0x41
	OpI64Const           Opcode = 0x42
	OpF32Const           Opcode = 0x43
	OpF64Const           Opcode = 0x44
	OpI32Add             Opcode = 0x6a
	OpI32Sub             Opcode = 0x6b
	OpI64Add             Opcode = 0x7c
	OpI64Sub             Opcode = 0x7d
	OpRefNull            Opcode = 0xd0
	OpRefIsNull          Opcode = 0xd1
	OpRefFunc            Opcode = 0xd2
	OpBrOnNull           Opcode = 0xd5
	OpBrOnNonNull        Opcode = 0xd6

	OpMemoryInit Opcode = 0xFC<<16 | 8
	OpDataDrop   Opcode = 0xFC<<16 | 9
	OpMemoryCopy Opcode = 0xFC<<16 | 10
	OpMemoryFill Opcode = 0xFC<<16 | 11
	OpTableInit  Opcode = 0xFC<<16 | 12
	OpElemDrop   Opcode = 0xFC<<16 | 13
	OpTableCopy  Opcode = 0xFC<<16 | 14
	OpTableGrow  Opcode = 0xFC<<16 | 15
	OpTableSize  Opcode = 0xFC<<16 | 16
	OpTableFill  Opcode = 0xFC<<16 | 17

	OpAtomicNotify Opcode = 0xFE<<16 | 0
	OpAtomicFence  Opcode = 0xFE<<16 | 3
)

// IsExceptionHandling reports whether o belongs to the exception-handling
// proposal, legacy (try, catch, rethrow, delegate, catch_all) or new
// (throw_ref, try_table); throw is in both.
func (o Opcode) IsExceptionHandling() bool {
	switch o {
	case OpTry, OpCatch, OpThrow, OpRethrow, OpThrowRef, OpDelegate, OpCatchAll, OpTryTable:
		return true
	}
	return false
}

// IsLegacyExceptionHandling reports whether o exists only in the legacy
// (phase 3, "try/catch/delegate") exception-handling encoding.
func (o Opcode) IsLegacyExceptionHandling() bool {
	switch o {
	case OpTry, OpCatch, OpRethrow, OpDelegate, OpCatchAll:
		return true
	}
	return false
}

// IsAtomic reports whether o is a threads-proposal instruction (the 0xFE
// prefix: atomic loads, stores, read-modify-writes, wait, notify, fence).
func (o Opcode) IsAtomic() bool { return o.Prefix() == PrefixThreads }

// String returns the text-format name ("i32.add", "try", "v128.load"), or
// a hex form for an opcode that has none.
func (o Opcode) String() string {
	if info, ok := lookupOp(o); ok {
		return info.name
	}
	if o.Prefix() != 0 {
		return fmt.Sprintf("0x%02x 0x%x", o.Prefix(), o.Sub())
	}
	return fmt.Sprintf("0x%02x", byte(o))
}

// imm is the shape of an instruction's immediates.
type imm uint8

const (
	immInvalid  imm = iota // not an opcode
	immNone                // no immediates
	immBlock               // block type (s33)
	immIndex               // one u32 (label, function, local, global, table, tag, type, data, element, memory)
	immIndex2              // two u32 (call_indirect, memory.init, memory.copy, table.init, table.copy)
	immBrTable             // vec(label) label
	immMemArg              // memarg
	immMemLane             // memarg, lane byte
	immLane                // lane byte
	immI32                 // s32
	immI64                 // s64
	immF32                 // 4 bytes
	immF64                 // 8 bytes
	immV128                // 16 bytes (v128.const, i8x16.shuffle)
	immSelectT             // vec(valtype)
	immTryTable            // block type, vec(catch)
	immHeapType            // s33 heap type (ref.null)
	immZeroByte            // a reserved 0x00 byte (atomic.fence)
	immPrefixed            // a prefix byte: the sub-opcode decides (walker-internal)
)

type opInfo struct {
	name string
	imm  imm
}

func lookupOp(o Opcode) (opInfo, bool) {
	var info opInfo
	switch o.Prefix() {
	case 0:
		if o <= 0xff {
			info = singleOps[o]
		}
	case PrefixMisc:
		if s := o.Sub(); s < uint32(len(miscOps)) {
			info = miscOps[s]
		}
	case PrefixSIMD:
		if s := o.Sub(); s < uint32(len(simdOps)) {
			info = simdOps[s]
		}
	case PrefixThreads:
		if s := o.Sub(); s < uint32(len(threadOps)) {
			info = threadOps[s]
		}
	}
	return info, info.imm != immInvalid
}

var singleOps = [256]opInfo{
	0x00: {"unreachable", immNone},
	0x01: {"nop", immNone},
	0x02: {"block", immBlock},
	0x03: {"loop", immBlock},
	0x04: {"if", immBlock},
	0x05: {"else", immNone},
	0x06: {"try", immBlock},
	0x07: {"catch", immIndex},
	0x08: {"throw", immIndex},
	0x09: {"rethrow", immIndex},
	0x0a: {"throw_ref", immNone},
	0x0b: {"end", immNone},
	0x0c: {"br", immIndex},
	0x0d: {"br_if", immIndex},
	0x0e: {"br_table", immBrTable},
	0x0f: {"return", immNone},
	0x10: {"call", immIndex},
	0x11: {"call_indirect", immIndex2},
	0x12: {"return_call", immIndex},
	0x13: {"return_call_indirect", immIndex2},
	0x14: {"call_ref", immIndex},
	0x15: {"return_call_ref", immIndex},
	0x18: {"delegate", immIndex},
	0x19: {"catch_all", immNone},
	0x1a: {"drop", immNone},
	0x1b: {"select", immNone},
	0x1c: {"select", immSelectT},
	0x1f: {"try_table", immTryTable},
	0x20: {"local.get", immIndex},
	0x21: {"local.set", immIndex},
	0x22: {"local.tee", immIndex},
	0x23: {"global.get", immIndex},
	0x24: {"global.set", immIndex},
	0x25: {"table.get", immIndex},
	0x26: {"table.set", immIndex},
	0x28: {"i32.load", immMemArg},
	0x29: {"i64.load", immMemArg},
	0x2a: {"f32.load", immMemArg},
	0x2b: {"f64.load", immMemArg},
	0x2c: {"i32.load8_s", immMemArg},
	0x2d: {"i32.load8_u", immMemArg},
	0x2e: {"i32.load16_s", immMemArg},
	0x2f: {"i32.load16_u", immMemArg},
	0x30: {"i64.load8_s", immMemArg},
	0x31: {"i64.load8_u", immMemArg},
	0x32: {"i64.load16_s", immMemArg},
	0x33: {"i64.load16_u", immMemArg},
	0x34: {"i64.load32_s", immMemArg},
	0x35: {"i64.load32_u", immMemArg},
	0x36: {"i32.store", immMemArg},
	0x37: {"i64.store", immMemArg},
	0x38: {"f32.store", immMemArg},
	0x39: {"f64.store", immMemArg},
	0x3a: {"i32.store8", immMemArg},
	0x3b: {"i32.store16", immMemArg},
	0x3c: {"i64.store8", immMemArg},
	0x3d: {"i64.store16", immMemArg},
	0x3e: {"i64.store32", immMemArg},
	0x3f: {"memory.size", immIndex},
	0x40: {"memory.grow", immIndex},
	0x41: {"i32.const", immI32},
	0x42: {"i64.const", immI64},
	0x43: {"f32.const", immF32},
	0x44: {"f64.const", immF64},
	0x45: {"i32.eqz", immNone},
	0x46: {"i32.eq", immNone},
	0x47: {"i32.ne", immNone},
	0x48: {"i32.lt_s", immNone},
	0x49: {"i32.lt_u", immNone},
	0x4a: {"i32.gt_s", immNone},
	0x4b: {"i32.gt_u", immNone},
	0x4c: {"i32.le_s", immNone},
	0x4d: {"i32.le_u", immNone},
	0x4e: {"i32.ge_s", immNone},
	0x4f: {"i32.ge_u", immNone},
	0x50: {"i64.eqz", immNone},
	0x51: {"i64.eq", immNone},
	0x52: {"i64.ne", immNone},
	0x53: {"i64.lt_s", immNone},
	0x54: {"i64.lt_u", immNone},
	0x55: {"i64.gt_s", immNone},
	0x56: {"i64.gt_u", immNone},
	0x57: {"i64.le_s", immNone},
	0x58: {"i64.le_u", immNone},
	0x59: {"i64.ge_s", immNone},
	0x5a: {"i64.ge_u", immNone},
	0x5b: {"f32.eq", immNone},
	0x5c: {"f32.ne", immNone},
	0x5d: {"f32.lt", immNone},
	0x5e: {"f32.gt", immNone},
	0x5f: {"f32.le", immNone},
	0x60: {"f32.ge", immNone},
	0x61: {"f64.eq", immNone},
	0x62: {"f64.ne", immNone},
	0x63: {"f64.lt", immNone},
	0x64: {"f64.gt", immNone},
	0x65: {"f64.le", immNone},
	0x66: {"f64.ge", immNone},
	0x67: {"i32.clz", immNone},
	0x68: {"i32.ctz", immNone},
	0x69: {"i32.popcnt", immNone},
	0x6a: {"i32.add", immNone},
	0x6b: {"i32.sub", immNone},
	0x6c: {"i32.mul", immNone},
	0x6d: {"i32.div_s", immNone},
	0x6e: {"i32.div_u", immNone},
	0x6f: {"i32.rem_s", immNone},
	0x70: {"i32.rem_u", immNone},
	0x71: {"i32.and", immNone},
	0x72: {"i32.or", immNone},
	0x73: {"i32.xor", immNone},
	0x74: {"i32.shl", immNone},
	0x75: {"i32.shr_s", immNone},
	0x76: {"i32.shr_u", immNone},
	0x77: {"i32.rotl", immNone},
	0x78: {"i32.rotr", immNone},
	0x79: {"i64.clz", immNone},
	0x7a: {"i64.ctz", immNone},
	0x7b: {"i64.popcnt", immNone},
	0x7c: {"i64.add", immNone},
	0x7d: {"i64.sub", immNone},
	0x7e: {"i64.mul", immNone},
	0x7f: {"i64.div_s", immNone},
	0x80: {"i64.div_u", immNone},
	0x81: {"i64.rem_s", immNone},
	0x82: {"i64.rem_u", immNone},
	0x83: {"i64.and", immNone},
	0x84: {"i64.or", immNone},
	0x85: {"i64.xor", immNone},
	0x86: {"i64.shl", immNone},
	0x87: {"i64.shr_s", immNone},
	0x88: {"i64.shr_u", immNone},
	0x89: {"i64.rotl", immNone},
	0x8a: {"i64.rotr", immNone},
	0x8b: {"f32.abs", immNone},
	0x8c: {"f32.neg", immNone},
	0x8d: {"f32.ceil", immNone},
	0x8e: {"f32.floor", immNone},
	0x8f: {"f32.trunc", immNone},
	0x90: {"f32.nearest", immNone},
	0x91: {"f32.sqrt", immNone},
	0x92: {"f32.add", immNone},
	0x93: {"f32.sub", immNone},
	0x94: {"f32.mul", immNone},
	0x95: {"f32.div", immNone},
	0x96: {"f32.min", immNone},
	0x97: {"f32.max", immNone},
	0x98: {"f32.copysign", immNone},
	0x99: {"f64.abs", immNone},
	0x9a: {"f64.neg", immNone},
	0x9b: {"f64.ceil", immNone},
	0x9c: {"f64.floor", immNone},
	0x9d: {"f64.trunc", immNone},
	0x9e: {"f64.nearest", immNone},
	0x9f: {"f64.sqrt", immNone},
	0xa0: {"f64.add", immNone},
	0xa1: {"f64.sub", immNone},
	0xa2: {"f64.mul", immNone},
	0xa3: {"f64.div", immNone},
	0xa4: {"f64.min", immNone},
	0xa5: {"f64.max", immNone},
	0xa6: {"f64.copysign", immNone},
	0xa7: {"i32.wrap_i64", immNone},
	0xa8: {"i32.trunc_f32_s", immNone},
	0xa9: {"i32.trunc_f32_u", immNone},
	0xaa: {"i32.trunc_f64_s", immNone},
	0xab: {"i32.trunc_f64_u", immNone},
	0xac: {"i64.extend_i32_s", immNone},
	0xad: {"i64.extend_i32_u", immNone},
	0xae: {"i64.trunc_f32_s", immNone},
	0xaf: {"i64.trunc_f32_u", immNone},
	0xb0: {"i64.trunc_f64_s", immNone},
	0xb1: {"i64.trunc_f64_u", immNone},
	0xb2: {"f32.convert_i32_s", immNone},
	0xb3: {"f32.convert_i32_u", immNone},
	0xb4: {"f32.convert_i64_s", immNone},
	0xb5: {"f32.convert_i64_u", immNone},
	0xb6: {"f32.demote_f64", immNone},
	0xb7: {"f64.convert_i32_s", immNone},
	0xb8: {"f64.convert_i32_u", immNone},
	0xb9: {"f64.convert_i64_s", immNone},
	0xba: {"f64.convert_i64_u", immNone},
	0xbb: {"f64.promote_f32", immNone},
	0xbc: {"i32.reinterpret_f32", immNone},
	0xbd: {"i64.reinterpret_f64", immNone},
	0xbe: {"f32.reinterpret_i32", immNone},
	0xbf: {"f64.reinterpret_i64", immNone},
	0xc0: {"i32.extend8_s", immNone},
	0xc1: {"i32.extend16_s", immNone},
	0xc2: {"i64.extend8_s", immNone},
	0xc3: {"i64.extend16_s", immNone},
	0xc4: {"i64.extend32_s", immNone},
	0xd0: {"ref.null", immHeapType},
	0xd1: {"ref.is_null", immNone},
	0xd2: {"ref.func", immIndex},
	0xd3: {"ref.eq", immNone},
	0xd4: {"ref.as_non_null", immNone},
	0xd5: {"br_on_null", immIndex},
	0xd6: {"br_on_non_null", immIndex},
}

var miscOps = [...]opInfo{
	0:  {"i32.trunc_sat_f32_s", immNone},
	1:  {"i32.trunc_sat_f32_u", immNone},
	2:  {"i32.trunc_sat_f64_s", immNone},
	3:  {"i32.trunc_sat_f64_u", immNone},
	4:  {"i64.trunc_sat_f32_s", immNone},
	5:  {"i64.trunc_sat_f32_u", immNone},
	6:  {"i64.trunc_sat_f64_s", immNone},
	7:  {"i64.trunc_sat_f64_u", immNone},
	8:  {"memory.init", immIndex2},
	9:  {"data.drop", immIndex},
	10: {"memory.copy", immIndex2},
	11: {"memory.fill", immIndex},
	12: {"table.init", immIndex2},
	13: {"elem.drop", immIndex},
	14: {"table.copy", immIndex2},
	15: {"table.grow", immIndex},
	16: {"table.size", immIndex},
	17: {"table.fill", immIndex},
}

var simdOps = [...]opInfo{
	0x00: {"v128.load", immMemArg},
	0x01: {"v128.load8x8_s", immMemArg},
	0x02: {"v128.load8x8_u", immMemArg},
	0x03: {"v128.load16x4_s", immMemArg},
	0x04: {"v128.load16x4_u", immMemArg},
	0x05: {"v128.load32x2_s", immMemArg},
	0x06: {"v128.load32x2_u", immMemArg},
	0x07: {"v128.load8_splat", immMemArg},
	0x08: {"v128.load16_splat", immMemArg},
	0x09: {"v128.load32_splat", immMemArg},
	0x0a: {"v128.load64_splat", immMemArg},
	0x0b: {"v128.store", immMemArg},
	0x0c: {"v128.const", immV128},
	0x0d: {"i8x16.shuffle", immV128},
	0x0e: {"i8x16.swizzle", immNone},
	0x0f: {"i8x16.splat", immNone},
	0x10: {"i16x8.splat", immNone},
	0x11: {"i32x4.splat", immNone},
	0x12: {"i64x2.splat", immNone},
	0x13: {"f32x4.splat", immNone},
	0x14: {"f64x2.splat", immNone},
	0x15: {"i8x16.extract_lane_s", immLane},
	0x16: {"i8x16.extract_lane_u", immLane},
	0x17: {"i8x16.replace_lane", immLane},
	0x18: {"i16x8.extract_lane_s", immLane},
	0x19: {"i16x8.extract_lane_u", immLane},
	0x1a: {"i16x8.replace_lane", immLane},
	0x1b: {"i32x4.extract_lane", immLane},
	0x1c: {"i32x4.replace_lane", immLane},
	0x1d: {"i64x2.extract_lane", immLane},
	0x1e: {"i64x2.replace_lane", immLane},
	0x1f: {"f32x4.extract_lane", immLane},
	0x20: {"f32x4.replace_lane", immLane},
	0x21: {"f64x2.extract_lane", immLane},
	0x22: {"f64x2.replace_lane", immLane},
	0x23: {"i8x16.eq", immNone},
	0x24: {"i8x16.ne", immNone},
	0x25: {"i8x16.lt_s", immNone},
	0x26: {"i8x16.lt_u", immNone},
	0x27: {"i8x16.gt_s", immNone},
	0x28: {"i8x16.gt_u", immNone},
	0x29: {"i8x16.le_s", immNone},
	0x2a: {"i8x16.le_u", immNone},
	0x2b: {"i8x16.ge_s", immNone},
	0x2c: {"i8x16.ge_u", immNone},
	0x2d: {"i16x8.eq", immNone},
	0x2e: {"i16x8.ne", immNone},
	0x2f: {"i16x8.lt_s", immNone},
	0x30: {"i16x8.lt_u", immNone},
	0x31: {"i16x8.gt_s", immNone},
	0x32: {"i16x8.gt_u", immNone},
	0x33: {"i16x8.le_s", immNone},
	0x34: {"i16x8.le_u", immNone},
	0x35: {"i16x8.ge_s", immNone},
	0x36: {"i16x8.ge_u", immNone},
	0x37: {"i32x4.eq", immNone},
	0x38: {"i32x4.ne", immNone},
	0x39: {"i32x4.lt_s", immNone},
	0x3a: {"i32x4.lt_u", immNone},
	0x3b: {"i32x4.gt_s", immNone},
	0x3c: {"i32x4.gt_u", immNone},
	0x3d: {"i32x4.le_s", immNone},
	0x3e: {"i32x4.le_u", immNone},
	0x3f: {"i32x4.ge_s", immNone},
	0x40: {"i32x4.ge_u", immNone},
	0x41: {"f32x4.eq", immNone},
	0x42: {"f32x4.ne", immNone},
	0x43: {"f32x4.lt", immNone},
	0x44: {"f32x4.gt", immNone},
	0x45: {"f32x4.le", immNone},
	0x46: {"f32x4.ge", immNone},
	0x47: {"f64x2.eq", immNone},
	0x48: {"f64x2.ne", immNone},
	0x49: {"f64x2.lt", immNone},
	0x4a: {"f64x2.gt", immNone},
	0x4b: {"f64x2.le", immNone},
	0x4c: {"f64x2.ge", immNone},
	0x4d: {"v128.not", immNone},
	0x4e: {"v128.and", immNone},
	0x4f: {"v128.andnot", immNone},
	0x50: {"v128.or", immNone},
	0x51: {"v128.xor", immNone},
	0x52: {"v128.bitselect", immNone},
	0x53: {"v128.any_true", immNone},
	0x54: {"v128.load8_lane", immMemLane},
	0x55: {"v128.load16_lane", immMemLane},
	0x56: {"v128.load32_lane", immMemLane},
	0x57: {"v128.load64_lane", immMemLane},
	0x58: {"v128.store8_lane", immMemLane},
	0x59: {"v128.store16_lane", immMemLane},
	0x5a: {"v128.store32_lane", immMemLane},
	0x5b: {"v128.store64_lane", immMemLane},
	0x5c: {"v128.load32_zero", immMemArg},
	0x5d: {"v128.load64_zero", immMemArg},
	0x5e: {"f32x4.demote_f64x2_zero", immNone},
	0x5f: {"f64x2.promote_low_f32x4", immNone},
	0x60: {"i8x16.abs", immNone},
	0x61: {"i8x16.neg", immNone},
	0x62: {"i8x16.popcnt", immNone},
	0x63: {"i8x16.all_true", immNone},
	0x64: {"i8x16.bitmask", immNone},
	0x65: {"i8x16.narrow_i16x8_s", immNone},
	0x66: {"i8x16.narrow_i16x8_u", immNone},
	0x67: {"f32x4.ceil", immNone},
	0x68: {"f32x4.floor", immNone},
	0x69: {"f32x4.trunc", immNone},
	0x6a: {"f32x4.nearest", immNone},
	0x6b: {"i8x16.shl", immNone},
	0x6c: {"i8x16.shr_s", immNone},
	0x6d: {"i8x16.shr_u", immNone},
	0x6e: {"i8x16.add", immNone},
	0x6f: {"i8x16.add_sat_s", immNone},
	0x70: {"i8x16.add_sat_u", immNone},
	0x71: {"i8x16.sub", immNone},
	0x72: {"i8x16.sub_sat_s", immNone},
	0x73: {"i8x16.sub_sat_u", immNone},
	0x74: {"f64x2.ceil", immNone},
	0x75: {"f64x2.floor", immNone},
	0x76: {"i8x16.min_s", immNone},
	0x77: {"i8x16.min_u", immNone},
	0x78: {"i8x16.max_s", immNone},
	0x79: {"i8x16.max_u", immNone},
	0x7a: {"f64x2.trunc", immNone},
	0x7b: {"i8x16.avgr_u", immNone},
	0x7c: {"i16x8.extadd_pairwise_i8x16_s", immNone},
	0x7d: {"i16x8.extadd_pairwise_i8x16_u", immNone},
	0x7e: {"i32x4.extadd_pairwise_i16x8_s", immNone},
	0x7f: {"i32x4.extadd_pairwise_i16x8_u", immNone},
	0x80: {"i16x8.abs", immNone},
	0x81: {"i16x8.neg", immNone},
	0x82: {"i16x8.q15mulr_sat_s", immNone},
	0x83: {"i16x8.all_true", immNone},
	0x84: {"i16x8.bitmask", immNone},
	0x85: {"i16x8.narrow_i32x4_s", immNone},
	0x86: {"i16x8.narrow_i32x4_u", immNone},
	0x87: {"i16x8.extend_low_i8x16_s", immNone},
	0x88: {"i16x8.extend_high_i8x16_s", immNone},
	0x89: {"i16x8.extend_low_i8x16_u", immNone},
	0x8a: {"i16x8.extend_high_i8x16_u", immNone},
	0x8b: {"i16x8.shl", immNone},
	0x8c: {"i16x8.shr_s", immNone},
	0x8d: {"i16x8.shr_u", immNone},
	0x8e: {"i16x8.add", immNone},
	0x8f: {"i16x8.add_sat_s", immNone},
	0x90: {"i16x8.add_sat_u", immNone},
	0x91: {"i16x8.sub", immNone},
	0x92: {"i16x8.sub_sat_s", immNone},
	0x93: {"i16x8.sub_sat_u", immNone},
	0x94: {"f64x2.nearest", immNone},
	0x95: {"i16x8.mul", immNone},
	0x96: {"i16x8.min_s", immNone},
	0x97: {"i16x8.min_u", immNone},
	0x98: {"i16x8.max_s", immNone},
	0x99: {"i16x8.max_u", immNone},
	0x9b: {"i16x8.avgr_u", immNone},
	0x9c: {"i16x8.extmul_low_i8x16_s", immNone},
	0x9d: {"i16x8.extmul_high_i8x16_s", immNone},
	0x9e: {"i16x8.extmul_low_i8x16_u", immNone},
	0x9f: {"i16x8.extmul_high_i8x16_u", immNone},
	0xa0: {"i32x4.abs", immNone},
	0xa1: {"i32x4.neg", immNone},
	0xa3: {"i32x4.all_true", immNone},
	0xa4: {"i32x4.bitmask", immNone},
	0xa7: {"i32x4.extend_low_i16x8_s", immNone},
	0xa8: {"i32x4.extend_high_i16x8_s", immNone},
	0xa9: {"i32x4.extend_low_i16x8_u", immNone},
	0xaa: {"i32x4.extend_high_i16x8_u", immNone},
	0xab: {"i32x4.shl", immNone},
	0xac: {"i32x4.shr_s", immNone},
	0xad: {"i32x4.shr_u", immNone},
	0xae: {"i32x4.add", immNone},
	0xb1: {"i32x4.sub", immNone},
	0xb5: {"i32x4.mul", immNone},
	0xb6: {"i32x4.min_s", immNone},
	0xb7: {"i32x4.min_u", immNone},
	0xb8: {"i32x4.max_s", immNone},
	0xb9: {"i32x4.max_u", immNone},
	0xba: {"i32x4.dot_i16x8_s", immNone},
	0xbc: {"i32x4.extmul_low_i16x8_s", immNone},
	0xbd: {"i32x4.extmul_high_i16x8_s", immNone},
	0xbe: {"i32x4.extmul_low_i16x8_u", immNone},
	0xbf: {"i32x4.extmul_high_i16x8_u", immNone},
	0xc0: {"i64x2.abs", immNone},
	0xc1: {"i64x2.neg", immNone},
	0xc3: {"i64x2.all_true", immNone},
	0xc4: {"i64x2.bitmask", immNone},
	0xc7: {"i64x2.extend_low_i32x4_s", immNone},
	0xc8: {"i64x2.extend_high_i32x4_s", immNone},
	0xc9: {"i64x2.extend_low_i32x4_u", immNone},
	0xca: {"i64x2.extend_high_i32x4_u", immNone},
	0xcb: {"i64x2.shl", immNone},
	0xcc: {"i64x2.shr_s", immNone},
	0xcd: {"i64x2.shr_u", immNone},
	0xce: {"i64x2.add", immNone},
	0xd1: {"i64x2.sub", immNone},
	0xd5: {"i64x2.mul", immNone},
	0xd6: {"i64x2.eq", immNone},
	0xd7: {"i64x2.ne", immNone},
	0xd8: {"i64x2.lt_s", immNone},
	0xd9: {"i64x2.gt_s", immNone},
	0xda: {"i64x2.le_s", immNone},
	0xdb: {"i64x2.ge_s", immNone},
	0xdc: {"i64x2.extmul_low_i32x4_s", immNone},
	0xdd: {"i64x2.extmul_high_i32x4_s", immNone},
	0xde: {"i64x2.extmul_low_i32x4_u", immNone},
	0xdf: {"i64x2.extmul_high_i32x4_u", immNone},
	0xe0: {"f32x4.abs", immNone},
	0xe1: {"f32x4.neg", immNone},
	0xe3: {"f32x4.sqrt", immNone},
	0xe4: {"f32x4.add", immNone},
	0xe5: {"f32x4.sub", immNone},
	0xe6: {"f32x4.mul", immNone},
	0xe7: {"f32x4.div", immNone},
	0xe8: {"f32x4.min", immNone},
	0xe9: {"f32x4.max", immNone},
	0xea: {"f32x4.pmin", immNone},
	0xeb: {"f32x4.pmax", immNone},
	0xec: {"f64x2.abs", immNone},
	0xed: {"f64x2.neg", immNone},
	0xef: {"f64x2.sqrt", immNone},
	0xf0: {"f64x2.add", immNone},
	0xf1: {"f64x2.sub", immNone},
	0xf2: {"f64x2.mul", immNone},
	0xf3: {"f64x2.div", immNone},
	0xf4: {"f64x2.min", immNone},
	0xf5: {"f64x2.max", immNone},
	0xf6: {"f64x2.pmin", immNone},
	0xf7: {"f64x2.pmax", immNone},
	0xf8: {"i32x4.trunc_sat_f32x4_s", immNone},
	0xf9: {"i32x4.trunc_sat_f32x4_u", immNone},
	0xfa: {"f32x4.convert_i32x4_s", immNone},
	0xfb: {"f32x4.convert_i32x4_u", immNone},
	0xfc: {"i32x4.trunc_sat_f64x2_s_zero", immNone},
	0xfd: {"i32x4.trunc_sat_f64x2_u_zero", immNone},
	0xfe: {"f64x2.convert_low_i32x4_s", immNone},
	0xff: {"f64x2.convert_low_i32x4_u", immNone},
	// Relaxed SIMD.
	0x100: {"i8x16.relaxed_swizzle", immNone},
	0x101: {"i32x4.relaxed_trunc_f32x4_s", immNone},
	0x102: {"i32x4.relaxed_trunc_f32x4_u", immNone},
	0x103: {"i32x4.relaxed_trunc_f64x2_s_zero", immNone},
	0x104: {"i32x4.relaxed_trunc_f64x2_u_zero", immNone},
	0x105: {"f32x4.relaxed_madd", immNone},
	0x106: {"f32x4.relaxed_nmadd", immNone},
	0x107: {"f64x2.relaxed_madd", immNone},
	0x108: {"f64x2.relaxed_nmadd", immNone},
	0x109: {"i8x16.relaxed_laneselect", immNone},
	0x10a: {"i16x8.relaxed_laneselect", immNone},
	0x10b: {"i32x4.relaxed_laneselect", immNone},
	0x10c: {"i64x2.relaxed_laneselect", immNone},
	0x10d: {"f32x4.relaxed_min", immNone},
	0x10e: {"f32x4.relaxed_max", immNone},
	0x10f: {"f64x2.relaxed_min", immNone},
	0x110: {"f64x2.relaxed_max", immNone},
	0x111: {"i16x8.relaxed_q15mulr_s", immNone},
	0x112: {"i16x8.relaxed_dot_i8x16_i7x16_s", immNone},
	0x113: {"i32x4.relaxed_dot_i8x16_i7x16_add_s", immNone},
}

var threadOps = [...]opInfo{
	0x00: {"memory.atomic.notify", immMemArg},
	0x01: {"memory.atomic.wait32", immMemArg},
	0x02: {"memory.atomic.wait64", immMemArg},
	0x03: {"atomic.fence", immZeroByte},
	0x10: {"i32.atomic.load", immMemArg},
	0x11: {"i64.atomic.load", immMemArg},
	0x12: {"i32.atomic.load8_u", immMemArg},
	0x13: {"i32.atomic.load16_u", immMemArg},
	0x14: {"i64.atomic.load8_u", immMemArg},
	0x15: {"i64.atomic.load16_u", immMemArg},
	0x16: {"i64.atomic.load32_u", immMemArg},
	0x17: {"i32.atomic.store", immMemArg},
	0x18: {"i64.atomic.store", immMemArg},
	0x19: {"i32.atomic.store8", immMemArg},
	0x1a: {"i32.atomic.store16", immMemArg},
	0x1b: {"i64.atomic.store8", immMemArg},
	0x1c: {"i64.atomic.store16", immMemArg},
	0x1d: {"i64.atomic.store32", immMemArg},
	// Read-modify-write: seven widths of each of add, sub, and, or, xor,
	// xchg and cmpxchg, 0x1e through 0x4e.
	0x1e: {"i32.atomic.rmw.add", immMemArg},
	0x1f: {"i64.atomic.rmw.add", immMemArg},
	0x20: {"i32.atomic.rmw8.add_u", immMemArg},
	0x21: {"i32.atomic.rmw16.add_u", immMemArg},
	0x22: {"i64.atomic.rmw8.add_u", immMemArg},
	0x23: {"i64.atomic.rmw16.add_u", immMemArg},
	0x24: {"i64.atomic.rmw32.add_u", immMemArg},
	0x25: {"i32.atomic.rmw.sub", immMemArg},
	0x26: {"i64.atomic.rmw.sub", immMemArg},
	0x27: {"i32.atomic.rmw8.sub_u", immMemArg},
	0x28: {"i32.atomic.rmw16.sub_u", immMemArg},
	0x29: {"i64.atomic.rmw8.sub_u", immMemArg},
	0x2a: {"i64.atomic.rmw16.sub_u", immMemArg},
	0x2b: {"i64.atomic.rmw32.sub_u", immMemArg},
	0x2c: {"i32.atomic.rmw.and", immMemArg},
	0x2d: {"i64.atomic.rmw.and", immMemArg},
	0x2e: {"i32.atomic.rmw8.and_u", immMemArg},
	0x2f: {"i32.atomic.rmw16.and_u", immMemArg},
	0x30: {"i64.atomic.rmw8.and_u", immMemArg},
	0x31: {"i64.atomic.rmw16.and_u", immMemArg},
	0x32: {"i64.atomic.rmw32.and_u", immMemArg},
	0x33: {"i32.atomic.rmw.or", immMemArg},
	0x34: {"i64.atomic.rmw.or", immMemArg},
	0x35: {"i32.atomic.rmw8.or_u", immMemArg},
	0x36: {"i32.atomic.rmw16.or_u", immMemArg},
	0x37: {"i64.atomic.rmw8.or_u", immMemArg},
	0x38: {"i64.atomic.rmw16.or_u", immMemArg},
	0x39: {"i64.atomic.rmw32.or_u", immMemArg},
	0x3a: {"i32.atomic.rmw.xor", immMemArg},
	0x3b: {"i64.atomic.rmw.xor", immMemArg},
	0x3c: {"i32.atomic.rmw8.xor_u", immMemArg},
	0x3d: {"i32.atomic.rmw16.xor_u", immMemArg},
	0x3e: {"i64.atomic.rmw8.xor_u", immMemArg},
	0x3f: {"i64.atomic.rmw16.xor_u", immMemArg},
	0x40: {"i64.atomic.rmw32.xor_u", immMemArg},
	0x41: {"i32.atomic.rmw.xchg", immMemArg},
	0x42: {"i64.atomic.rmw.xchg", immMemArg},
	0x43: {"i32.atomic.rmw8.xchg_u", immMemArg},
	0x44: {"i32.atomic.rmw16.xchg_u", immMemArg},
	0x45: {"i64.atomic.rmw8.xchg_u", immMemArg},
	0x46: {"i64.atomic.rmw16.xchg_u", immMemArg},
	0x47: {"i64.atomic.rmw32.xchg_u", immMemArg},
	0x48: {"i32.atomic.rmw.cmpxchg", immMemArg},
	0x49: {"i64.atomic.rmw.cmpxchg", immMemArg},
	0x4a: {"i32.atomic.rmw8.cmpxchg_u", immMemArg},
	0x4b: {"i32.atomic.rmw16.cmpxchg_u", immMemArg},
	0x4c: {"i64.atomic.rmw8.cmpxchg_u", immMemArg},
	0x4d: {"i64.atomic.rmw16.cmpxchg_u", immMemArg},
	0x4e: {"i64.atomic.rmw32.cmpxchg_u", immMemArg},
}
