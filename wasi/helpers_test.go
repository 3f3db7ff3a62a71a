package wasi

// Helpers only the tests use.

func (m memory) u32(ptr uint32) (uint32, bool) {
	b, ok := m.slice(ptr, 4)
	if !ok {
		return 0, false
	}
	return uint32(b[0]) | uint32(b[1])<<8 | uint32(b[2])<<16 | uint32(b[3])<<24, true
}
