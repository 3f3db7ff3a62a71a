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
	poll     func() (pollMode, bool) // conn.shouldPoll
	spinners *atomic.Int32           // readers polling now, in this process
	max      int32                   // at most this many may
	parked   atomic.Bool
	kicked   atomic.Uint64 // times a kick brought the reader back (tests)
}

func newSpinReader(f *os.File, poll func() (pollMode, bool), spinners *atomic.Int32) reader {
	rc, err := f.SyscallConn()
	if err != nil || !mayPoll(spinners) {
		return plainReader{f}
	}
	return &spinReader{f: f, rc: rc, poll: poll, spinners: spinners, max: maxSpinners()}
}

// mayPoll reports whether a reader counted in spinners may poll at all:
// with one CPU the peer can answer only once this process stops.
func mayPoll(spinners *atomic.Int32) bool {
	return spinners != nil && runtime.NumCPU() >= 2
}

// maxSpinners is how many readers of the process may poll at once: half
// its Ps, the other half run the calls.
func maxSpinners() int32 { return int32(max(1, runtime.GOMAXPROCS(0)/2)) }

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
			mode, yield := r.poll()
			if mode == pollWait || mode == pollPark {
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
	return readResult(n, err, rerr)
}

// readResult is what a Read returns for a read of n bytes that ended with
// err inside a RawConn.Read that ended with rerr: no bytes is the end.
func readResult(n int, err, rerr error) (int, error) {
	switch {
	case rerr != nil:
		return 0, rerr
	case err != nil:
		return 0, err
	case n == 0:
		return 0, io.EOF
	}
	return n, nil
}

// interrupt: closing a descriptor the runtime polls wakes its reader.
func (r *spinReader) interrupt() {}

// settle: a parked spinReader already waits on the runtime's poller.
func (r *spinReader) settle() {}

// kick makes a parked reader poll again.
func (r *spinReader) kick() {
	if r.parked.CompareAndSwap(true, false) {
		r.f.SetReadDeadline(time.Unix(1, 0))
	}
}

// blockingReader is the parent's reader: the channel's descriptor is in
// blocking mode and not on the runtime's poller; the reader polls it with
// non-blocking reads while conn.shouldPoll says so. Why not the poller: a
// process that polls anything else (an embedder's sockets, a worker's
// stderr) keeps a thread waiting in epoll_wait, which every frame a worker
// writes to a polled descriptor wakes, even while the reader polls and
// reads the frame at once; the worker pays that wake-up, 40–55 µs on a
// virtual machine, on its answer's path.
//
// With nothing to poll for, the reader parks on a channel (a kick brings
// it back on the kicker's CPU, as spinReader's); a channel idle for
// settleAfter is told by the pool's watch to wait in the kernel instead
// (settle), where a frame wakes it and shutdown ends the wait: an idle
// channel's reader costs nothing and still sees what comes, and a channel
// that goes quiet only between calls never makes its worker pay for a
// wake-up. (Not a timer of the reader's own: it would be armed at every
// park, and arming a timer can wake another thread to watch it.)
type blockingReader struct {
	rc       syscall.RawConn
	poll     func() (pollMode, bool) // conn.shouldPoll
	spinners *atomic.Int32           // readers polling now, in this process
	max      int32                   // at most this many may
	resume   chan struct{}           // a kick to a parked reader
	parked   atomic.Bool             // on resume: kick sends there
	deep     atomic.Bool             // the next park waits in the kernel
	closing  atomic.Bool
	waiting  atomic.Bool   // in the kernel's read (tests)
	kicked   atomic.Uint64 // times a kick brought the reader back (tests)
	parks    atomic.Uint64 // times it parked (tests)
}

