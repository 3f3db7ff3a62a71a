package runtime

import (
	"container/list"
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	goruntime "runtime"
	"runtime/debug"

	"go.uber.org/zap"

	"github.com/subako/subako-runner/internal/modcheck"
)

// openReservation is the estimate of one open under way.
type openReservation struct{ bytes int64 }

// reserve counts est for an open of key and returns when the budget has
// room for it: idle packages are closed for it, and while the packages in
// use and older opens leave no room, it waits for them. An open that
// cannot fit however long it waits (nothing in use, no older open) goes
// ahead: a package larger than the budget still opens. It returns with
// the reservation held, the function that gives it back, and the bytes
// of the packages it closed.
func (s *PackageSet) reserve(ctx context.Context, key string, est int64) (unreserve func(), closed int64, err error) {
	wake := context.AfterFunc(ctx, func() {
		s.mu.Lock()
		s.cond.Broadcast()
		s.mu.Unlock()
	})
	defer wake()
	s.mu.Lock()
	r := &openReservation{bytes: est}
	el := s.reservations.PushBack(r)
	s.reservedBytes += est
	s.reserved++
	for {
		if closing := s.evictLocked(false); len(closing) > 0 {
			s.mu.Unlock()
			closed += s.closeAll(closing)
			s.mu.Lock()
			continue
		}
		if !s.cfg.StrictBudget || s.fits(el) || (el == s.reservations.Front() && s.stats.Resident == 0) {
			s.mu.Unlock()
			return func() {
				s.mu.Lock()
				s.unreserveLocked(el)
				s.mu.Unlock()
			}, closed, nil
		}
		if err := ctx.Err(); err != nil {
			s.unreserveLocked(el)
			s.mu.Unlock()
			return nil, closed, fmt.Errorf("package %s: %w", key, canceled(ctx, "waiting for room in the package set"))
		}
		s.stats.OpenWaits++
		s.cond.Wait()
	}
}

// fits reports whether the reservation at el fits beside the open
// packages and the reservations older than it.
func (s *PackageSet) fits(el *list.Element) bool {
	bytes, n := s.stats.ResidentBytes, s.stats.Resident
	for o := s.reservations.Front(); o != el; o = o.Next() {
		bytes += o.Value.(*openReservation).bytes
		n++
	}
	bytes += el.Value.(*openReservation).bytes
	return (s.cfg.MaxBytes == 0 || bytes <= s.cfg.MaxBytes) && (s.cfg.MaxPackages == 0 || n+1 <= s.cfg.MaxPackages)
}

// unreserveLocked gives back the reservation at el and wakes the opens
// waiting for room.
func (s *PackageSet) unreserveLocked(el *list.Element) {
	r := s.reservations.Remove(el).(*openReservation)
	s.reservedBytes -= r.bytes
	s.reserved--
	s.cond.Broadcast()
}

// moduleSize is the size of the module.wasm of the package at path (a
// directory or a bare .wasm file), or guess when it cannot be read.
func moduleSize(path string, guess int) int {
	fi, err := os.Stat(path)
	if err == nil && fi.IsDir() {
		fi, err = os.Stat(filepath.Join(path, ModuleFile))
	}
	if err != nil {
		return guess
	}
	return int(fi.Size())
}

// over reports whether the open packages exceed the budget.
func (s *PackageSet) over() bool {
	return (s.cfg.MaxBytes > 0 && s.stats.ResidentBytes+s.reservedBytes > s.cfg.MaxBytes) ||
		(s.cfg.MaxPackages > 0 && s.stats.Resident+s.reserved > s.cfg.MaxPackages)
}

// evictLocked removes least recently used idle packages until the set is
// within its budget (or only packages in use, or just opened, remain) and
// returns those to close. With keepNewest (after an open or a release),
// the most recently used entry is kept: a package larger than the whole
// budget still serves the calls that opened it. Before an open, it goes
// too if the budget needs its room.
func (s *PackageSet) evictLocked(keepNewest bool) []*setEntry {
	var closing []*setEntry
	for el := s.lru.Back(); el != nil && s.over(); {
		prev := el.Prev()
		e := el.Value.(*setEntry)
		if e.refs == 0 && (!keepNewest || el != s.lru.Front()) {
			delete(s.entries, e.key)
			s.lru.Remove(el)
			e.elem, e.gone, e.evicted = nil, true, true
			s.stats.Evictions++
			closing = append(closing, s.forget(e))
		}
		el = prev
	}
	return closing
}

