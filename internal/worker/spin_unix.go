//go:build unix

package worker

import (
	"errors"
	"io"
	"os"
	"runtime"
	"sync/atomic"
	"syscall"
	"time"
)

// spinReader reads the channel's descriptor. When its conn expects a
// frame soon (conn.shouldPoll) it polls the descriptor with non-blocking
// reads instead of parking on the runtime's poller, at most max readers
// of the process at a time (half its Ps: the other half run the calls).
// Why: docs/RATIONALE.md, "Why does the channel's reader poll".
//
// A parked reader can be made to poll again (kick): the conn does so when
// it starts expecting a frame, from a goroutine that is running, which
// readies the reader on its own CPU instead of waking a halted one.
type spinReader struct {
	f        *os.File
	rc       syscall.RawConn
	poll     func() (again, yield bool) // conn.shouldPoll
	spinners *atomic.Int32              // readers polling now, in this process
	max      int32                      // at most this many may
	parked   atomic.Bool
	kicked   atomic.Uint64 // times a kick brought the reader back (tests)
}

func newSpinReader(f *os.File, poll func() (again, yield bool), spinners *atomic.Int32) reader {
	rc, err := f.SyscallConn()
	if err != nil || spinners == nil || runtime.NumCPU() < 2 {
		// With one CPU the peer can answer only once this process stops.
		return plainReader{f}
	}
	return &spinReader{f: f, rc: rc, poll: poll, spinners: spinners, max: int32(max(1, runtime.GOMAXPROCS(0)/2))}
}

func (r *spinReader) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	for {
		n, err := r.read(p)
		if errors.Is(err, os.ErrDeadlineExceeded) {
			// A kick: poll again.
			r.kicked.Add(1)
			r.f.SetReadDeadline(time.Time{})
			continue
		}
		return n, err
	}
}

func (r *spinReader) read(p []byte) (int, error) {
	var n int
	var err error
	spinning := false
	polls := 0
	rerr := r.rc.Read(func(fd uintptr) bool {
		r.parked.Store(false)
		for {
			n, err = syscall.Read(int(fd), p)
			if err == syscall.EINTR {
				continue
			}
			if err != syscall.EAGAIN {
				break
			}
			again, yield := r.poll()
			if !again {
				break
			}
			if !spinning {
				if r.spinners.Add(1) > r.max {
					r.spinners.Add(-1)
					break
				}
				spinning = true
			}
			// A Gosched puts the reader on the global run queue and wakes
			// another thread to look at it, which takes a CPU from the
			// peer and moves goroutines between CPUs: only when the reader
			// handed a goroutine a message (it runs on this thread next)
			// and now and then for the process's other goroutines.
			if polls++; yield || polls%64 == 0 {
				runtime.Gosched()
			}
		}
		if spinning {
			r.spinners.Add(-1)
			spinning = false
		}
		if err == syscall.EAGAIN {
			r.parked.Store(true)
			return false // park on the poller until readable or kicked
		}
		return true
	})
	r.parked.Store(false)
	if rerr != nil {
		return 0, rerr
	}
	if err != nil {
		return 0, err
	}
	if n == 0 {
		return 0, io.EOF
	}
	return n, nil
}

// kick makes a parked reader poll again.
func (r *spinReader) kick() {
	if r.parked.CompareAndSwap(true, false) {
		r.f.SetReadDeadline(time.Unix(1, 0))
	}
}
