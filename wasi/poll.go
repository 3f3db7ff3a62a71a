package wasi

import (
	"context"
	"time"

	"github.com/tetratelabs/wazero/api"
)

// maxSubscriptions is the most subscriptions one poll_oneoff takes; more
// is EINVAL, as poll(2) answers for more descriptors than a process may
// open. A guest has at most Config.MaxFiles (DefaultMaxFiles, 1024) descriptors,
// each worth a read and a write subscription, and a handful of clocks:
// 4096 is twice what that needs, and it bounds the host's copy of the
// subscriptions and events of one call to 4096*(40+32) bytes (under 300
// KiB), whatever count the guest passes. A bound from guest memory would
// not do: 256 MiB holds 5.6M subscriptions.
const maxSubscriptions = 4096

type subscription struct {
	userdata uint64
	tag      uint8
	fd       uint32
	deadline time.Time // clocks
}

// pollOneoff waits until at least one subscription is ready: a clock has
// passed, stdin has bytes or reached end of file, or any other descriptor
// (always ready: files, stdout, stderr). It ends the instance when ctx is
// done or the Instance is closed while waiting.
func pollOneoff(ctx context.Context, in *Instance, mod api.Module, p []uint64) errnum {
	m := memOf(mod)
	inPtr, outPtr, n, neventsPtr := uint32(p[0]), uint32(p[1]), uint32(p[2]), uint32(p[3])
	if n == 0 || n > maxSubscriptions {
		return errnoInval
	}
	raw, ok := m.slice(inPtr, n*sizeSubscription)
	if !ok || !m.ok(outPtr, n*sizeEvent) || !m.ok(neventsPtr, 4) {
		return errnoFault
	}
	subs := make([]subscription, n)
	now := time.Now()
	for i := range subs {
		r := raw[i*sizeSubscription:]
		s := &subs[i]
		s.userdata = rd64(r)
		s.tag = r[8]
		switch s.tag {
		case eventtypeClock:
			id, timeout, flags := rd32(r[16:]), rd64(r[24:]), rd16(r[40:])
			s.deadline = in.clockDeadline(now, id, timeout, flags)
		case eventtypeFdRead, eventtypeFdWrite:
			s.fd = rd32(r[16:])
		default:
			return errnoInval
		}
	}
	// Copy the events out only at the end: in and out may overlap.
	for {
		// One snapshot of stdin serves both the readiness check and the
		// wait: its wake channel is closed by any write or close after
		// the snapshot, so a change between check and wait is never lost.
		stdin := in.stdin().snapshot()
		events := in.readyEvents(subs, time.Now(), stdin)
		if len(events) > 0 {
			out, _ := m.slice(outPtr, n*sizeEvent)
			for i, ev := range events {
				copy(out[i*sizeEvent:(i+1)*sizeEvent], ev[:])
			}
			m.putU32(neventsPtr, uint32(len(events)))
			return errnoSuccess
		}
		if in.beforePollWait != nil {
			in.beforePollWait()
		}
		in.waitPoll(ctx, mod, subs, stdin.wake)
	}
}

// clockDeadline turns a clock subscription into a wall-clock instant; an
// unknown clock gets the zero time and is reported with EINVAL.
func (in *Instance) clockDeadline(now time.Time, id uint32, timeout uint64, flags uint16) time.Time {
	if _, ok := in.now(id); !ok {
		return time.Time{}
	}
	if flags&subclockAbstime == 0 {
		if timeout > uint64(1<<62) {
			timeout = 1 << 62
		}
		return now.Add(time.Duration(timeout))
	}
	cur, _ := in.now(id)
	if timeout <= cur {
		return now
	}
	d := timeout - cur
	if d > uint64(1<<62) {
		d = 1 << 62
	}
	return now.Add(time.Duration(d))
}

// readyEvents builds the events of every subscription ready at now, stdin
// as it was in the snapshot stdin.
func (in *Instance) readyEvents(subs []subscription, now time.Time, stdin stdinState) [][sizeEvent]byte {
	var events [][sizeEvent]byte
	add := func(s *subscription, errno errnum, nbytes uint64, flags uint16) {
		var ev [sizeEvent]byte
		le64(ev[0:], s.userdata)
		le16(ev[8:], uint16(errno))
		ev[10] = s.tag
		le64(ev[16:], nbytes)
		le16(ev[24:], flags)
		events = append(events, ev)
	}
	for i := range subs {
		s := &subs[i]
		if s.tag == eventtypeClock {
			if s.deadline.IsZero() {
				add(s, errnoInval, 0, 0)
			} else if !now.Before(s.deadline) {
				add(s, errnoSuccess, 0, 0)
			}
			continue
		}
		e, errno := in.get(s.fd)
		if errno != errnoSuccess {
			add(s, errno, 0, 0)
			continue
		}
		switch {
		case e.kind == kindStdin && s.tag == eventtypeFdRead:
			if stdin.eof {
				add(s, errnoSuccess, 0, eventFdReadwriteHangup)
			} else if stdin.buffered > 0 {
				add(s, errnoSuccess, uint64(stdin.buffered), 0)
			}
		case e.kind == kindStdin, (e.kind == kindStdout || e.kind == kindStderr) && s.tag == eventtypeFdRead:
			add(s, errnoBadf, 0, 0)
		case e.base&rightPollFdReadwrite == 0 && e.kind != kindDir:
			add(s, errnoNotcapable, 0, 0)
		default:
			var nbytes uint64
			if e.kind == kindFile && s.tag == eventtypeFdRead {
				if st, err := e.file.Stat(); err == nil {
					if pos, err := e.file.Seek(0, 1); err == nil && st.Size() > pos {
						nbytes = uint64(st.Size() - pos)
					}
				}
			}
			add(s, errnoSuccess, nbytes, 0)
		}
	}
	return events
}

// waitPoll blocks until the earliest clock, stdinWake (a change of stdin
// since the snapshot readyEvents saw), ctx done or the Instance closed (the
// last two end the instance).
func (in *Instance) waitPoll(ctx context.Context, mod api.Module, subs []subscription, stdinWake <-chan struct{}) {
	var earliest time.Time
	stdin := false
	for i := range subs {
		s := &subs[i]
		if s.tag == eventtypeClock {
			if earliest.IsZero() || s.deadline.Before(earliest) {
				earliest = s.deadline
			}
		} else {
			stdin = true
		}
	}
	var wake <-chan struct{}
	if stdin {
		wake = stdinWake
	}
	var timer <-chan time.Time
	if !earliest.IsZero() {
		t := time.NewTimer(time.Until(earliest))
		defer t.Stop()
		timer = t.C
	}
	in.wait(ctx, mod, wake, timer)
}

// wait blocks on wake or timer; ctx done or Close end the instance.
func (in *Instance) wait(ctx context.Context, mod api.Module, wake <-chan struct{}, timer <-chan time.Time) {
	select {
	case <-wake:
	case <-timer:
	case <-ctx.Done():
		exitForContext(ctx, mod)
	case <-in.closed:
		exit(ctx, mod, exitCodeAborted)
	}
}
