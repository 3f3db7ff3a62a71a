package linmem

// sliceMemory is a linear memory in a Go slice: the allocator of platforms
// without memory_mmap.go, and the fallback where the address space cannot
// be reserved.
type sliceMemory struct {
	owner *Allocator
	max   uint64
	buf   []byte
}

// Reallocate implements experimental.LinearMemory. Returning nil makes
// memory.grow return -1 to the guest, as the spec allows.
func (l *sliceMemory) Reallocate(size uint64) []byte {
	if !l.owner.admits(size, l.max) {
		return nil
	}
	if size <= uint64(cap(l.buf)) {
		l.buf = l.buf[:size]
	} else {
		// Grow geometrically (as append does) so a guest that grows page by
		// page is not copied page by page, but never past the limit.
		newCap := max(size, uint64(cap(l.buf))*2)
		newCap = min(newCap, l.max)
		nb := make([]byte, size, newCap)
		copy(nb, l.buf)
		l.buf = nb
	}
	l.owner.grew(size)
	return l.buf
}

// Free implements experimental.LinearMemory.
func (l *sliceMemory) Free() { l.buf = nil }

// unmap leaves the slice to the garbage collector.
func (l *sliceMemory) unmap() { l.buf = nil }
