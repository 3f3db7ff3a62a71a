package runtime

import (
	"container/list"
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"
)

// PackageSetConfig configures a PackageSet.
type PackageSetConfig struct {
	// Loader finds the artifact and the package of a key. Required.
	Loader PackageLoader
	// MaxBytes bounds the estimated resident bytes of the open packages
	// (Package.ResidentBytes); 0 means no bound of bytes.
	MaxBytes int64
	// MaxPackages bounds how many packages are open at once; 0 means no
	// bound of count.
	MaxPackages int
	// CollectAfter: once the set has opened and closed packages of this
	// many estimated bytes, it runs a garbage collection on a goroutine of
	// its own and, unless the process has a memory limit (whose scavenger
	// does it), returns the freed heap to the OS (debug.FreeOSMemory).
	// wazero unmaps a closed module's machine code only when the collector
	// finalizes it, an open leaves garbage of about half its estimate
	// (the artifact read, wazero's decoding and validation), and a process
	// with a small heap (or a high GOGC, as the subako-runner command) may
	// not collect for minutes, nor give freed pages back: evicted code and
	// garbage would stay resident and the budget would mean nothing. 0
	// means MaxBytes/4 (64 MiB without MaxBytes); negative never.
	//
	// Experimental: the heuristic and its default follow measurements of
	// this runner and of Go's collector, and may change in any release
	// (docs/embedding.md, "What may change").
	CollectAfter int64
	// StrictBudget makes an open wait, when the packages in use (and the
	// opens begun before it) leave no room in the budget, until calls end
	// and free some: the budget then holds whatever the callers do, at the
	// price of the wait. A package larger than the whole budget opens once
	// nothing else is in use. Without it the open goes ahead and the set
	// holds more than its budget until the calls end. With it, never hold
	// one Acquire while acquiring another key: with a full budget that
	// waits for itself (until its ctx ends).
	//
	// Experimental: how an open waits for room is the set's budgeting
	// heuristic, tuned by measurement, and may change meaning or go away
	// in any release (docs/embedding.md, "What may change").
	StrictBudget bool
}

// ErrPackageSetClosed is the error of PackageSet.Call and Acquire once
// Close has begun, and of the callers Close stopped while they waited for
// an open (errors.Is finds it; errors.Is finds no context error in it: it
// is not the caller's cancellation).
var ErrPackageSetClosed = errors.New("subako package set closed")

// setClosedError is the error of a call of key that the set's Close
// refused or stopped; what says where it was.
func setClosedError(key, what string) error {
	return fmt.Errorf("package %s: %w (%s)", key, ErrPackageSetClosed, what)
}

// PackageSet keeps the packages an embedder serves open within a budget:
// the backend that hosts every package its users uploaded names each by
// its own key and calls it through the set, which opens it from its
// artifact on first use and closes the least recently used when the
// budget is exceeded.
//
//	set, _ := runtime.NewPackageSet(rt, runtime.PackageSetConfig{
//		Loader:   runtime.DirLoader{Artifacts: store, Packages: pkgs},
//		MaxBytes: 4 << 30,
//	})
//	defer set.Close(ctx)
//	res, err := set.Call(ctx, key, runtime.CallRequest{Tool: "greet", Arguments: args})
//
// # Notes
//
//   - Concurrent first calls of one key share one Open; a failed open is
//     returned to every caller that waited for it and is not remembered:
//     the next call tries again.
//   - A package is never closed while a call (or an Acquire) uses it. Room
//     for an open is made before it starts (least recently used idle
//     packages first). When the packages in use leave no room, the open
//     goes ahead over the budget, or with StrictBudget waits for calls to
//     end (Stats.OpenWaits).
//   - The budget is of estimated bytes (Package.ResidentBytes): wazero does
//     not report what a compiled module costs. About 40% of it is Go heap:
//     bound the heap's garbage with a memory limit (debug.SetMemoryLimit)
//     of MaxBytes/2 + 64 MiB plus the process's own heap, above all under
//     the high GOGC of GCPercent (docs/embedding.md).
//   - Close drains: it refuses new calls, waits for those in flight and for
//     opens under way, then closes every package. It does not close the
//     Runtime.
//   - An Observer that also implements PackageSetObserver is told of every
//     open, failed open and eviction.
type PackageSet struct {
	rt     *Runtime
	cfg    PackageSetConfig
	ctx    context.Context // ends when Close begins: loads stop
	cancel context.CancelFunc
	obs    PackageSetObserver
	// acquireObs is the observer when it wants every acquire.
	acquireObs PackageSetAcquireObserver

	mu      sync.Mutex
	entries map[string]*setEntry
	lru     *list.List // of *setEntry open and in entries, most recent first
	closed  bool
	busy    sync.WaitGroup // one per Acquire not released and per open under way
	stats   PackageSetStats
	// churnBytes are the estimated bytes opened and closed since the
	// last collection (CollectAfter); collecting is set while one runs.
	churnBytes atomic.Int64
	collecting atomic.Bool
	// reservations are the estimates of the opens under way (load), in
	// the order they began; reservedBytes and reserved sum them. The
	// budget counts them before their packages exist. cond (on mu) wakes
	// the opens waiting for room.
	reservations  *list.List
	reservedBytes int64
	reserved      int
	cond          *sync.Cond
	collections   atomic.Int64
}

