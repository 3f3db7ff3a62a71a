package fuel

import (
	"context"
	"time"
)

// Stop is the meter's record of why refuel ended an instance whose context
// was done, or whose deadline had passed though the context's timer had
// not run yet. The host classifies the end from it rather than from the
// exit code (a guest can pass the same code to proc_exit) or from the
// context as it is later (its timer may still not have run).
type Stop struct {
	// Err is context.Canceled or context.DeadlineExceeded.
	Err error
	// Cause is context.Cause of the context when the instance was
	// stopped; nil when the deadline had passed before the context's
	// timer ran.
	Cause error
	// Deadline is the context's deadline, the earliest of its chain (zero
	// without one); when Cause is nil it is the deadline that passed.
	Deadline time.Time
}

// Stopped returns why refuel ended the instance for its context, and
// false when it did not (the instance ran to its end, ran out of fuel, or
// was ended by something else).
func (m *Meter) Stopped() (Stop, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.stop == nil {
		return Stop{}, false
	}
	return *m.stop, true
}

// recordStop records that refuel ends the instance because ctx ended
// (err, from ended).
func (m *Meter) recordStop(ctx context.Context, err error) {
	s := &Stop{Err: err, Cause: context.Cause(ctx)}
	s.Deadline, _ = ctx.Deadline()
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.stop == nil {
		m.stop = s
	}
}

// Ended is why ctx is done, as refuel judges it: ctx.Err(), or
// context.DeadlineExceeded once its deadline has passed though its timer
// has not run yet; nil while ctx is live. The host judges a caller's
// context the same way, so that an end the meter made is never read as
// the module's because a timer ran late.
func Ended(ctx context.Context) error { return ended(ctx) }
