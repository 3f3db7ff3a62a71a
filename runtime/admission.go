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

	shut chan struct{} // closed by close
	// stopped is canceled, with cause ErrClosed, by close; the context of
	// every admitted instance ends with it.
	stopped context.Context
	stop    context.CancelCauseFunc

	mu     sync.Mutex
	closed bool
	active int           // calls inside admit or holding a place
	idle   chan struct{} // closed once closed and active is 0
}

func newAdmission(n int) *admission {
	a := &admission{shut: make(chan struct{}), idle: make(chan struct{})}
	a.stopped, a.stop = context.WithCancelCause(context.Background())
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
	// release ends the admitted context and unhooks it from the gate.
	release func()
}

// admit waits for a place, for as long as ctx allows and the gate is open.
// It returns the place and the context the instance must run under: ctx,
// ended also (cause ErrClosed) when the runtime closes. The error is
// ctx.Err() when ctx ended first (the caller names the call and adds the
// cause) and ErrClosed when the runtime closed first. done must be called
// once the instance has ended.
func (a *admission) admit(ctx context.Context) (admitted, context.Context, error) {
	if err := ctx.Err(); err != nil {
		return admitted{}, nil, err
	}
	a.mu.Lock()
	if a.closed {
		a.mu.Unlock()
		return admitted{}, nil, ErrClosed
	}
	a.active++
	a.mu.Unlock()
	p := admitted{a: a}
	if a.slots != nil {
		select {
		case a.slots <- struct{}{}:
		default:
			var err error
			if p.wait, p.queued, err = a.queue(ctx); err != nil {
				a.leave()
				return admitted{}, nil, err
			}
		}
	}
	ictx, cancel := context.WithCancelCause(ctx)
	unhook := context.AfterFunc(a.stopped, func() { cancel(ErrClosed) })
	p.release = func() {
		unhook()
		cancel(nil)
	}
	return p, ictx, nil
}

// queue waits for a slot.
func (a *admission) queue(ctx context.Context) (time.Duration, int, error) {
	queued := int(a.waiting.Add(1))
	defer a.waiting.Add(-1)
	start := time.Now()
	select {
	case a.slots <- struct{}{}:
		return time.Since(start), queued, nil
	case <-ctx.Done():
		return 0, 0, ctx.Err()
	case <-a.shut:
		return 0, 0, ErrClosed
	}
}

// leave counts a call out of the gate.
func (a *admission) leave() {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.active--
	if a.closed && a.active == 0 {
		close(a.idle)
	}
}

// done gives the place back. It is a no-op on the zero admitted.
func (p admitted) done() {
	if p.a == nil {
		return
	}
	p.release()
	if p.a.slots != nil {
		<-p.a.slots
	}
	p.a.leave()
}

// close shuts the gate: no instance starts after it, calls waiting for a
// place leave with ErrClosed, and the contexts of running instances end
// with cause ErrClosed. The channel it returns is closed once every
// admitted instance has ended. A second close returns the same channel.
func (a *admission) close() <-chan struct{} {
	a.mu.Lock()
	if !a.closed {
		a.closed = true
		close(a.shut)
		if a.active == 0 {
			close(a.idle)
		}
	}
	a.mu.Unlock()
	a.stop(ErrClosed)
	return a.idle
}

// isClosed reports whether close was called.
func (a *admission) isClosed() bool {
	select {
	case <-a.shut:
		return true
	default:
		return false
	}
}
