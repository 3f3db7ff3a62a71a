package runtime

import (
	"context"
	"fmt"
	"sync"
	"time"
)

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
	code := codeBytes(a.Metered)
	est := residentEstimate(code, len(a.Metered), moduleSize(path, len(a.Metered)))
	unreserve, churn, err := s.reserve(ctx, key, est)
	if err != nil {
		return nil, churn, err
	}
	defer unreserve()
	if p, err = s.rt.Open(ctx, a, path); err != nil {
		return nil, churn, fmt.Errorf("package %s: %w", key, err)
	}
	if p.Opened.Metering != MeteringRederived { // the metered module is the artifact's
		p.codeSize = code
	}
	return p, churn, nil
}