func newBlockingReader(f *os.File, poll func() (pollMode, bool), spinners *atomic.Int32) reader {
	rc, err := f.SyscallConn()
	if err != nil {
		return plainReader{f}
	}
	blocking := false
	rc.Control(func(fd uintptr) { blocking = isBlocking(int(fd)) })
	if !blocking {
		// A descriptor the runtime polls: its reads never wait.
		return newSpinReader(f, poll, spinners)
	}
	if !mayPoll(spinners) {
		poll = func() (pollMode, bool) { return pollWait, false }
		spinners = new(atomic.Int32)
	}
	r := &blockingReader{rc: rc, poll: poll, spinners: spinners, max: maxSpinners(), resume: make(chan struct{}, 1)}
	// Settled from the start: the worker's hello comes before any
	// operation could kick a parked reader.
	r.deep.Store(true)
	return r
}

func (r *blockingReader) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	var n int
	var err error
	// Inside Read's callback the descriptor cannot be closed and reused.
	rerr := r.rc.Read(func(fd uintptr) bool { n, err = r.read(int(fd), p); return true })
	return readResult(n, err, rerr)
}

func (r *blockingReader) read(fd int, p []byte) (int, error) {
	spinning := false
	defer func() {
		if spinning {
			r.spinners.Add(-1)
		}
	}()
	for polls := 1; ; polls++ {
		n, err := recvNow(fd, p)
		if err != syscall.EAGAIN {
			return n, err
		}
		if r.closing.Load() {
			return 0, nil // end of file
		}
		mode, yield := r.poll()
		if (mode == pollAgain || mode == pollYielding) && !spinning {
			if r.spinners.Add(1) > r.max {
				r.spinners.Add(-1)
				mode = pollWait
			} else {
				spinning = true
			}
		}
		switch {
		case mode == pollWait || mode == pollPark:
			if spinning {
				r.spinners.Add(-1)
				spinning = false
			}
			if mode == pollPark && r.park() {
				continue
			}
			r.waiting.Store(true)
			n, err = recvWait(fd, p)
			r.waiting.Store(false)
			return n, err
		case yield || polls%64 == 0:
			// As spinReader: the goroutine handed a message runs on this
			// thread next, and the process's others get a turn.
			runtime.Gosched()
		case mode == pollYielding:
			yieldCPU()
		}
	}
}

// park waits for a kick (true: poll again), or reports false at once
// when the reader was told to settle: it then waits in the kernel.
func (r *blockingReader) park() bool {
	if r.deep.Load() {
		return false
	}
	r.parks.Add(1)
	r.parked.Store(true)
	// A kick between the reader's last look and parked going up found
	// nothing to wake, and frames never wake a parked reader: look again
	// now that a kick cannot miss it.
	if mode, _ := r.poll(); mode != pollPark || r.closing.Load() {
		if r.parked.CompareAndSwap(true, false) {
			return true
		}
		// A kick or settle took it down: it sends.
	}
	<-r.resume
	return true
}

// kick makes a parked reader poll again, and one told to settle park
// again when it next has nothing to do.
func (r *blockingReader) kick() {
	r.deep.Store(false)
	if r.parked.CompareAndSwap(true, false) {
		r.kicked.Add(1)
		r.resume <- struct{}{}
	}
}

// settle makes a parked reader wait in the kernel.
func (r *blockingReader) settle() {
	if r.parked.CompareAndSwap(true, false) {
		r.deep.Store(true)
		r.resume <- struct{}{}
	}
}

// interrupt ends a read: a parked one with a kick (it then finds
// closing), one waiting in the kernel with shutdown, which wakes it with
// end of file (close would not).
func (r *blockingReader) interrupt() {
	r.closing.Store(true)
	r.kick()
	r.rc.Control(func(fd uintptr) { syscall.Shutdown(int(fd), syscall.SHUT_RDWR) })
}

// isBlocking reports whether fd is in blocking mode.
func isBlocking(fd int) bool {
	fl, err := fcntlGetfl(fd)
	return err == nil && fl&syscall.O_NONBLOCK == 0
}
