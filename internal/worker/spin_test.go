package worker

import (
	"bytes"
	"context"
	"io"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

func TestShouldPoll(t *testing.T) {
	const us = time.Microsecond
	tests := []struct {
		name   string
		parent bool
		ops    int32
		idle   time.Duration
		want   pollMode
	}{
		{"parent waits for an answer", true, 1, 0, pollAgain},
		{"parent waits for an answer, long", true, 1, spinBusy - 50*us, pollAgain},
		{"parent waits past spinBusy", true, 1, spinBusy + 50*us, pollYielding},
		{"parent waits almost spinLong more", true, 1, spinBusy + spinLong - 50*us, pollYielding},
		{"parent waits past spinLong more", true, 1, spinBusy + spinLong + 50*us, pollWait},
		{"parent with nothing open", true, 0, 0, pollPark},
		{"parent with nothing open, long", true, 0, spinBusy + spinLong + 50*us, pollPark},
		{"parent with several open", true, 2, 0, pollYielding},
		{"parent with several open, almost spinLong", true, 3, spinBusy + spinLong - 50*us, pollYielding},
		{"parent with several open, past spinLong", true, 2, spinBusy + spinLong + 50*us, pollWait},
		{"worker waits for a request", false, 0, 0, pollAgain},
		{"worker waits for a request, long", false, 0, spinWindow - 50*us, pollAgain},
		{"worker waits past spinWindow", false, 0, spinWindow + 50*us, pollWait},
		{"worker runs an operation", false, 1, 0, pollWait},
		{"worker runs an operation, long", false, 1, spinBusy + 50*us, pollWait},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newConn(nopRWC{}, tt.parent, maxMessageLimit, nil)
			c.ops.Store(tt.ops)
			c.active.Store(time.Now().Add(-tt.idle).UnixNano())
			if mode, _ := c.shouldPoll(); mode != tt.want {
				t.Fatalf("shouldPoll = %v, want %v", mode, tt.want)
			}
		})
	}
	c := newConn(nopRWC{}, true, maxMessageLimit, nil)
	c.deliver(newStream(c, 1))
	if _, yield := c.shouldPoll(); !yield {
		t.Fatal("no yield after a delivery")
	}
	if _, yield := c.shouldPoll(); yield {
		t.Fatal("yield twice for one delivery")
	}
}

type nopRWC struct{}

func (nopRWC) Read([]byte) (int, error)    { return 0, io.EOF }
func (nopRWC) Write(p []byte) (int, error) { return len(p), nil }
func (nopRWC) Close() error                { return nil }

// countingRWC records each Write.
type countingRWC struct {
	nopRWC
	mu     sync.Mutex
	writes [][]byte
}

func (c *countingRWC) Write(p []byte) (int, error) {
	c.mu.Lock()
	c.writes = append(c.writes, bytes.Clone(p))
	c.mu.Unlock()
	return len(p), nil
}

func TestSendLastIsOneWrite(t *testing.T) {
	rw := &countingRWC{}
	c := newConn(rw, false, maxMessageLimit, nil)
	s := newStream(c, 7)
	s.ctx, s.cancel = context.WithCancel(context.Background())
	c.mu.Lock()
	c.register(s)
	c.mu.Unlock()
	if err := s.SendLast([]byte("one"), []byte("two")); err != nil {
		t.Fatal(err)
	}
	s.finish() // the handler returned: nothing more may go out
	if len(rw.writes) != 1 {
		t.Fatalf("%d writes, want 1", len(rw.writes))
	}
	var got []frameHeader
	b := rw.writes[0]
	for len(b) > 0 {
		h, err := parseHeader(b[:headerSize])
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, h)
		b = b[headerSize+int(h.length):]
	}
	want := []frameHeader{
		{length: 3, typ: frameData, flags: flagFirst, id: 7, aux: 3},
		{length: 3, typ: frameData, flags: flagFirst, id: 7, aux: 3},
		{typ: frameEOF, id: 7},
		{typ: frameReset, id: 7},
	}
	if len(got) != len(want) {
		t.Fatalf("frames %+v, want %+v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("frame %d: %+v, want %+v", i, got[i], want[i])
		}
	}
}

func TestSendLastEndsTheStream(t *testing.T) {
	p := startPool(t, testConfig(""))
	st := open(t, p.Slot(0), "last")
	defer st.Close()
	for _, want := range []string{"one", "two", "three"} {
		if got := recvString(t, st); got != want {
			t.Fatalf("got %q, want %q", got, want)
		}
	}
	if _, err := st.Recv(); err != io.EOF {
		t.Fatalf("after the last message: %v, want io.EOF", err)
	}
}