// setEntry is one key of the set: opening (done not yet closed) or open.
type setEntry struct {
	key   string
	done  chan struct{} // closed when the open ends; pkg or err is then set
	pkg   *Package
	err   error
	bytes int64
	// refs are the callers holding or waiting for the package (Acquires
	// not released); under the set's mu.
	refs int
	elem *list.Element // in lru while open and in entries
	// gone: removed from entries (evicted or removed); closed when refs
	// reaches 0. evicted: gone to stay within the budget.
	gone, evicted bool
	// churn is what the open of this entry opened and closed, counted
	// towards a collection (noteChurn) when its first caller releases it,
	// so that the collection the open sets off does not run beside the
	// package's first call; under the set's mu.
	churn int64
	// openStart and openTook time the open; set before done is closed.
	openStart time.Time
	openTook  time.Duration
}

// PackageSetStats are a set's counters since NewPackageSet.
type PackageSetStats struct {
	// Hits are acquires that found the package open; Misses had to open it
	// or wait for an open under way (shared opens count once in Opens).
	Hits, Misses int64
	// Opens are the opens that succeeded, OpenFailures those that did not.
	Opens, OpenFailures int64
	// Evictions are the packages closed to stay within the budget.
	Evictions int64
	// OpenTime is the time spent in the loader and Open, over all opens.
	OpenTime time.Duration
	// Resident is how many packages are open (those evicted while in use
	// included, until their calls end), ResidentBytes their estimated bytes.
	Resident      int
	ResidentBytes int64
	// InUse is how many packages calls are using right now.
	InUse int
	// OpenWaits counts the times an open waited for packages in use (or
	// older opens) to leave room in the budget.
	OpenWaits int64
	// Collections are the garbage collections the set started to unmap
	// closed packages' code and return its opens' garbage to the OS
	// (PackageSetConfig.CollectAfter).
	Collections int64
}

// PackageSetObserver is an Observer that also wants the set's events. The
// Observer interface is unchanged (embedders implement it); the set checks
// for this one with a type assertion.
type PackageSetObserver interface {
	PackageSet(ctx context.Context, e PackageSetEvent)
}

// PackageSet event kinds.
const (
	PackageSetOpened     = "opened"
	PackageSetOpenFailed = "open_failed"
	PackageSetEvicted    = "evicted"
)

// PackageSetEvent is one open, failed open or eviction of a PackageSet.
type PackageSetEvent struct {
	// Kind is PackageSetOpened, PackageSetOpenFailed or PackageSetEvicted.
	Kind string
	// Key is the embedder's key of the package.
	Key string
	// Duration is the open's (loader and Open); zero for an eviction.
	Duration time.Duration
	// Bytes is the package's estimated resident bytes (0 when the open
	// failed).
	Bytes int64
	// Err is why the open failed.
	Err error
	// Resident and ResidentBytes are the set's (PackageSetStats) just
	// after the event: a gauge of what is open.
	Resident      int
	ResidentBytes int64
}

