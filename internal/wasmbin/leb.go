package wasmbin

// LEB128 as the core spec defines it: at most ceil(N/7) bytes for an N-bit
// integer, and the unused high bits of the final byte must be zero
// (unsigned) or copies of the sign bit (signed). Readers return the number
// of bytes consumed; writers append the shortest encoding.

// ReadU32 decodes an unsigned 32-bit LEB128 integer at the start of b.
func ReadU32(b []byte) (uint32, int, error) {
	if len(b) > 0 && b[0] < 0x80 {
		return uint32(b[0]), 1, nil
	}
	v, n, err := readUnsigned(b, 32)
	return uint32(v), n, err
}

// ReadU64 decodes an unsigned 64-bit LEB128 integer at the start of b.
func ReadU64(b []byte) (uint64, int, error) {
	if len(b) > 0 && b[0] < 0x80 {
		return uint64(b[0]), 1, nil
	}
	return readUnsigned(b, 64)
}

// ReadS32 decodes a signed 32-bit LEB128 integer at the start of b (the
// immediate of i32.const).
func ReadS32(b []byte) (int32, int, error) {
	v, n, err := readSigned(b, 32)
	return int32(v), n, err
}

func readUnsigned(b []byte, bits uint) (uint64, int, error) {
	maxBytes := int((bits + 6) / 7)
	lastBits := bits - 7*uint(maxBytes-1)
	var v uint64
	for i := 0; i < maxBytes; i++ {
		if i >= len(b) {
			return 0, i, ErrUnexpectedEnd
		}
		c := b[i]
		if i == maxBytes-1 {
			if c&0x80 != 0 {
				return 0, i + 1, ErrLEBTooLong
			}
			if c>>lastBits != 0 {
				return 0, i + 1, ErrLEBTooLarge
			}
		}
		v |= uint64(c&0x7f) << (7 * uint(i))
		if c < 0x80 {
			return v, i + 1, nil
		}
	}
	return 0, maxBytes, ErrLEBTooLong // unreachable: the last byte returns above
}

func readSigned(b []byte, bits uint) (int64, int, error) {
	maxBytes := int((bits + 6) / 7)
	lastBits := bits - 7*uint(maxBytes-1)
	var v uint64
	for i := 0; i < maxBytes; i++ {
		if i >= len(b) {
			return 0, i, ErrUnexpectedEnd
		}
		c := b[i]
		shift := 7 * uint(i)
		if i == maxBytes-1 {
			if c&0x80 != 0 {
				return 0, i + 1, ErrLEBTooLong
			}
			// The sign bit and every unused bit above it must agree.
			rest := c >> (lastBits - 1)
			if rest != 0 && rest != 0x7f>>(lastBits-1) {
				return 0, i + 1, ErrLEBTooLarge
			}
		}
		v |= uint64(c&0x7f) << shift
		if c < 0x80 {
			shift += 7
			if shift < 64 && c&0x40 != 0 {
				v |= ^uint64(0) << shift
			}
			return int64(v), i + 1, nil
		}
	}
	return 0, maxBytes, ErrLEBTooLong
}

// AppendU32 appends the shortest unsigned LEB128 encoding of v.
func AppendU32(dst []byte, v uint32) []byte { return AppendU64(dst, uint64(v)) }

// AppendU64 appends the shortest unsigned LEB128 encoding of v.
func AppendU64(dst []byte, v uint64) []byte {
	for v >= 0x80 {
		dst = append(dst, byte(v)|0x80)
		v >>= 7
	}
	return append(dst, byte(v))
}

// AppendS64 appends the shortest signed LEB128 encoding of v. It is also the
// encoder for s33 (block types): the encoding of an s33 value is that of
// the same value as an int64.
func AppendS64(dst []byte, v int64) []byte {
	for {
		c := byte(v & 0x7f)
		v >>= 7
		if (v == 0 && c&0x40 == 0) || (v == -1 && c&0x40 != 0) {
			return append(dst, c)
		}
		dst = append(dst, c|0x80)
	}
}
