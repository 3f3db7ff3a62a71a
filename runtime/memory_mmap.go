//go:build (linux || darwin) && (amd64 || arm64)

package runtime

import (
	"os"
	goruntime "runtime"
	"syscall"
)

// mappedMemory is a linear memory outside the Go heap. The instance's whole
// maximum (its memory limit) is reserved once as inaccessible address space;
// growing commits the new pages (mprotect to read-write) in place, so the
// guest's memory never moves and is never copied, and the Go garbage
// collector neither sees nor paces itself by it; unmap returns it to the OS
// at once, not when the collector and the scavenger get to a slice.
//
// Only 64-bit address spaces: reserving the 4 GiB a 32-bit module can use
// costs nothing there.
type mappedMemory struct {
	owner     *memoryLimit
	max       uint64
	mem       []byte // the reservation, as syscall.Mmap returned it; nil once unmapped
	committed uint64 // bytes of mem that are read-write
	freed     bool   // wazero closed the module: no more growth
	cleanup   goruntime.Cleanup
	fallback  *sliceMemory
}

func newLinearMemory(owner *memoryLimit, max uint64) linearMemory {
	l := &mappedMemory{owner: owner, max: max}
	if max == 0 {
		return l
	}
	page := uint64(os.Getpagesize())
	reserve := (max + page - 1) &^ (page - 1)
	mem, err := syscall.Mmap(-1, 0, int(reserve), syscall.PROT_NONE, syscall.MAP_PRIVATE|syscall.MAP_ANON)
	if err != nil {
		// Address space can be capped (ulimit -v); a Go slice still works.
		l.fallback = &sliceMemory{owner: owner, max: max}
		return l
	}
	l.mem = mem
	// A safety net only: release unmaps on every path the runtime knows.
	// The cleanup holds the mapping, not l, so l can become unreachable.
	l.cleanup = goruntime.AddCleanup(l, func(mem []byte) { _ = syscall.Munmap(mem) }, mem)
	return l
}

// Reallocate implements experimental.LinearMemory. Returning nil makes
// memory.grow return -1 to the guest, as the spec allows; so does a commit
// the OS refuses (a strict overcommit policy), which is then as much an
// out_of_memory as a growth past the limit.
func (l *mappedMemory) Reallocate(size uint64) []byte {
	if l.fallback != nil {
		return l.fallback.Reallocate(size)
	}
	if size > l.max {
		l.owner.refusal.Store(true)
		return nil
	}
	if l.max == 0 {
		return []byte{}
	}
	if l.mem == nil || l.freed {
		return nil
	}
	if size > l.committed {
		// Wasm pages (64 KiB) are whole OS pages, but round anyway: the
		// reservation was rounded the same way, so end stays inside it.
		page := uint64(os.Getpagesize())
		end := (size + page - 1) &^ (page - 1)
		if err := syscall.Mprotect(l.mem[l.committed:end], syscall.PROT_READ|syscall.PROT_WRITE); err != nil {
			l.owner.refusal.Store(true)
			return nil
		}
		l.committed = end
	}
	l.owner.grew(size)
	// The capacity is the length: nothing may reach the reserved pages
	// beyond it through this slice.
	return l.mem[:size:size]
}

// Free implements experimental.LinearMemory. wazero calls it as the module
// closes, on the guest's goroutine before the instance's end is reported;
// unmapping a large memory takes milliseconds (about 80 µs a MiB), which
// would count against the guest's second to exit, so the pages go back in
// unmap, right after.
func (l *mappedMemory) Free() {
	if l.fallback != nil {
		l.fallback.Free()
		return
	}
	l.freed = true
}

// unmap returns the memory to the OS. It is safe to call more than once.
func (l *mappedMemory) unmap() {
	if l.fallback != nil {
		l.fallback.unmap()
		return
	}
	if l.mem != nil {
		l.cleanup.Stop()
		_ = syscall.Munmap(l.mem)
		l.mem, l.committed, l.freed = nil, 0, true
	}
}
