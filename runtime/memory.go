package runtime

import (
	"sync"
	"sync/atomic"

	"github.com/tetratelabs/wazero/experimental"

	"github.com/subako/subako-runner/limits"
)

// memoryLimit is the per-instance memory allocator (wazero's
// experimental.MemoryAllocator): it refuses growth beyond the call's limit,
// so one instance cannot take memory from the calls beside it, and it records
// the peak size and whether a growth was refused, which turns a later trap
// or exit into out_of_memory.
//
// wazero's own runtime-wide page limit is only a ceiling for every instance;
// the allocator is what lets each call have its own limit.
//
// Tables share the limit (fuel.TableBudget): every table.grow asks first,
// and an element costs limits.TableElementBytes, what wazero's table holds
// per element. So linear memory plus grown tables stay within the limit,
// and a guest's table.grow of 2^32-2 elements gets -1 instead of making the
// host allocate 32 GiB.
type memoryLimit struct {
	limit   uint64
	peak    atomic.Uint64
	refusal atomic.Bool
	// linear is the linear memory's current size; tableBytes what the
	// tables grown so far hold (tables is their sizes, by index).
	linear     atomic.Uint64
	mu         sync.Mutex
	tableBytes atomic.Uint64
	tables     map[uint32]uint64
}

func newMemoryLimit(limit uint64) *memoryLimit { return &memoryLimit{limit: limit} }

// Allocate implements experimental.MemoryAllocator.
func (m *memoryLimit) Allocate(capacity, max uint64) experimental.LinearMemory {
	if max > m.limit {
		max = m.limit
	}
	return &limitedMemory{owner: m, max: max}
}

func (m *memoryLimit) refused() bool { return m.refusal.Load() }

// GrowTable implements fuel.TableBudget. A refused growth counts as a
// refused memory growth: a module that traps after it ran out of memory.
func (m *memoryLimit) GrowTable(table, size, delta uint32) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.tables == nil {
		m.tables = map[uint32]uint64{}
	}
	newSize := uint64(size) + uint64(delta)
	bytes := m.tableBytes.Load() - m.tables[table]*uint64(limits.TableElementBytes) + newSize*uint64(limits.TableElementBytes)
	if bytes+m.linear.Load() > m.limit {
		m.refusal.Store(true)
		return false
	}
	m.tables[table] = newSize
	m.tableBytes.Store(bytes)
	return true
}

// Peak is the largest size any memory of the instance reached, in bytes.
func (m *memoryLimit) Peak() uint64 { return m.peak.Load() }

type limitedMemory struct {
	owner *memoryLimit
	max   uint64
	buf   []byte
}

// Reallocate implements experimental.LinearMemory. Returning nil makes
// memory.grow return -1 to the guest, as the spec allows.
func (l *limitedMemory) Reallocate(size uint64) []byte {
	if size > l.max || size+l.owner.tableBytes.Load() > l.owner.limit {
		l.owner.refusal.Store(true)
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
	l.owner.linear.Store(size)
	for {
		peak := l.owner.peak.Load()
		if size <= peak || l.owner.peak.CompareAndSwap(peak, size) {
			break
		}
	}
	return l.buf
}

// Free implements experimental.LinearMemory.
func (l *limitedMemory) Free() { l.buf = nil }
