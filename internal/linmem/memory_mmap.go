//go:build (linux || darwin) && (amd64 || arm64)

package linmem

import (
	"os"
	goruntime "runtime"
	"sync"
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
	owner    *Allocator
	max      uint64
	res      *reservation // nil once given back
	freed    bool         // wazero closed the module: no more growth
	fallback *sliceMemory
}

// reservation is one mapping: its first committed bytes are read-write,
// the rest inaccessible.
type reservation struct {
	mem       []byte // as syscall.Mmap returned it
	committed uint64
	// dirty is the most of it an instance has been handed: the guest can
	// write below it only (wazero bounds every access by the slice's
	// length), so the bytes from dirty to committed are still the zeroes
	// the pool left, and only [0, dirty) needs clearing.
	dirty   uint64
	cleanup goruntime.Cleanup
}

func newLinearMemory(owner *Allocator, max uint64) linearMemory {
	l := &mappedMemory{owner: owner, max: max}
	if max == 0 {
		return l
	}
	page := uint64(os.Getpagesize())
	size := (max + page - 1) &^ (page - 1)
	if r := owner.pool.get(size); r != nil {
		l.res = r
		return l
	}
	mem, err := syscall.Mmap(-1, 0, int(size), syscall.PROT_NONE, syscall.MAP_PRIVATE|syscall.MAP_ANON)
	if err != nil {
		// Address space can be capped (ulimit -v); a Go slice still works.
		l.fallback = &sliceMemory{owner: owner, max: max}
		return l
	}
	r := &reservation{mem: mem}
	// A safety net only: release unmaps or pools on every path the runtime
	// knows. The cleanup holds the mapping, not r, so r can be collected.
	r.cleanup = goruntime.AddCleanup(r, func(mem []byte) { _ = syscall.Munmap(mem) }, mem)
	l.res = r
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
	if !l.owner.admits(size, l.max) {
		return nil
	}
	if l.max == 0 {
		return []byte{}
	}
	r := l.res
	if r == nil || l.freed {
		return nil
	}
	if size > r.committed {
		// Wasm pages (64 KiB) are whole OS pages, but round anyway: the
		// reservation was rounded the same way, so end stays inside it.
		page := uint64(os.Getpagesize())
		end := (size + page - 1) &^ (page - 1)
		if err := syscall.Mprotect(r.mem[r.committed:end], syscall.PROT_READ|syscall.PROT_WRITE); err != nil {
			l.owner.refusal.Store(true)
			return nil
		}
		r.committed = end
	}
	l.owner.grew(size)
	r.dirty = max(r.dirty, size)
	// The capacity is the length: nothing may reach the pages beyond it
	// through this slice (committed ones of a pooled reservation included).
	return r.mem[:size:size]
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

// unmap gives the memory back: a small one to the pool, zeroed, any other
// to the OS. It is safe to call more than once.
func (l *mappedMemory) unmap() {
	if l.fallback != nil {
		l.fallback.unmap()
		return
	}
	r := l.res
	l.res, l.freed = nil, true
	if r != nil && !l.owner.pool.put(r) {
		r.cleanup.Stop()
		_ = syscall.Munmap(r.mem)
	}
}

// Pool keeps a few reservations of instances that used little
// memory, their committed pages zeroed and still mapped, for the next
// instances of the Runtime. A fresh mapping costs a page fault for every
// page the guest touches (the kernel zeroes each on first use; 2–3 µs a
// page on a loaded virtual machine, and a C call touches 32 of them); a
// pooled one costs clearing the bytes the last instance committed, a few
// µs. Memories that committed more than poolKeep are unmapped, so what the
// pool holds is at most perShelf × CPUs × poolKeep.
//
// The pool has a shelf for every CPU, and a memory goes back on the shelf
// of the CPU that cleared it, where the next instance on that CPU finds it
// in its own cache. One shared shelf handed each memory to whichever CPU
// asked next, which then pulled every cleared line across from the other's
// cache: on two cores, clearing took 6.1 µs a C call instead of 2.2 µs
// (docs/RATIONALE.md, "Why does the memory pool have a shelf per CPU?").
type Pool struct {
	shelves  []poolShelf
	perShelf int
}

// poolShelf is one CPU's: padded to its own cache lines, so that two CPUs
// taking from their own shelves do not contend for one line.
type poolShelf struct {
	mu     sync.Mutex
	idle   []*reservation
	closed bool
	_      [64]byte
}

// poolKeep is the most committed memory a pooled reservation may have: a Go
// guest's runtime starts with about 4 MiB.
const poolKeep = 8 << 20

// NewPool makes a pool of perShelf reservations for each CPU.
func NewPool(perShelf int) *Pool {
	return &Pool{shelves: make([]poolShelf, max(1, goruntime.NumCPU())), perShelf: perShelf}
}

// shelf is the index of the current CPU's shelf. The goroutine can move to
// another CPU right after: the pool is then merely less local.
func (p *Pool) shelf() int { return currentCPU() % len(p.shelves) }

// get takes a pooled reservation of exactly size bytes, from the current
// CPU's shelf first, or nil.
func (p *Pool) get(size uint64) *reservation {
	if p == nil {
		return nil
	}
	home := p.shelf()
	for i := range p.shelves {
		if r := p.shelves[(home+i)%len(p.shelves)].take(size); r != nil {
			return r
		}
	}
	return nil
}

func (s *poolShelf) take(size uint64) *reservation {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i := len(s.idle) - 1; i >= 0; i-- {
		if r := s.idle[i]; uint64(len(r.mem)) == size {
			s.idle = append(s.idle[:i], s.idle[i+1:]...)
			return r
		}
	}
	return nil
}

// put zeroes r's committed bytes and keeps it, on the current CPU's shelf
// or, when that is full, on any with room; false means the caller unmaps
// it.
func (p *Pool) put(r *reservation) bool {
	if p == nil || r.committed > poolKeep {
		return false
	}
	home := p.shelf()
	if !p.room(home) {
		return false // a full pool: no clearing for nothing
	}
	// Every byte the instance could have written is below dirty: above it,
	// the committed pages are as the last clear left them, and the pages
	// above committed were never writable. So the next instance finds
	// zeroes only, as in a fresh memory, and a small guest given a
	// reservation a large one committed clears only what it could reach.
	clear(r.mem[:r.dirty])
	r.dirty = 0
	for i := range p.shelves {
		if p.shelves[(home+i)%len(p.shelves)].keep(r, p.perShelf) {
			return true
		}
	}
	return false
}

// room reports whether a shelf, home first, could keep one more: a hint,
// which keep checks again.
func (p *Pool) room(home int) bool {
	for i := range p.shelves {
		s := &p.shelves[(home+i)%len(p.shelves)]
		s.mu.Lock()
		ok := !s.closed && len(s.idle) < p.perShelf
		s.mu.Unlock()
		if ok {
			return true
		}
	}
	return false
}

func (s *poolShelf) keep(r *reservation, perShelf int) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed || len(s.idle) >= perShelf {
		return false
	}
	s.idle = append(s.idle, r)
	return true
}

// idle counts the pooled reservations.
func (p *Pool) idle() int {
	n := 0
	for i := range p.shelves {
		s := &p.shelves[i]
		s.mu.Lock()
		n += len(s.idle)
		s.mu.Unlock()
	}
	return n
}

// close unmaps every pooled reservation; later ones are not kept.
func (p *Pool) Close() {
	for i := range p.shelves {
		s := &p.shelves[i]
		s.mu.Lock()
		idle := s.idle
		s.idle, s.closed = nil, true
		s.mu.Unlock()
		for _, r := range idle {
			r.cleanup.Stop()
			_ = syscall.Munmap(r.mem)
		}
	}
}
