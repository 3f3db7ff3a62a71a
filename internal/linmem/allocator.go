package linmem

import (
	"sync"
	"sync/atomic"

	"github.com/tetratelabs/wazero/experimental"

	"github.com/subako/subako-runner/limits"
)

// Allocator is the per-instance memory allocator (wazero's
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
//
// Where the platform allows (memory_mmap.go), each linear memory is an
// address-space reservation outside the Go heap that is committed as the
// guest grows and unmapped when the instance closes; elsewhere it is a Go
// slice (memory_slice.go).
type Allocator struct {
	limit   uint64
	pool    *Pool // the Runtime's; nil: none
	peak    atomic.Uint64
	refusal atomic.Bool
	// linear is the linear memory's current size; tableBytes what the
	// tables grown so far hold (tables is their sizes, by index).
	linear     atomic.Uint64
	mu         sync.Mutex
	tableBytes atomic.Uint64
	tables     map[uint32]uint64

	memories []linearMemory // every memory handed out, for release
}

// linearMemory is a memory the allocator hands out. wazero's Free, called
// as the module closes, only drops the guest's access; unmap gives the
// memory back, called by release once the instance's end was reported, so
// that the host's work of returning a large memory to the OS is never
// counted as the guest's time to exit.
type linearMemory interface {
	experimental.LinearMemory
	unmap()
}

func New(limit uint64, pool *Pool) *Allocator {
	return &Allocator{limit: limit, pool: pool}
}

// Allocate implements experimental.MemoryAllocator.
func (m *Allocator) Allocate(capacity, max uint64) experimental.LinearMemory {
	if max > m.limit {
		max = m.limit
	}
	mem := newLinearMemory(m, max)
	m.mu.Lock()
	m.memories = append(m.memories, mem)
	m.mu.Unlock()
	return mem
}

func (m *Allocator) Refused() bool { return m.refusal.Load() }

// GrowTable implements fuel.TableBudget. A refused growth counts as a
// refused memory growth: a module that traps after it ran out of memory.
func (m *Allocator) GrowTable(table, size, delta uint32) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.tables == nil {
		m.tables = map[uint32]uint64{}
	}
	newSize := uint64(size) + uint64(delta)
	bytes := m.tableBytes.Load() - m.tables[table]*uint64(limits.TableElementBytes) + newSize*uint64(limits.TableElementBytes)
	// Grown tables are capped in elements too, as declared ones are at
	// upload (issue 25): on the Go heap a table costs the host its bytes
	// times the collector's headroom, which the memory limit cannot see.
	if bytes/uint64(limits.TableElementBytes) > limits.DefaultTableElements {
		m.refusal.Store(true)
		return false
	}
	if bytes+m.linear.Load() > m.limit {
		m.refusal.Store(true)
		return false
	}
	m.tables[table] = newSize
	m.tableBytes.Store(bytes)
	return true
}

// Peak is the largest size any memory of the instance reached, in bytes.
func (m *Allocator) Peak() uint64 { return m.peak.Load() }

// admits reports whether a linear memory of size bytes (at most max) fits
// beside the tables grown so far; a refusal is recorded, which turns a
// later trap or exit into out_of_memory.
func (m *Allocator) admits(size, max uint64) bool {
	if size > max || size+m.tableBytes.Load() > m.limit {
		m.refusal.Store(true)
		return false
	}
	return true
}

// grew records a memory's new size: the linear size the tables are
// charged beside, and the peak.
func (m *Allocator) grew(size uint64) {
	m.linear.Store(size)
	for {
		peak := m.peak.Load()
		if size <= peak || m.peak.CompareAndSwap(peak, size) {
			return
		}
	}
}

// release gives back every memory of the instance. It must run once the
// instance can no longer run, on every path: wazero calls Free when a
// module closes, but not when instantiation fails after the memory was made
// (a start function that traps or exits, a data segment out of bounds).
func (m *Allocator) Release() {
	m.mu.Lock()
	mems := m.memories
	m.memories = nil
	m.mu.Unlock()
	for _, mem := range mems {
		mem.unmap()
	}
}
