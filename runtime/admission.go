package runtime

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// admission bounds the instances that run at once (Config.MaxInstances).
// A call beyond the bound waits for a running instance to end before its
// own starts: time-slicing more instances than cores would stretch every
// guest's wall-clock time, and the 1 s exit rule is wall-clock, so guests
// that answered correctly would be killed for the host's crowding.
//
// It is also the gate Runtime.Close shuts: every instance (call, probe,
// discovery, command) passes it, so once it is shut no instance starts,
// the calls waiting for a place leave with ErrClosed, and the instances
// running are stopped through their contexts (cause ErrClosed) rather
// than cut off by the engine's close, which a call would report as the
// module's crash.
type admission struct {
	slots   chan struct{} // nil: no bound
	waiting atomic.Int64

	shut atomic.Bool // set by close

	mu      sync.Mutex
	closed  bool
	next    uint64
	cancels map[uint64]context.CancelCauseFunc // of the calls inside admit or holding a place
	idle    chan struct{}                      // closed once closed and cancels is empty
}

func newAdmission(n int) *admission {
	a := &admission{cancels: map[uint64]context.CancelCauseFunc{}, idle: make(chan struct{})}
	if n > 0 {
		a.slots = make(chan struct{}, n)
	}
	return a
}

// admitted is a call's place among the running instances.
type admitted struct {
	a *admission
	// wait is how long the call waited for its place; queued is the number
	// of calls waiting when it began to wait, itself included (0: no wait).
	wait   time.Duration
	queued int
	id     uint64
	cancel context.CancelCauseFunc // ends the admitted context
}

// end ends the admitted context, once whoever drove the instance is done
// with it (after done: ending it sooner would read, to the driver, as the
// instance's context ending). It is a no-op on the zero admitted.
func (p admitted) end() {
	if p.cancel != nil {
		p.cancel(nil)
	}
}

// admit waits for a place, for as long as ctx allows and the gate is open.
// It returns the place and the context the instance must run under: ctx,
// ended also (cause ErrClosed) when the runtime closes. The error is
// ctx.Err() when ctx ended first (the caller names the call and adds the
// cause) and ErrClosed when the runtime closed first. done must be called
// once the instance has ended, and end once the driver is done with it.
func (a *admission) admit(ctx context.Context) (admitted, context.Context, error) {
	if err := ctx.Err(); err != nil {
		return admitted{}, nil, err
	}
	ictx, cancel := context.WithCancelCause(ctx)
	a.mu.Lock()
	if a.closed {
		a.mu.Unlock()
		cancel(nil)
		return admitted{}, nil, ErrClosed
	}
	a.next++
	p := admitted{a: a, id: a.next, cancel: cancel}
	a.cancels[p.id] = cancel
	a.mu.Unlock()
	if a.slots != nil {
		select {
		case a.slots <- struct{}{}:
		default:
			var err error
			if p.wait, p.queued, err = a.queue(ctx, ictx); err != nil {
				p.leave()
				p.end()
				return admitted{}, nil, err
			}
		}
	}
	return p, ictx, nil
}

// queue waits for a slot; ictx is ctx, ended also by close.
func (a *admission) queue(ctx, ictx context.Context) (time.Duration, int, error) {
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
		return 0, 0, ErrClosed
	}
}

// leave counts a call out of the gate.
func (p admitted) leave() {
	a := p.a
	a.mu.Lock()
	defer a.mu.Unlock()
	delete(a.cancels, p.id)
	if a.closed && len(a.cancels) == 0 {
		close(a.idle)
	}
}

// done gives the place back, once the instance has ended; end must follow.
// It is a no-op on the zero admitted.
func (p admitted) done() {
	if p.a == nil {
		return
	}
	if p.a.slots != nil {
		<-p.a.slots
	}
	p.leave()
}

// close shuts the gate: no instance starts after it, calls waiting for a
// place leave with ErrClosed, and the contexts of running instances end
// with cause ErrClosed. The channel it returns is closed once every
// admitted instance has ended. A second close returns the same channel.
func (a *admission) close() <-chan struct{} {
	a.mu.Lock()
	defer a.mu.Unlock()
	if !a.closed {
		a.closed = true
		a.shut.Store(true)
		for _, cancel := range a.cancels {
			cancel(ErrClosed)
		}
		if len(a.cancels) == 0 {
			close(a.idle)
		}
	}
	return a.idle
}

// isClosed reports whether close was called.
func (a *admission) isClosed() bool { return a.shut.Load() }
