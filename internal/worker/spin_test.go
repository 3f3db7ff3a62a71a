package worker

import (
	"bytes"
	"context"
	"io"
	"runtime"
	"sync"
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
		want   bool
	}{
		{"parent waits for an answer", true, 1, 0, true},
		{"parent waits for an answer, long", true, 1, spinBusy - 50*us, true},
		{"parent waits past spinBusy", true, 1, spinBusy + 50*us, false},
		{"parent with nothing open", true, 0, 0, false},
		{"parent with several open", true, 2, 0, false},
		{"worker waits for a request", false, 0, 0, true},
		{"worker waits for a request, long", false, 0, spinWindow - 50*us, true},
		{"worker waits past spinWindow", false, 0, spinWindow + 50*us, false},
		{"worker runs an operation", false, 1, 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newConn(nopRWC{}, tt.parent, maxMessageLimit, nil)
			c.ops.Store(tt.ops)
			c.active.Store(time.Now().Add(-tt.idle).UnixNano())
			if again, _ := c.shouldPoll(); again != tt.want {
				t.Fatalf("shouldPoll = %v, want %v", again, tt.want)
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

// The parent's reader polls only while an operation is open; with none
// it parks on the runtime's poller (an idle channel costs no CPU), and an
// operation that starts then makes it poll again.
func TestReaderParksWhenIdle(t *testing.T) {
	if runtime.NumCPU() < 2 {
		t.Skip("the reader never polls on one CPU")
	}
	p := startPool(t, testConfig(""))
	s := p.Slot(0)
	st := open(t, s, "echo")
	st.Send([]byte("x"))
	recvString(t, st)
	st.Close()
	waitOps(t, s, 0)
	sr, ok := currentProc(s).conn.src.(*spinReader)
	if !ok {
		t.Fatalf("the parent's reader is a %T", currentProc(s).conn.src)
	}
	deadline := time.Now().Add(10 * time.Second)
	for !sr.parked.Load() || p.spinners.Load() != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("idle reader: parked %v, spinners %d", sr.parked.Load(), p.spinners.Load())
		}
		time.Sleep(time.Millisecond)
	}
	// An operation after the pause: the kick brings the reader back.
	kicked := sr.kicked.Load()
	st = open(t, s, "echo")
	defer st.Close()
	for sr.kicked.Load() == kicked {
		if time.Now().After(deadline) {
			t.Fatal("the parked reader was not kicked when an operation opened")
		}
		time.Sleep(time.Millisecond)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	go func() { <-ctx.Done(); st.Close() }()
	st.Send([]byte("y"))
	if got := recvString(t, st); got != "y" {
		t.Fatalf("echo %q", got)
	}
}

// currentProc is s's ready process.
func currentProc(s *Slot) *proc {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cur
}
