package wasi

import (
	"context"
	"testing"
	"time"

	"github.com/tetratelabs/wazero/sys"
)

const (
	subs   = 1024 // subscriptions are written here
	events = 4096 // events are read back here
	nevPtr = 8000
)

func putClock(m memory, i int, userdata uint64, id uint32, timeout uint64, flags uint16) {
	b, _ := m.slice(subs+uint32(i)*sizeSubscription, sizeSubscription)
	clear(b)
	le64(b, userdata)
	b[8] = eventtypeClock
	le32(b[16:], id)
	le64(b[24:], timeout)
	le16(b[40:], flags)
}

func putFd(m memory, i int, userdata uint64, tag uint8, fd uint32) {
	b, _ := m.slice(subs+uint32(i)*sizeSubscription, sizeSubscription)
	clear(b)
	le64(b, userdata)
	b[8] = tag
	le32(b[16:], fd)
}

type event struct {
	userdata uint64
	errno    uint16
	typ      uint8
	nbytes   uint64
	flags    uint16
}

func readEvents(t *testing.T, m memory) []event {
	n, _ := m.u32(nevPtr)
	var evs []event
	for i := uint32(0); i < n; i++ {
		b, _ := m.slice(events+i*sizeEvent, sizeEvent)
		evs = append(evs, event{rd64(b), rd16(b[8:]), b[10], rd64(b[16:]), rd16(b[24:])})
	}
	return evs
}

func TestPollOneoff(t *testing.T) {
	tests := []struct {
		name    string
		setup   func(h *hostBench, m memory) int // returns the subscription count
		ctx     func() (context.Context, context.CancelFunc)
		want    []event
		minWait time.Duration
		exit    uint32 // expected exit code when the instance must end; 0 = must not end
	}{
		{name: "relative clock", setup: func(h *hostBench, m memory) int {
			putClock(m, 0, 7, clockMonotonic, uint64(30*time.Millisecond), 0)
			return 1
		}, want: []event{{userdata: 7, typ: eventtypeClock}}, minWait: 30 * time.Millisecond},
		{name: "absolute realtime clock in the past", setup: func(h *hostBench, m memory) int {
			putClock(m, 0, 8, clockRealtime, 1, subclockAbstime)
			return 1
		}, want: []event{{userdata: 8, typ: eventtypeClock}}},
		{name: "stdin wakes before the clock", setup: func(h *hostBench, m memory) int {
			putClock(m, 0, 1, clockMonotonic, uint64(20*time.Second), 0)
			putFd(m, 1, 2, eventtypeFdRead, 0)
			time.AfterFunc(20*time.Millisecond, func() { h.in.cfg.Stdin.Write([]byte("abc")) })
			return 2
		}, want: []event{{userdata: 2, typ: eventtypeFdRead, nbytes: 3}}},
		{name: "closed stdin is a hangup", setup: func(h *hostBench, m memory) int {
			h.in.cfg.Stdin.CloseWrite()
			putFd(m, 0, 3, eventtypeFdRead, 0)
			return 1
		}, want: []event{{userdata: 3, typ: eventtypeFdRead, flags: eventFdReadwriteHangup}}},
		{name: "stdout is always writable, unknown fds and unknown clocks are errors", setup: func(h *hostBench, m memory) int {
			putFd(m, 0, 4, eventtypeFdWrite, 1)
			putFd(m, 1, 5, eventtypeFdRead, 77)
			putClock(m, 2, 6, 9, 0, 0)
			putFd(m, 3, 9, eventtypeFdRead, 0) // empty open stdin: not ready
			return 4
		}, want: []event{{userdata: 4, typ: eventtypeFdWrite}, {userdata: 5, typ: eventtypeFdRead, errno: uint16(errnoBadf)},
			{userdata: 6, typ: eventtypeClock, errno: uint16(errnoInval)}}},
		{name: "deadline ends a wait on stdin", setup: func(h *hostBench, m memory) int {
			putFd(m, 0, 1, eventtypeFdRead, 0)
			return 1
		}, ctx: func() (context.Context, context.CancelFunc) {
			return context.WithTimeout(context.Background(), 50*time.Millisecond)
		}, exit: sys.ExitCodeDeadlineExceeded},
		{name: "cancel ends a wait on a long clock", setup: func(h *hostBench, m memory) int {
			putClock(m, 0, 1, clockMonotonic, uint64(time.Hour), 0)
			return 1
		}, ctx: func() (context.Context, context.CancelFunc) {
			ctx, cancel := context.WithCancel(context.Background())
			time.AfterFunc(50*time.Millisecond, cancel)
			return ctx, cancel
		}, exit: sys.ExitCodeContextCanceled},
		{name: "Close ends a wait", setup: func(h *hostBench, m memory) int {
			putFd(m, 0, 1, eventtypeFdRead, 0)
			time.AfterFunc(50*time.Millisecond, func() { h.in.Close() })
			return 1
		}, exit: exitCodeAborted},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHostBench(t)
			m := memOf(h.mod)
			n := tt.setup(h, m)
			ctx, cancel := context.WithCancel(context.Background())
			if tt.ctx != nil {
				ctx, cancel = tt.ctx()
			}
			defer cancel()
			start := time.Now()
			errno, exited := h.call(ctx, pollOneoff, subs, events, uint64(n), nevPtr)
			if tt.exit != 0 {
				if !exited || h.lastExit != tt.exit {
					t.Fatalf("exited %v with %#x, want %#x", exited, h.lastExit, tt.exit)
				}
				return
			}
			if exited || errno != errnoSuccess {
				t.Fatalf("errno %d, exited %v", errno, exited)
			}
			if waited := time.Since(start); waited < tt.minWait || waited > 10*time.Second {
				t.Errorf("waited %v, want at least %v", waited, tt.minWait)
			}
			got := readEvents(t, m)
			if len(got) != len(tt.want) {
				t.Fatalf("events %+v, want %+v", got, tt.want)
			}
			for i := range got {
				if got[i] != tt.want[i] {
					t.Errorf("event %d: %+v, want %+v", i, got[i], tt.want[i])
				}
			}
		})
	}
}

