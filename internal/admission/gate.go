package admission

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// Gate bounds the instances that run at once (Config.MaxInstances).
// A call beyond the bound waits for a running instance to end before its
// own starts: time-slicing more instances than cores would stretch every
// guest's wall-clock time, and the 1 s exit rule is wall-clock, so guests
// that answered correctly would be killed for the host's crowding.
//
// It is also the gate Runtime.Close shuts: every instance (call, probe,
// discovery, command) passes it, so once it is shut no instance starts,
// the calls waiting for a place leave with the closed error (the
// runtime's ErrClosed), and the instances
// running are stopped through their contexts (cause the closed error) rather
// than cut off by the engine's close, which a call would report as the
// module's crash.
type Gate struct {
	// closedErr is the error of an admission refused or ended by Close
	// (the runtime's ErrClosed, which this package cannot import).
	closedErr error
	slots     chan struct{} // nil: no bound
	waiting   atomic.Int64

	shut atomic.Bool // set by close

	mu      sync.Mutex
	closed  bool
	next    uint64
	cancels map[uint64]context.CancelCauseFunc // of the calls inside admit or holding a place
	idle    chan struct{}                      // closed once closed and cancels is empty
}

// New makes a gate of n places (no bound when n <= 0) whose Close ends
// what it Place with closedErr.
func New(n int, closedErr error) *Gate {
	a := &Gate{closedErr: closedErr, cancels: map[uint64]context.CancelCauseFunc{}, idle: make(chan struct{})}
	if n > 0 {
		a.slots = make(chan struct{}, n)
	}
	return a
}

// Place is a call's place among the running instances.
type Place struct {
	a *Gate
	// Wait is how long the call waited for its place; Queued is the number
	// of calls waiting when it began to wait, itself included (0: no wait).
	Wait   time.Duration
	Queued int
	id     uint64
	cancel context.CancelCauseFunc // ends the Place context
}

// End ends the admitted context, once whoever drove the instance is done
// with it (after Done: ending it sooner would read, to the driver, as the
// instance's context ending). It is a no-op on the zero Place.
func (p Place) End() {
	if p.cancel != nil {
		p.cancel(nil)
	}
}

// Admit waits for a place, for as long as ctx allows and the gate is open.
// It returns the place and the context the instance must run under: ctx,
// ended also (cause the closed error) when the runtime closes. The error is
// ctx.Err() when ctx ended first (the caller names the call and adds the
// cause) and the closed error when the runtime closed first. Done must be
// called once the instance has ended, and End once the driver is done
// with it.
func (a *Gate) Admit(ctx context.Context) (Place, context.Context, error) {
	if err := ctx.Err(); err != nil {
		return Place{}, nil, err
	}
	ictx, cancel := context.WithCancelCause(ctx)
	a.mu.Lock()
	if a.closed {
		a.mu.Unlock()
		cancel(nil)
		return Place{}, nil, a.closedErr
	}
	a.next++
	p := Place{a: a, id: a.next, cancel: cancel}
	a.cancels[p.id] = cancel
	a.mu.Unlock()
	if a.slots != nil {
		select {
		case a.slots <- struct{}{}:
		default:
			var err error
			if p.Wait, p.Queued, err = a.queue(ctx, ictx); err != nil {
				p.leave()
				p.End()
				return Place{}, nil, err
			}
		}
	}
	return p, ictx, nil
}

// queue waits for a slot; ictx is ctx, ended also by close.
func (a *Gate) queue(ctx, ictx context.Context) (time.Duration, int, error) {
	queued := int(a.waiting.Add(1))
	defer a.waiting.Add(-1)
	start := time.Now()
	select {
	case a.slots <- struct{}{}:
		return time.Since(start), queued, nil
	case <-ictx.Done():
		if err := ctx.Err(); err != nil {
			return 0, 0, err
		}
		return 0, 0, a.closedErr
	}
}

// leave counts a call out of the gate.
func (p Place) leave() {
	a := p.a
	a.mu.Lock()
	defer a.mu.Unlock()
	delete(a.cancels, p.id)
	if a.closed && len(a.cancels) == 0 {
		close(a.idle)
	}
}

// Done gives the place back, once the instance has ended; End must follow.
// It is a no-op on the zero Place.
func (p Place) Done() {
	if p.a == nil {
		return
	}
	if p.a.slots != nil {
		<-p.a.slots
	}
	p.leave()
}

// Close shuts the gate: no instance starts after it, calls waiting for a
// place leave with the closed error, and the contexts of running
// instances end with it as their cause. The channel it returns is closed once every
// Place instance has ended. A second close returns the same channel.
func (a *Gate) Close() <-chan struct{} {
	a.mu.Lock()
	defer a.mu.Unlock()
	if !a.closed {
		a.closed = true
		a.shut.Store(true)
		for _, cancel := range a.cancels {
			cancel(a.closedErr)
		}
		if len(a.cancels) == 0 {
			close(a.idle)
		}
	}
	return a.idle
}

// IsClosed reports whether Close was called.
func (a *Gate) IsClosed() bool { return a.shut.Load() }

// Waiting is how many calls wait for a place now; the runtime's tests
// watch it to know a call has joined the queue.
func (a *Gate) Waiting() int64 { return a.waiting.Load() }