// A worker runs one handler after another on one goroutine, whose stack
// has grown to what its calls need; handlers that overlap get their own.
func TestHandlerGoroutinesAreReused(t *testing.T) {
	p := startPool(t, testConfig(""))
	s := p.Slot(0)
	ids := map[string]bool{}
	for range 5 {
		st := open(t, s, "goid")
		ids[recvString(t, st)] = true
		if _, err := st.Recv(); err != io.EOF {
			t.Fatalf("after the id: %v", err)
		}
		st.Close()
		waitOps(t, s, 0)
	}
	if len(ids) != 1 {
		t.Fatalf("five handlers one after another ran on %d goroutines, want 1: %v", len(ids), ids)
	}
	a, b := open(t, s, "goid:wait"), open(t, s, "goid:wait")
	defer a.Close()
	defer b.Close()
	if ida, idb := recvString(t, a), recvString(t, b); ida == idb {
		t.Fatalf("two handlers at once ran on one goroutine (%s)", ida)
	}
}

// waitOps waits until s's channel counts n operations open; the worker's
// end of a stream reaches the parent a moment after its last message.
func waitOps(t *testing.T, s *Slot, n int32) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for currentProc(s).conn.ops.Load() != n {
		if time.Now().After(deadline) {
			t.Fatalf("ops %d, want %d", currentProc(s).conn.ops.Load(), n)
		}
		time.Sleep(time.Millisecond)
	}
}

// The parent's reader polls only while an answer is due. With nothing
// open it parks (no spinner), an operation that starts kicks it back, and
// once parked for parkedFor it waits in the kernel, where the next
// operation's frames still reach it.
func TestReaderParksWhenIdle(t *testing.T) {
	if runtime.NumCPU() < 2 {
		t.Skip("the reader never polls on one CPU")
	}
	p := startPool(t, testConfig(""))
	s := p.Slot(0)
	echo := func(round int) {
		t.Helper()
		st := open(t, s, "echo")
		defer st.Close()
		st.Send([]byte("x"))
		if got := recvString(t, st); got != "x" {
			t.Fatalf("round %d: echo %q", round, got)
		}
	}
	echo(0)
	waitOps(t, s, 0)
	br, ok := currentProc(s).conn.src.(*blockingReader)
	if !ok {
		t.Fatalf("the parent's reader is a %T", currentProc(s).conn.src)
	}
	deadline := time.Now().Add(10 * time.Second)
	for !br.parked.Load() || p.spinners.Load() != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("idle reader: parked %v, spinners %d", br.parked.Load(), p.spinners.Load())
		}
		time.Sleep(50 * time.Microsecond)
	}
	kicked := br.kicked.Load()
	echo(1)
	if br.kicked.Load() == kicked {
		t.Fatal("the parked reader was not kicked when an operation opened")
	}
	waitOps(t, s, 0)
	for !br.waiting.Load() || p.spinners.Load() != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("idle reader: waiting in the kernel %v, spinners %d", br.waiting.Load(), p.spinners.Load())
		}
		time.Sleep(time.Millisecond)
	}
	echo(2)
}

// Closing a channel ends its parent's read, parked or waiting in the
// kernel: the reader goroutine returns even though nothing more comes.
func TestWaitingReaderEndsOnClose(t *testing.T) {
	for _, settled := range []bool{false, true} {
		t.Run(map[bool]string{false: "parked", true: "in the kernel"}[settled], func(t *testing.T) {
			c, peer := socketConn(t)
			defer peer.Close()
			br, ok := c.src.(*blockingReader)
			if !ok {
				t.Fatalf("the parent's reader is a %T", c.src)
			}
			done := make(chan error, 1)
			go func() { done <- c.readLoop(nil) }()
			// A new channel's reader is settled (the hello comes unasked
			// for); a kick makes it park instead.
			deadline := time.Now().Add(10 * time.Second)
			for !br.waiting.Load() {
				if time.Now().After(deadline) {
					t.Fatal("a new channel's reader does not wait in the kernel")
				}
				time.Sleep(time.Millisecond)
			}
			br.kick()
			peer.Write([]byte{0}) // ends the wait: half a frame header
			for !br.parked.Load() {
				if time.Now().After(deadline) {
					t.Fatal("the reader never parked")
				}
				time.Sleep(time.Millisecond)
			}
			if settled {
				c.settleIfIdle(time.Now().Add(settleAfter))
				for !br.waiting.Load() {
					if time.Now().After(deadline) {
						t.Fatal("the settled reader never waited in the kernel")
					}
					time.Sleep(time.Millisecond)
				}
			}
			c.close()
			select {
			case err := <-done:
				if err == nil {
					t.Fatal("readLoop returned nil")
				}
			case <-time.After(10 * time.Second):
				t.Fatal("the reader still waits after close")
			}
		})
	}
}