// forget takes a gone entry with no references out of the accounting and
// returns it to be closed (outside the lock).
func (s *PackageSet) forget(e *setEntry) *setEntry {
	s.stats.Resident--
	s.stats.ResidentBytes -= e.bytes
	s.cond.Broadcast()
	return e
}

// closeAll closes the packages of entries forgotten, tells the observer of
// each eviction, and returns their bytes, for the caller to count towards a
// collection (noteChurn).
func (s *PackageSet) closeAll(entries []*setEntry) (closed int64) {
	for _, e := range entries {
		if err := e.pkg.Close(context.Background()); err != nil {
			s.rt.log.Warn("closing a package of the set failed", zap.String("key", e.key), zap.Error(err))
		}
		if e.evicted {
			s.observe(context.Background(), PackageSetEvent{Kind: PackageSetEvicted, Key: e.key, Bytes: e.bytes})
		}
		closed += e.bytes
	}
	return closed
}

// noteChurn counts bytes opened or closed and starts a collection when
// CollectAfter is reached (one at a time): see
// PackageSetConfig.CollectAfter.
func (s *PackageSet) noteChurn(bytes int64) {
	if bytes == 0 || s.cfg.CollectAfter < 0 || s.churnBytes.Add(bytes) < s.cfg.CollectAfter || !s.collecting.CompareAndSwap(false, true) {
		return
	}
	s.churnBytes.Store(0)
	s.collections.Add(1)
	go func() {
		defer s.collecting.Store(false)
		if debug.SetMemoryLimit(-1) < math.MaxInt64 {
			// Under a memory limit the scavenger returns freed pages
			// itself, as the heap nears the limit: a collection is enough,
			// and pages kept are not faulted in again.
			goruntime.GC()
			return
		}
		debug.FreeOSMemory()
	}()
}

// ResidentBytes estimates the memory the open package holds while it
// stays open: its compiled machine code and wazero's structures for it,
// the metered module it keeps (Artifact needs it), and module.wasm when
// it keeps that too (a package from Load; Open only hashes it). wazero
// does not report the first two; the estimate is linear in the metered
// module's instructions, measured on C, Go and SIMD packages
// (docs/embedding.md, "Thousands of packages").
func (p *Package) ResidentBytes() int64 {
	p.codeOnce.Do(func() {
		if p.codeSize == 0 {
			p.codeSize = codeBytes(p.checked.metered)
		}
	})
	return residentEstimate(p.codeSize, len(p.checked.metered), len(p.checked.Source.Module))
}

// estimateResident is ResidentBytes from the metered module and the size
// of module.wasm, before the package exists.
func estimateResident(metered []byte, module int) int64 {
	return residentEstimate(codeBytes(metered), len(metered), module)
}

// codeBytes is the machine code the compile cost model predicts for the
// metered module (modcheck.CodeBytes: each instruction by its class, so a
// module of SIMD chains is priced as the code it compiles to), or the
// linear fallback for one the model cannot read (Open will refuse it).
func codeBytes(metered []byte) int64 {
	code, err := modcheck.CodeBytes(metered)
	if err != nil {
		return residentFallbackPerByte * int64(len(metered))
	}
	return code
}

// residentEstimate is the estimate from the predicted machine code and the
// sizes of the metered module and of module.wasm.
func residentEstimate(code int64, metered, module int) int64 {
	return residentFixed + code + residentPerMeteredByte*int64(metered)/2 + int64(module)
}

// The estimate's coefficients (see ResidentBytes), measured by the bench's
// "open … package: estimated resident bytes vs RSS added" rows.
const (
	residentFixed = 128 << 10
	// residentPerMeteredByte is in halves: 2.5 bytes of wazero's
	// structures per metered byte, beside the machine code.
	residentPerMeteredByte = 5
	// residentFallbackPerByte is machine code per metered byte for a
	// module the model cannot read: 3 for the Go SDK's and C's.
	residentFallbackPerByte = 3
)
