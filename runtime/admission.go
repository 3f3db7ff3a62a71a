package runtime

import (
	"context"
	"sync/atomic"
	"time"
)

// admission bounds the instances that run at once (Config.MaxInstances).
// A call beyond the bound waits for a running instance to end before its
// own starts: time-slicing more instances than cores would stretch every
// guest's wall-clock time, and the 1 s exit rule is wall-clock, so guests
// that answered correctly would be killed for the host's crowding.
type admission struct {
	slots   chan struct{} // nil: no bound
	waiting atomic.Int64
}

func newAdmission(n int) *admission {
	a := &admission{}
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
}

// admit waits for a place, for as long as ctx allows; the error is then
// ctx's. done must be called once the instance has ended.
func (a *admission) admit(ctx context.Context) (admitted, error) {
	if err := ctx.Err(); err != nil {
		return admitted{}, err
	}
	if a.slots == nil {
		return admitted{a: a}, nil
	}
	select {
	case a.slots <- struct{}{}:
		return admitted{a: a}, nil
	default:
	}
	queued := int(a.waiting.Add(1))
	defer a.waiting.Add(-1)
	start := time.Now()
	select {
	case a.slots <- struct{}{}:
		return admitted{a: a, wait: time.Since(start), queued: queued}, nil
	case <-ctx.Done():
		return admitted{}, ctx.Err()
	}
}

// done gives the place back.
func (p admitted) done() {
	if p.a != nil && p.a.slots != nil {
		<-p.a.slots
	}
}