// A reader about to park when an operation opens (its kick came before
// the reader was parked, so it woke nobody) does not park: frames never
// wake a parked reader, and the operation's answer would wait for the
// next kick.
func TestParkSeesAnOperationThatOpenedFirst(t *testing.T) {
	var mode atomic.Int32
	mode.Store(int32(pollAgain)) // the operation is open already
	r := &blockingReader{poll: func() (pollMode, bool) { return pollMode(mode.Load()), false }, resume: make(chan struct{}, 1)}
	done := make(chan bool, 1)
	go func() { done <- r.park() }()
	select {
	case again := <-done:
		if !again {
			t.Fatal("park returned false: the reader would wait in the kernel")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the reader parked with an operation open and no kick to come")
	}
	if r.parked.Load() {
		t.Fatal("the reader is still marked parked")
	}
	// With nothing open it parks until a kick.
	mode.Store(int32(pollPark))
	go func() { done <- r.park() }()
	for !r.parked.Load() {
		time.Sleep(time.Millisecond)
	}
	r.kick()
	if again := <-done; !again {
		t.Fatal("a kicked reader does not poll again")
	}
}

// With several operations open the parent's reader polls (yielding), or
// waits for frames where they reach it (in the kernel), never parked:
// nothing would kick it.
func TestReaderNeverParksWithOperationsOpen(t *testing.T) {
	p := startPool(t, testConfig(""))
	s := p.Slot(0)
	a, b := open(t, s, "echo"), open(t, s, "echo")
	defer a.Close()
	defer b.Close()
	waitOps(t, s, 2)
	br, ok := currentProc(s).conn.src.(*blockingReader)
	if !ok {
		t.Fatalf("the parent's reader is a %T", currentProc(s).conn.src)
	}
	parks := br.parks.Load()
	for i, st := range []*Stream{a, b, a, b} {
		st.Send([]byte{'a' + byte(i)})
		if got := recvString(t, st); got != string(rune('a'+i)) {
			t.Fatalf("echo %d: %q", i, got)
		}
	}
	if n := br.parks.Load() - parks; n != 0 {
		t.Fatalf("the reader parked %d times with two operations open", n)
	}
	// Quiet past its polling: it waits in the kernel, and sees the next
	// frame there.
	for deadline := time.Now().Add(10 * time.Second); !br.waiting.Load() && br.parks.Load() == parks; {
		if time.Now().After(deadline) {
			t.Fatal("the reader neither waits in the kernel nor parks 10 s after the last frame")
		}
		time.Sleep(time.Millisecond)
	}
	if n := br.parks.Load() - parks; n != 0 {
		t.Fatalf("the reader parked %d times with two operations open", n)
	}
	a.Send([]byte("z"))
	if got := recvString(t, a); got != "z" {
		t.Fatalf("echo after the reader waited: %q", got)
	}
}

// currentProc is s's ready process.
func currentProc(s *Slot) *proc {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cur
}

// socketConn is a parent's conn on one end of a socketpair in blocking
// mode, as startProcess makes it; the other end is returned.
func socketConn(t *testing.T) (*conn, *os.File) {
	t.Helper()
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM, 0)
	if err != nil {
		t.Fatal(err)
	}
	var spinners atomic.Int32
	c := newConn(os.NewFile(uintptr(fds[0]), "parent"), true, maxMessageLimit, &spinners)
	return c, os.NewFile(uintptr(fds[1]), "peer")
}

// A parent's descriptor that the runtime polls (non-blocking) is read by
// a spinReader: a blocking reader's waits in the kernel would not wait on
// it, and would spin.
func TestNonBlockingParentEndIsPolled(t *testing.T) {
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Close(fds[1])
	if err := syscall.SetNonblock(fds[0], true); err != nil {
		t.Fatal(err)
	}
	f := os.NewFile(uintptr(fds[0]), "parent")
	defer f.Close()
	var spinners atomic.Int32
	c := newConn(f, true, maxMessageLimit, &spinners)
	if _, ok := c.src.(*spinReader); !ok && runtime.NumCPU() >= 2 {
		t.Fatalf("a non-blocking parent end is read by a %T", c.src)
	}
	if _, ok := c.src.(*blockingReader); ok {
		t.Fatal("a non-blocking parent end is read by a blockingReader")
	}
}