// NewPackageSet makes a set of packages opened through rt.
func NewPackageSet(rt *Runtime, cfg PackageSetConfig) (*PackageSet, error) {
	if cfg.Loader == nil {
		return nil, errors.New("package set: no Loader")
	}
	if cfg.MaxBytes < 0 || cfg.MaxPackages < 0 {
		return nil, errors.New("package set: MaxBytes and MaxPackages must not be negative")
	}
	s := &PackageSet{rt: rt, cfg: cfg, entries: map[string]*setEntry{}, lru: list.New(), reservations: list.New()}
	s.cond = sync.NewCond(&s.mu)
	s.ctx, s.cancel = context.WithCancel(context.Background())
	s.obs, _ = rt.observer.(PackageSetObserver)
	s.acquireObs, _ = rt.observer.(PackageSetAcquireObserver)
	if s.cfg.CollectAfter == 0 {
		s.cfg.CollectAfter = 64 << 20
		if cfg.MaxBytes > 0 {
			s.cfg.CollectAfter = cfg.MaxBytes / 4
		}
	}
	return s, nil
}

// Call runs req on the package of key, opening it first if it is not
// open. Errors of the loader and of Open come back wrapped with the key
// (errors.Is and errors.As see through it); the call's own errors and
// Result are Package.Call's.
//
// Every Call ends in exactly one Observer event: Package.Call's once the
// package is reached, else the set's own (setCallEvent), whatever stopped
// it before.
func (s *PackageSet) Call(ctx context.Context, key string, req CallRequest) (*Result, error) {
	started := time.Now()
	ctx, _ = withAcquire(ctx, key) // for the Observer's Call: the wait before it
	p, release, err := s.Acquire(ctx, key)
	if err != nil {
		e := CallEvent{Package: key, Tool: req.Tool, Start: started}
		e.Outcome, e.Code = setErrorOutcome(ctx, err)
		s.rt.reportCall(ctx, s.rt.log.With(zap.String("key", key), zap.String("tool", req.Tool)), e)
		return nil, err
	}
	defer release()
	return p.Call(ctx, req)
}

// setErrorOutcome is the event outcome of a set's call that never reached
// its package: the caller's context ended first (canceled), the set
// closed (error, package_set_closed), or the package could not be opened
// (error, open_failed).
func setErrorOutcome(ctx context.Context, err error) (Outcome, string) {
	switch {
	case errors.Is(err, ErrPackageSetClosed):
		return OutcomeError, CodePackageSetClosed
	case callerEnded(ctx) != nil && errors.Is(err, callerEnded(ctx)):
		return OutcomeCanceled, ""
	default:
		return OutcomeError, CodeOpenFailed
	}
}

func (s *PackageSet) observe(ctx context.Context, e PackageSetEvent) {
	if s.obs != nil {
		st := s.Stats()
		e.Resident, e.ResidentBytes = st.Resident, st.ResidentBytes
		s.obs.PackageSet(ctx, e)
	}
}

// Remove forgets the package of key, so that the next call opens it again
// from its loader: after a new upload under the same key, or when the
// package is deleted. The package closes once the calls using it end; an
// open under way finishes for the callers waiting for it, then closes.
func (s *PackageSet) Remove(key string) {
	s.mu.Lock()
	e, ok := s.entries[key]
	if !ok {
		s.mu.Unlock()
		return
	}
	delete(s.entries, key)
	e.gone = true
	var closing []*setEntry
	if e.pkg != nil {
		s.lru.Remove(e.elem)
		e.elem = nil
		if e.refs == 0 {
			closing = append(closing, s.forget(e))
		}
	}
	s.mu.Unlock()
	s.noteChurn(s.closeAll(closing))
}

// Stats returns the set's counters.
func (s *PackageSet) Stats() PackageSetStats {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.stats
	st.Collections = s.collections.Load()
	return st
}

// Close refuses new calls, stops the opens under way (their callers get
// an error), waits for the calls in flight to end and closes every
// package. When ctx ends first it returns ctx.Err() and the packages still
// in use stay open (closing the Runtime closes them). A second Close waits
// again and returns nil.
func (s *PackageSet) Close(ctx context.Context) error {
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	s.cancel()
	drained := make(chan struct{})
	go func() {
		s.busy.Wait()
		close(drained)
	}()
	select {
	case <-drained:
	case <-ctx.Done():
		return ctx.Err()
	}
	s.mu.Lock()
	var closing []*setEntry
	for key, e := range s.entries {
		delete(s.entries, key)
		if e.pkg != nil {
			s.lru.Remove(e.elem)
			e.elem, e.gone = nil, true
			closing = append(closing, s.forget(e))
		}
	}
	s.mu.Unlock()
	var err error
	for _, e := range closing {
		err = errors.Join(err, e.pkg.Close(ctx))
		s.noteChurn(e.bytes)
	}
	return err
}
