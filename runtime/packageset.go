package runtime

import (
	"container/list"
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	goruntime "runtime"
	"runtime/debug"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/subako/subako-runner/internal/modcheck"
)

// PackageLoader gives a PackageSet what it needs to open the package an
// embedder names by key: its stored artifact and its package directory (or
// bare .wasm file), as Runtime.Open takes them. DirLoader is the
// directory-backed one; an object store plugs in the same way (fetch the
// artifact with ReadArtifact from a local copy, or build an *Artifact).
//
// LoadPackage is called from the goroutine of the first caller that needs
// the key, with a context that outlives that caller (other callers may be
// waiting for the same open) and ends when the set closes. It must be safe
// for concurrent use with distinct keys.
type PackageLoader interface {
	LoadPackage(ctx context.Context, key string) (a *Artifact, path string, err error)
}

// PackageLoaderFunc adapts a function to PackageLoader.
type PackageLoaderFunc func(ctx context.Context, key string) (*Artifact, string, error)

// LoadPackage calls f.
func (f PackageLoaderFunc) LoadPackage(ctx context.Context, key string) (*Artifact, string, error) {
	return f(ctx, key)
}

// DirLoader is a PackageLoader over two directories: the artifact of key is
// Artifacts/<key> (as Artifact.Save wrote it) and its package is
// Packages/<key>. A key must be one plain path element (no separator, not
// "." or ".."): keys come from the embedder's users, and a key must never
// name a file outside the two directories.
type DirLoader struct {
	Artifacts string
	Packages  string
}

// LoadPackage reads the artifact of key; Open then checks the package
// against it.
func (d DirLoader) LoadPackage(ctx context.Context, key string) (*Artifact, string, error) {
	if err := checkKey(key); err != nil {
		return nil, "", err
	}
	a, err := ReadArtifact(filepath.Join(d.Artifacts, key))
	if err != nil {
		return nil, "", err
	}
	if a.Key != "" && a.Key != key {
		return nil, "", fmt.Errorf("%w (it was saved under key %q)", errOtherPackage, a.Key)
	}
	return a, filepath.Join(d.Packages, key), nil
}

// Save stores the artifact of an uploaded package under key, where
// LoadPackage finds it. The package directory itself must already be at
// Packages/<key>.
func (d DirLoader) Save(key string, p *Package) error {
	if err := checkKey(key); err != nil {
		return err
	}
	a := p.Artifact()
	a.Key = key
	a.seal()
	return a.Save(filepath.Join(d.Artifacts, key))
}