func TestStdinReadModes(t *testing.T) {
	h := newHostBench(t)
	m := memOf(h.mod)
	// iovec at 0 -> 64 bytes at 100; nread at 50.
	m.putU32(0, 100)
	m.putU32(4, 64)
	if errno, _ := h.call(h.ctx, fdFdstatSetFlags, 0, uint64(fdflagNonblock)); errno != errnoSuccess {
		t.Fatal(errno)
	}
	if errno, _ := h.call(h.ctx, fdRead, 0, 0, 1, 50); errno != errnoAgain {
		t.Fatalf("non-blocking read of empty stdin: %d, want EAGAIN", errno)
	}
	h.in.cfg.Stdin.Write([]byte("line\n"))
	if errno, _ := h.call(h.ctx, fdRead, 0, 0, 1, 50); errno != errnoSuccess {
		t.Fatal(errno)
	}
	if n, _ := m.u32(50); n != 5 {
		t.Fatalf("read %d bytes", n)
	}
	h.call(h.ctx, fdFdstatSetFlags, 0, 0)
	time.AfterFunc(20*time.Millisecond, func() { h.in.cfg.Stdin.CloseWrite() })
	if errno, exited := h.call(h.ctx, fdRead, 0, 0, 1, 50); errno != errnoSuccess || exited {
		t.Fatalf("blocking read until EOF: %d %v", errno, exited)
	}
	if n, _ := m.u32(50); n != 0 {
		t.Fatalf("read %d bytes at EOF", n)
	}
	// fd_fdstat_get reports the flags back, as Go's os.NewFile requires.
	h.call(h.ctx, fdFdstatSetFlags, 0, uint64(fdflagNonblock))
	h.call(h.ctx, fdFdstatGet, 0, 200)
	b, _ := m.slice(200, sizeFdstat)
	if b[0] != filetypeCharacterDevice || rd16(b[2:]) != fdflagNonblock || rd64(b[8:])&(rightFdSeek|rightFdTell) != 0 {
		t.Fatalf("fdstat of stdin: type %d flags %d rights %#x", b[0], rd16(b[2:]), rd64(b[8:]))
	}
}

// TestPollDoesNotLoseAWakeUp makes stdin change in the window between
// poll_oneoff's readiness check and its wait (the hook runs exactly
// there). The wait must see that change: a guest polling stdin without a
// clock would otherwise sleep until its deadline. The context's timeout
// only turns such a regression into a failure instead of a hang.
func TestPollDoesNotLoseAWakeUp(t *testing.T) {
	tests := []struct {
		name   string
		change func(s *Stdin)
		want   event
	}{
		{"write", func(s *Stdin) { s.Write([]byte("x")) }, event{userdata: 2, typ: eventtypeFdRead, nbytes: 1}},
		{"close", func(s *Stdin) { s.CloseWrite() }, event{userdata: 2, typ: eventtypeFdRead, flags: eventFdReadwriteHangup}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHostBench(t)
			m := memOf(h.mod)
			putFd(m, 0, 2, eventtypeFdRead, 0)
			waits := 0
			h.in.beforePollWait = func() {
				if waits == 0 {
					tt.change(h.in.cfg.Stdin)
				}
				waits++
			}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			errno, exited := h.call(ctx, pollOneoff, subs, events, 1, nevPtr)
			if exited {
				t.Fatalf("poll_oneoff never saw the %s and ended with %#x", tt.name, h.lastExit)
			}
			if errno != errnoSuccess {
				t.Fatalf("errno %d", errno)
			}
			if got := readEvents(t, m); len(got) != 1 || got[0] != tt.want {
				t.Fatalf("events %+v, want [%+v]", got, tt.want)
			}
			if waits != 1 {
				t.Fatalf("%d waits, want 1", waits)
			}
		})
	}
}
