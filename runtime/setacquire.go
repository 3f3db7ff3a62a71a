package runtime

import (
	"context"
	"time"
)

// PackageSetAcquire is how one caller of a PackageSet got its package: at
// once (a hit), or after waiting for an open (a miss). An Observer that
// implements PackageSetAcquireObserver receives one per Acquire (and per
// Lookup that finds its package); PackageSet.Call also puts it in the
// context it calls the package with, where the Observer's Call finds it
// (AcquireFromContext) to draw the wait before the call.
type PackageSetAcquire struct {
	// Key is the embedder's key of the package.
	Key string
	// Start is when the caller began to acquire the package (for
	// PackageSet.Call: when Call began); Wait is how long it took to have
	// the package in hand, or to give up.
	Start time.Time
	Wait  time.Duration
	// Hit: the package was open already. A miss opened it or waited for
	// an open under way.
	Hit bool
	// Opened says this caller's wait ended with the open it waited for
	// (OpenStart, OpenDuration, OpenBytes, Opener are then set); false on
	// a hit, and when the caller gave up or the open failed (OpenErr).
	Opened bool
	// OpenStart and OpenDuration are the open's, which may have begun
	// before this caller came (a shared open); OpenBytes is the estimated
	// resident bytes it brought in; Opener says this caller started it.
	OpenStart    time.Time
	OpenDuration time.Duration
	OpenBytes    int64
	Opener       bool
	// Err is why the caller got no package (the open failed, its context
	// ended, the set closed); nil otherwise.
	Err error
}

// PackageSetAcquireObserver is an Observer that also wants every acquire
// of a PackageSet, hits included (the counters of hits and misses). The set
// checks for it with a type assertion, like PackageSetObserver.
type PackageSetAcquireObserver interface {
	PackageSetAcquired(ctx context.Context, a PackageSetAcquire)
}

type acquireKey struct{}

// AcquireFromContext returns how the call whose context this is got its
// package through PackageSet.Call; false for a call made otherwise.
// Observer.Call reads it to account for the wait before the call.
func AcquireFromContext(ctx context.Context) (PackageSetAcquire, bool) {
	a, ok := ctx.Value(acquireKey{}).(*PackageSetAcquire)
	if !ok || a.Start.IsZero() {
		return PackageSetAcquire{}, false
	}
	return *a, true
}

// withAcquire returns ctx carrying a record that Acquire fills in.
func withAcquire(ctx context.Context, key string) (context.Context, *PackageSetAcquire) {
	a := &PackageSetAcquire{Key: key}
	return context.WithValue(ctx, acquireKey{}, a), a
}

// Acquire returns the package of key, opened if needed, for the caller to
// use (its tools, Call, Probe) until it calls release, exactly once. The
// set does not close it before then; the caller must not Close it.
func (s *PackageSet) Acquire(ctx context.Context, key string) (*Package, func(), error) {
	started := time.Now()
	var note acquireNote
	p, release, err := s.acquire(ctx, key, &note)
	if note.e != nil { // it reached the set: a hit or a miss
		s.noteAcquire(ctx, key, started, note, err)
	}
	return p, release, err
}

// acquireNote is what acquire tells Acquire of how it went: hit or miss,
// whether this caller started the open, and the entry it got.
type acquireNote struct {
	hit, opener bool
	e           *setEntry
}

// noteAcquire completes the caller's acquire record (the one in ctx, when
// PackageSet.Call made it) and tells the observer.
func (s *PackageSet) noteAcquire(ctx context.Context, key string, started time.Time, n acquireNote, err error) {
	a, _ := ctx.Value(acquireKey{}).(*PackageSetAcquire)
	if a == nil {
		if s.acquireObs == nil {
			return
		}
		a = &PackageSetAcquire{Key: key}
	}
	a.Start, a.Wait, a.Hit, a.Err = started, time.Since(started), n.hit, err
	if !n.hit && err == nil {
		// The open ended before the caller's wait did (e.done): its
		// fields are set.
		a.Opened, a.OpenStart, a.OpenDuration, a.OpenBytes, a.Opener = true, n.e.openStart, n.e.openTook, n.e.bytes, n.opener
	}
	if s.acquireObs != nil {
		s.acquireObs.PackageSetAcquired(ctx, *a)
	}
}