// checkKey refuses a key that is not one plain path element.
func checkKey(key string) error {
	if key == "" || key == "." || key == ".." || strings.ContainsAny(key, `/\`) || !filepath.IsLocal(key) {
		return fmt.Errorf("package key %q: want one plain path element", key)
	}
	return nil
}

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
	CollectAfter int64
	// StrictBudget makes an open wait, when the packages in use (and the
	// opens begun before it) leave no room in the budget, until calls end
	// and free some: the budget then holds whatever the callers do, at the
	// price of the wait. A package larger than the whole budget opens once
	// nothing else is in use. Without it the open goes ahead and the set
	// holds more than its budget until the calls end. With it, never hold
	// one Acquire while acquiring another key: with a full budget that
	// waits for itself (until its ctx ends).
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

// acquire is Acquire; it tells note how it went.
func (s *PackageSet) acquire(ctx context.Context, key string, note *acquireNote) (*Package, func(), error) {
	if err := canceled(ctx, "package "+key); err != nil {
		return nil, nil, err
	}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil, nil, setClosedError(key, "refused")
	}
	e, ok := s.entries[key]
	// The reference is taken now, before any wait: an entry someone waits
	// for is never evicted between its open and the waiter's turn.
	e = s.ref(e, key, ok)
	note.e = e
	if e.pkg != nil {
		note.hit = true
		s.stats.Hits++
		s.lru.MoveToFront(e.elem)
		s.stats.InUse++
		s.mu.Unlock()
		return e.pkg, s.releaser(e), nil
	}
	s.stats.Misses++
	if !ok {
		note.opener = true
		s.busy.Add(1)
		go s.open(ctx, e)
	}
	s.mu.Unlock()
	select {
	case <-e.done:
	case <-ctx.Done():
		s.release(e, false)
		return nil, nil, canceled(ctx, "package "+key)
	case <-s.ctx.Done():
		// Close stops the opens; its waiters learn it from the set, not
		// as a cancellation of their own.
		s.release(e, false)
		return nil, nil, setClosedError(key, "waiting for its open")
	}
	if e.err != nil {
		s.release(e, false)
		return nil, nil, e.err
	}
	s.mu.Lock()
	s.stats.InUse++
	s.mu.Unlock()
	return e.pkg, s.releaser(e), nil
}

// Lookup is Acquire for a package that is open already: it never opens
// one, and reports false when key is not open (or is still opening). A
// node that serves hot packages itself and sends the others elsewhere
// asks this; a Lookup that finds the package counts as a hit, one that
// does not counts nowhere.
func (s *PackageSet) Lookup(key string) (*Package, func(), bool) {
	s.mu.Lock()
	e, ok := s.entries[key]
	if s.closed || !ok || e.pkg == nil {
		s.mu.Unlock()
		return nil, nil, false
	}
	s.ref(e, key, true)
	s.stats.Hits++
	s.stats.InUse++
	s.lru.MoveToFront(e.elem)
	s.mu.Unlock()
	s.noteAcquire(context.Background(), key, time.Now(), acquireNote{hit: true, e: e}, nil)
	return e.pkg, s.releaser(e), true
}

// ref takes a reference to e (a new opening entry for key when !ok); s.mu
// is held.
func (s *PackageSet) ref(e *setEntry, key string, ok bool) *setEntry {
	if !ok {
		e = &setEntry{key: key, done: make(chan struct{})}
		s.entries[key] = e
	}
	e.refs++
	s.busy.Add(1)
	return e
}

// releaser is the release function Acquire returns for e.
func (s *PackageSet) releaser(e *setEntry) func() {
	var once sync.Once
	return func() { once.Do(func() { s.release(e, true) }) }
}

// release gives back one reference to e (inUse: one Acquire returned),
// closes e if it is gone and this was the last, and evicts what the budget
// no longer allows.
func (s *PackageSet) release(e *setEntry, inUse bool) {
	s.mu.Lock()
	churn := e.churn
	e.churn = 0
	e.refs--
	if inUse {
		s.stats.InUse--
	}
	var closing []*setEntry
	if e.refs == 0 && e.pkg != nil {
		s.cond.Broadcast() // an idle package: room for a waiting open
		if e.gone {
			closing = append(closing, s.forget(e))
		} else if !s.closed {
			closing = s.evictLocked(true)
		}
	}
	s.mu.Unlock()
	s.noteChurn(churn + s.closeAll(closing))
	s.busy.Done()
}

// open opens e on its own goroutine, under a context that keeps the first
// caller's values but not its end (others may wait for this open) and
// ends when the set closes.
func (s *PackageSet) open(callerCtx context.Context, e *setEntry) {
	defer s.busy.Done()
	ctx, cancel := context.WithCancel(context.WithoutCancel(callerCtx))
	stop := context.AfterFunc(s.ctx, cancel)
	defer func() { stop(); cancel() }()
	started := time.Now()
	p, churn, err := s.load(ctx, e.key)
	took := time.Since(started)
	s.mu.Lock()
	s.stats.OpenTime += took
	e.openStart, e.openTook = started, took
	var closing []*setEntry
	switch {
	case err == nil && s.closed:
		p.Close(context.Background())
		err, p = setClosedError(e.key, "opened as the set closed"), nil
	case err != nil && s.closed:
		// Close stopped the open (its context, its wait for room): the
		// set's close, not the loader's or the package's fault.
		err = setClosedError(e.key, "its open was stopped: "+err.Error())
	}
	if err != nil {
		s.stats.OpenFailures++
		if !e.gone {
			delete(s.entries, e.key) // not remembered: the next call tries again
		}
		e.err = err
	} else {
		s.stats.Opens++
		e.pkg, e.bytes = p, p.ResidentBytes()
		s.stats.Resident++
		s.stats.ResidentBytes += e.bytes
		switch {
		case e.gone && e.refs == 0: // removed while opening, and nobody waits
			closing = append(closing, s.forget(e))
		case e.gone: // removed while opening: its waiters use it, the last closes it
		default:
			e.elem = s.lru.PushFront(e)
			closing = s.evictLocked(true)
		}
	}
	s.mu.Unlock()
	// The events and the evictions this open caused come before its
	// waiters go on: when the first call of a package returns, the set is
	// back within its budget and the observer has heard of it.
	if err != nil {
		s.observe(callerCtx, PackageSetEvent{Kind: PackageSetOpenFailed, Key: e.key, Duration: took, Err: err})
	} else {
		s.observe(callerCtx, PackageSetEvent{Kind: PackageSetOpened, Key: e.key, Duration: took, Bytes: e.bytes})
	}
	churn += s.closeAll(closing)
	if err == nil {
		churn += e.bytes
	}
	s.mu.Lock()
	if err == nil && e.refs > 0 {
		e.churn += churn // for the first release (above)
		churn = 0
	}
	s.mu.Unlock()
	s.noteChurn(churn)
	close(e.done)
}

// load runs the loader and Open for key.
//
// Room is made before Open: the package's estimate (from the artifact and
// the size of module.wasm) is reserved and least recently used idle
// packages are closed for it first, so that the open's own allocations
// and the code it maps do not come on top of a full budget.
func (s *PackageSet) load(ctx context.Context, key string) (p *Package, churn int64, err error) {
	a, path, err := s.cfg.Loader.LoadPackage(ctx, key)
	if err != nil {
		return nil, 0, fmt.Errorf("package %s: %w", key, err)
	}
	est := estimateResident(a.Metered, moduleSize(path, len(a.Metered)))
	unreserve, churn, err := s.reserve(ctx, key, est)
	if err != nil {
		return nil, churn, err
	}
	defer unreserve()
	if p, err = s.rt.Open(ctx, a, path); err != nil {
		return nil, churn, fmt.Errorf("package %s: %w", key, err)
	}
	return p, churn, nil
}

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

// closeAll closes the packages of entries forgotten, and tells the
// observer of each eviction.
// closeAll closes entries and returns their bytes, for the caller to count
// towards a collection (noteChurn).
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

// ResidentBytes estimates the memory the open package holds while it
// stays open: its compiled machine code and wazero's structures for it,
// the metered module it keeps (Artifact needs it), and module.wasm when
// it keeps that too (a package from Load; Open only hashes it). wazero
// does not report the first two; the estimate is linear in the metered
// module's instructions, measured on C, Go and SIMD packages
// (docs/embedding.md, "Thousands of packages").
func (p *Package) ResidentBytes() int64 {
	return estimateResident(p.checked.metered, len(p.checked.Source.Module))
}

// estimateResident is ResidentBytes from the metered module and the size
// of module.wasm: the machine code the compile cost model predicts for the
// metered module (modcheck.CodeBytes: each instruction by its class, so a
// function of 131,072 i8x16.popcnt counts its 11 MB of code, not its 256
// KiB), wazero's structures for the module, about 2.5 bytes per metered
// byte, and a fixed part.
func estimateResident(metered []byte, module int) int64 {
	code, err := modcheck.CodeBytes(metered)
	if err != nil {
		// Not decodable: Open will refuse it; the linear estimate
		// meanwhile.
		code = residentFallbackPerByte * int64(len(metered))
	}
	return residentFixed + code + residentPerMeteredByte*int64(len(metered))/2 + int64(module)
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
