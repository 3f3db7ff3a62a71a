package wasmbin

import "math"

// Helpers only the tests use.

// ReadS33 decodes a signed 33-bit LEB128 integer (the encoding of block
// types) at the start of b.
func ReadS33(b []byte) (int64, int, error) {
	return readSigned(b, 33)
}

// ReadS64 decodes a signed 64-bit LEB128 integer at the start of b.
func ReadS64(b []byte) (int64, int, error) {
	return readSigned(b, 64)
}

// AppendS32 appends the shortest signed LEB128 encoding of v.
func AppendS32(dst []byte, v int32) []byte { return AppendS64(dst, int64(v)) }

// ValType returns the single result type of a value-typed block.
func (b BlockType) ValType() (ValType, bool) {
	if b < 0 && b != BlockEmpty {
		return ValType(byte(b) & 0x7f), true
	}
	return 0, false
}

// TypeIndex returns the type index of a block typed by the type section.
func (b BlockType) TypeIndex() (uint32, bool) {
	if b >= 0 && b <= math.MaxUint32 {
		return uint32(b), true
	}
	return 0, false
}

// Depth is the number of blocks open after the last instruction returned
// (0 inside the function's own body; the final end leaves it at 0 too).
func (w *Walker) Depth() int { return w.depth }

// AppendU32Padded appends v as an unsigned LEB128 of exactly 5 bytes, so a
// rewriter can reserve a size field and patch it in place later.
func AppendU32Padded(dst []byte, v uint32) []byte {
	for i := 0; i < 4; i++ {
		dst = append(dst, byte(v)|0x80)
		v >>= 7
	}
	return append(dst, byte(v))
}
