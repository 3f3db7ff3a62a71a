package worker

import (
	"bufio"
	"context"
	"errors"
	"io"
	"os"
	"sync"
	"sync/atomic"
	"time"
)

// ErrStreamClosed is returned by Send and Recv on a stream that was Closed
// here, abandoned by the parent (worker side), or whose worker handler has
// returned (Send, parent side).
var ErrStreamClosed = errors.New("worker: stream closed")

// ErrSendClosed is returned by Send after CloseSend.
var ErrSendClosed = errors.New("worker: send after CloseSend")

// ErrTooLarge is returned by Send for a message larger than the peer accepts.
var ErrTooLarge = errors.New("worker: message larger than the peer accepts")

// conn is one end of the channel: the framing, the streams and their flow
// control. The parent and the worker run the same code; role decides who
// creates streams.
type conn struct {
	rwc    io.ReadWriteCloser
	src    reader
	r      *bufio.Reader
	parent bool
	// maxMessage: largest message accepted from the peer.
	maxMessage int64
	// peerMax: largest message the peer accepts (the worker learns it from SETTINGS).
	peerMax atomic.Int64
	// active: when a frame last went either way (UnixNano), and ops: the
	// streams open that are operations (not Background); together they
	// decide whether the reader polls or waits (shouldPoll).
	active atomic.Int64
	ops    atomic.Int32
	// delivered: the reader woke a stream's receiver (shouldPoll).
	delivered atomic.Bool

	wmu   sync.Mutex
	wwait atomic.Int32
	w     *bufio.Writer
	werr  error

	mu      sync.Mutex
	streams map[uint32]*Stream
	lastID  uint32 // parent: last allocated; worker: highest seen
	err     error  // set once the connection is finished: what streams report
	closed  chan struct{}

	// control frames the reader wants sent: it must never block on a write
	// (both readers blocked writing to full sockets is a deadlock).
	ctlMu     sync.Mutex
	ctlCredit map[uint32]uint32
	ctlResets []uint32
	ctlWake   chan struct{}
	closeOnce sync.Once

	// worker side
	handle func(ctx context.Context, header []byte, s *Stream)
	jobs   chan job // to an idle handler goroutine
	// ending: handlers that have sent their last frames (SendLast) and
	// are not back in handlerLoop yet.
	ending   atomic.Int32
	baseCtx  context.Context
	handlers sync.WaitGroup
}

// reader is what the conn reads frames from: the channel, polled or not.
type reader interface {
	io.Reader
	// kick makes a parked reader poll again: an operation has opened.
	kick()
	// interrupt makes a read waiting in the kernel return: the channel
	// is closing (closing a descriptor does not wake its readers).
	interrupt()
	// settle makes a parked reader of an idle channel wait for the next
	// frame where it comes without a kick.
	settle()
}

// plainReader parks whenever there is nothing to read.
type plainReader struct{ io.Reader }

func (plainReader) kick()      {}
func (plainReader) interrupt() {}
func (plainReader) settle()    {}

// newConn makes one end of a channel; spinners, when not nil, counts the
// readers of this process that are polling (spinReader, blockingReader),
// and lets the reader poll.
func newConn(rwc io.ReadWriteCloser, parent bool, maxMessage int64, spinners *atomic.Int32) *conn {
	c := &conn{
		rwc:        rwc,
		w:          bufio.NewWriterSize(rwc, 64<<10),
		parent:     parent,
		maxMessage: maxMessage,
		streams:    make(map[uint32]*Stream),
		closed:     make(chan struct{}),
		ctlCredit:  make(map[uint32]uint32),
		ctlWake:    make(chan struct{}, 1),
		jobs:       make(chan job),
	}
	c.peerMax.Store(maxMessageLimit)
	c.src = plainReader{rwc}
	if f, ok := rwc.(*os.File); ok {
		if parent {
			c.src = newBlockingReader(f, c.shouldPoll, spinners)
		} else {
			c.src = newSpinReader(f, c.shouldPoll, spinners)
		}
	}
	c.r = bufio.NewReaderSize(c.src, 64<<10)
	return c
}

// writeFrame writes one frame; the buffer is flushed unless another writer
// is already waiting for the lock (it will flush), which batches small
// frames under load and costs nothing when alone.
func (c *conn) writeFrame(h frameHeader, payload []byte) error {
	c.lockWriter()
	defer c.wmu.Unlock()
	return c.writeLocked(h, payload)
}

func (c *conn) lockWriter() {
	c.wwait.Add(1)
	c.wmu.Lock()
	c.wwait.Add(-1)
}

func (c *conn) writeLocked(h frameHeader, payload []byte) error {
	if c.werr != nil {
		return c.werr
	}
	var hb [headerSize]byte
	h.length = uint32(len(payload))
	putHeader(hb[:], h)
	_, err := c.w.Write(hb[:])
	if err == nil && len(payload) > 0 {
		_, err = c.w.Write(payload)
	}
	if err != nil {
		c.werr = err
		return err
	}
	if c.wwait.Load() == 0 {
		return c.flushLocked()
	}
	return nil
}

// flushLocked writes what the buffer holds (c.wmu held) and marks the
// channel active.
func (c *conn) flushLocked() error {
	if err := c.w.Flush(); err != nil {
		c.werr = err
		return err
	}
	c.active.Store(time.Now().UnixNano())
	return nil
}

// ctlLoop sends the control frames the reader queued.
func (c *conn) ctlLoop() {
	for {
		select {
		case <-c.closed:
			return
		case <-c.ctlWake:
		}
		c.ctlMu.Lock()
		credit := c.ctlCredit
		resets := c.ctlResets
		c.ctlCredit = make(map[uint32]uint32)
		c.ctlResets = nil
		c.ctlMu.Unlock()
		for id, n := range credit {
			if c.writeFrame(frameHeader{typ: frameWindow, id: id, aux: n}, nil) != nil {
				return
			}
		}
		for _, id := range resets {
			if c.writeFrame(frameHeader{typ: frameReset, id: id}, nil) != nil {
				return
			}
		}
	}
}

func (c *conn) queueCredit(id uint32, n int64) {
	c.ctlMu.Lock()
	c.ctlCredit[id] += uint32(n)
	c.ctlMu.Unlock()
	c.wakeCtl()
}

func (c *conn) queueReset(id uint32) {
	c.ctlMu.Lock()
	c.ctlResets = append(c.ctlResets, id)
	c.ctlMu.Unlock()
	c.wakeCtl()
}

func (c *conn) wakeCtl() {
	select {
	case c.ctlWake <- struct{}{}:
	default:
	}
}

// The readers' polling (spinReader, blockingReader): a worker's for
// spinWindow after the channel's last frame while no operation is open;
// the parent's for spinBusy while its one open operation waits, then
// spinLong more offering its CPU to any other thread between polls. Their
// cost and why they are these sizes: docs/RATIONALE.md, "Why does the
// channel's reader poll".
const (
	spinWindow = 200 * time.Microsecond
	spinBusy   = 250 * time.Microsecond
	spinLong   = 20 * time.Millisecond
	// settleAfter: a channel idle this long has its parked reader wait
	// in the kernel (Pool.watch).
	settleAfter = 20 * time.Millisecond
)

// AnswerPolled is how long after a channel's last frame the parent's
// reader polls for the answers of its open operations before it waits in
// the kernel, where an answer's frame has to wake it.
const AnswerPolled = spinBusy + spinLong

// pollMode is what a reader that found nothing to read does next.
type pollMode int

const (
	// pollWait waits for the next frame (parked on the runtime's poller,
	// or in the kernel).
	pollWait pollMode = iota
	// pollAgain polls again at once.
	pollAgain
	// pollYielding polls again after offering its CPU to any other
	// thread that is ready to run (sched_yield).
	pollYielding
	// pollPark parks until a kick, or waits for the next frame once told
	// to settle (the parent's reader with no operation open).
	pollPark
)

// shouldPoll says what the reader, finding nothing to read, does next.
// Each side polls while the other one works, so that a call keeps one
// thread of each process busy and no frame has to wake a sleeping thread:
// on a virtual machine a wake-up is an interrupt to a halted virtual CPU,
// 50–100 µs paid by the side that writes.
//
// The parent polls while it waits for the answer of its one open
// operation: spinBusy, then spinLong more yielding its CPU between polls,
// so that a worker's threads never wait for it. With several operations
// open it polls yielding from the start: the worker's threads are busy
// with them and must have the CPU whenever they want it, and an answer
// that has to wake the parent's reader costs the worker's CPUs the
// wake-up. With no operation open it parks (blockingReader) and the next
// operation kicks it. A worker polls while it waits for the next request (no
// operation open), for spinWindow after its last frame; while its
// operations run the CPU is their handlers'.
//
// yield says the reader handed a message (or an end) to a goroutine that
// waits for it since it last polled: that goroutine should run now.
func (c *conn) shouldPoll() (mode pollMode, yield bool) {
	idle := time.Duration(time.Now().UnixNano() - c.active.Load())
	yield = c.delivered.Swap(false)
	ops := c.ops.Load()
	switch {
	case c.parent && ops == 0:
		return pollPark, yield
	case c.parent && ops == 1 && idle < spinBusy:
		return pollAgain, yield
	case c.parent && idle < spinBusy+spinLong:
		return pollYielding, yield
	case !c.parent && ops == 0 && idle < spinWindow:
		return pollAgain, yield
	}
	return pollWait, yield
}

// register adds a new stream (c.mu held). The parent's reader polls for
// its answer from now on.
func (c *conn) register(s *Stream) {
	c.streams[s.id] = s
	c.ops.Add(1)
	if c.parent {
		// Activity first: the kicked reader must not find the window
		// closed and park again before the request goes out.
		c.active.Store(time.Now().UnixNano())
		c.src.kick()
	}
}

// opDone counts an operation out (c.mu held). A worker's reader polls for
// the next request once none is left.
func (c *conn) opDone() {
	if c.ops.Add(-1) == 0 && !c.parent {
		c.active.Store(time.Now().UnixNano())
		c.src.kick()
	}
}

// settleIfIdle makes the reader of a channel idle for settleAfter wait in
// the kernel.
func (c *conn) settleIfIdle(now time.Time) {
	if c.ops.Load() == 0 && now.UnixNano()-c.active.Load() >= int64(settleAfter) {
		c.src.settle()
	}
}

// fail finishes the connection: every stream still registered reports err.
func (c *conn) fail(err error) {
	c.mu.Lock()
	if c.err == nil {
		c.err = err
	}
	streams := c.streams
	c.streams = make(map[uint32]*Stream)
	c.ops.Store(0)
	c.mu.Unlock()
	for _, s := range streams {
		s.terminate(err)
	}
	c.close()
}

func (c *conn) close() {
	c.closeOnce.Do(func() {
		close(c.closed)
		c.src.interrupt()
		c.rwc.Close()
	})
}

func (c *conn) remove(s *Stream) {
	c.mu.Lock()
	if c.streams[s.id] == s {
		delete(c.streams, s.id)
		if !s.background {
			c.opDone()
		}
	}
	c.mu.Unlock()
}

// readLoop reads frames until the channel fails. first, when set, is told
// of the hello frame, which must come first (parent side).
func (c *conn) readLoop(first func([]byte)) error {
	var hb [headerSize]byte
	for {
		if _, err := io.ReadFull(c.r, hb[:]); err != nil {
			return err
		}
		c.active.Store(time.Now().UnixNano())
		h, err := parseHeader(hb[:])
		if err != nil {
			return err
		}
		if first != nil {
			if h.typ != frameHello {
				return protoErr("first frame is type %d, not hello", h.typ)
			}
			hello := make([]byte, h.length)
			if _, err := io.ReadFull(c.r, hello); err != nil {
				return err
			}
			first(hello)
			first = nil
			continue
		}
		if err := c.handleFrame(h); err != nil {
			return err
		}
	}
}

func (c *conn) handleFrame(h frameHeader) error {
	switch h.typ {
	case frameHello:
		if c.parent {
			return protoErr("second hello")
		}
		return protoErr("hello sent to a worker")
	case frameSettings:
		if c.parent {
			return protoErr("settings sent by a worker")
		}
		c.peerMax.Store(int64(h.aux))
		return nil
	}
	c.mu.Lock()
	s := c.streams[h.id]
	if s == nil {
		if h.id <= c.lastID {
			// A stream this side already let go of: the peer could not know yet.
			c.mu.Unlock()
			_, err := c.r.Discard(int(h.length))
			return err
		}
		if c.parent {
			c.mu.Unlock()
			return protoErr("frame for stream %d that was never opened", h.id)
		}
		if h.typ != frameData || h.flags&flagFirst == 0 {
			c.mu.Unlock()
			return protoErr("stream %d does not start with a message", h.id)
		}
		c.lastID = h.id
		s = newStream(c, h.id)
		s.ctx, s.cancel = context.WithCancel(c.baseCtx)
		c.register(s)
	}
	c.mu.Unlock()
	switch h.typ {
	case frameData:
		return c.readData(s, h)
	case frameWindow:
		s.mu.Lock()
		if s.credit+int64(h.aux) > window {
			s.mu.Unlock()
			return protoErr("stream %d: credit beyond the window", h.id)
		}
		s.credit += int64(h.aux)
		s.mu.Unlock()
		signal(s.cwake)
	case frameEOF:
		s.mu.Lock()
		if s.eof || s.partial != nil {
			s.mu.Unlock()
			return protoErr("stream %d: eof twice or inside a message", h.id)
		}
		s.eof = true
		s.mu.Unlock()
		c.deliver(s)
	case frameReset:
		// A reset may cut a message short (Close during a Send elsewhere).
		c.remove(s)
		s.mu.Lock()
		s.partial = nil
		s.done = true
		if c.parent {
			s.eof = true // the handler returned: nothing more will come
		}
		s.mu.Unlock()
		if s.cancel != nil {
			s.cancel()
		}
		c.deliver(s)
		signal(s.cwake)
	}
	return nil
}

func (c *conn) readData(s *Stream, h frameHeader) error {
	n := int64(h.length)
	cost := n
	if h.flags&flagFirst != 0 {
		cost += msgCost
	}
	s.mu.Lock()
	bad := ""
	switch {
	case s.eof:
		bad = "data after eof"
	case cost > s.allowed:
		bad = "data beyond the credit granted"
	case h.flags&flagFirst != 0 && s.partial != nil:
		bad = "message started inside a message"
	case h.flags&flagFirst == 0 && s.partial == nil:
		bad = "continuation outside a message"
	case h.flags&flagFirst != 0 && int64(h.aux) > c.maxMessage:
		bad = "message larger than the limit"
	case h.flags&flagFirst == 0 && int64(len(s.partial))+n > s.want:
		bad = "message longer than announced"
	}
	if bad != "" {
		s.mu.Unlock()
		return protoErr("stream %d: %s", h.id, bad)
	}
	s.allowed -= cost
	if h.flags&flagFirst != 0 {
		s.want = int64(h.aux)
		// Never trust an announced size with more memory than credit bounds.
		s.partial = make([]byte, 0, min(s.want, window))
	}
	s.mu.Unlock()

	// Only this goroutine touches partial between FIRST and completion.
	buf := s.partial
	l := len(buf)
	if int64(cap(buf)-l) < n {
		nb := make([]byte, l, min(s.want, max(int64(2*cap(buf)), int64(l)+n)))
		copy(nb, buf)
		buf = nb
	}
	buf = buf[:l+int(n)]
	if _, err := io.ReadFull(c.r, buf[l:]); err != nil {
		return err
	}

	s.mu.Lock()
	if int64(len(buf)) == s.want {
		s.partial = nil
		s.queue = append(s.queue, buf)
		s.qbytes += int64(len(buf))
	} else {
		s.partial = buf
	}
	// Credit comes back at once while the reader keeps up (nothing queued
	// before this chunk's message), else when Recv drains the queue: a
	// receiver that does not read holds at most a window plus one message.
	s.owed += cost
	var give int64
	if len(s.queue) <= 1 && (s.partial == nil || len(s.queue) == 0) && s.owed >= creditBatch {
		give = s.owed
		s.owed = 0
		s.allowed += give
	}
	closed := s.closed
	s.mu.Unlock()
	if closed {
		// Closed locally after the reader found it: drop what arrived.
		s.mu.Lock()
		s.queue, s.qbytes = nil, 0
		s.mu.Unlock()
		return nil
	}
	if give > 0 {
		c.queueCredit(s.id, give)
	}
	c.deliver(s)
	if !c.parent && !s.started && s.partial == nil {
		c.startHandler(s)
	}
	return nil
}

// startHandler runs the worker's handler once the header message is
// complete, on a goroutine that ran an earlier one if one is idle: its
// stack has grown to what a call needs (wazero's calls are deep), and a
// fresh goroutine would grow it again, copying it several times, on every
// call.
func (c *conn) startHandler(s *Stream) {
	s.mu.Lock()
	header := s.queue[0]
	s.queue = s.queue[1:]
	s.qbytes -= int64(len(header))
	s.started = true
	s.mu.Unlock()
	s.consumed()
	c.handlers.Add(1)
	j := job{s: s, header: header}
	select {
	case c.jobs <- j:
		return
	default:
	}
	if c.ending.Load() > 0 {
		// A handler has sent its last frames (SendLast) and returns at
		// once: the peer's next request can come before it is back in
		// handlerLoop's select, and it takes this job there.
		select {
		case c.jobs <- j:
			return
		case <-c.closed:
		}
	}
	go c.handlerLoop(j)
}

// job is one stream for a handler goroutine.
type job struct {
	s      *Stream
	header []byte
}

// handlerLoop runs j, then every job handed to it while it waits idle,
// until the channel ends.
func (c *conn) handlerLoop(j job) {
	for {
		c.runHandler(j)
		if j.s.endedEarly() {
			c.ending.Add(-1)
		}
		select {
		case j = <-c.jobs:
		case <-c.closed:
			return
		}
	}
}

func (c *conn) runHandler(j job) {
	defer c.handlers.Done()
	defer j.s.finish()
	c.handle(j.s.ctx, j.header, j.s)
}

// deliver wakes s's receiver from the reader.
func (c *conn) deliver(s *Stream) {
	c.delivered.Store(true)
	signal(s.rwake)
}

func signal(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

// Stream is one bidirectional exchange of messages between the parent and
// a worker. One goroutine may Send while another Recvs; Send calls are
// serialized, and only one goroutine should Recv at a time.
type Stream struct {
	c  *conn
	id uint32

	mu      sync.Mutex
	queue   [][]byte
	qbytes  int64
	partial []byte // reader goroutine only, between its checks
	want    int64
	owed    int64 // credit consumed and not yet given back
	allowed int64 // credit granted to the peer and not yet used
	credit  int64 // our credit to send
	eof     bool  // peer's CloseSend
	done    bool  // peer's reset (worker: abandoned; parent: handler returned)
	closed  bool  // our Close
	err     error // the connection ended
	rwake   chan struct{}
	cwake   chan struct{}

	smu     sync.Mutex
	sentEOF bool

	background bool // c.mu: not an operation (SetBackground)

	// parent side
	proc        *proc
	deadlineSeq uint64
	// worker side
	sentReset bool // s.mu: the handler's end went out (SendLast or finish)
	lastSent  bool // s.mu: by SendLast, which counted it in conn.ending
	ctx       context.Context
	cancel    context.CancelFunc
	started   bool
}

func newStream(c *conn, id uint32) *Stream {
	return &Stream{
		c:       c,
		id:      id,
		allowed: window,
		credit:  window,
		rwake:   make(chan struct{}, 1),
		cwake:   make(chan struct{}, 1),
	}
}

// Recv returns the next message. It returns io.EOF after the peer's
// CloseSend (parent side: also once the worker's handler returned),
// ErrStreamClosed after Close (or, worker side, when the parent abandoned
// the stream), and on the parent side an *ExitError once the worker process
// died; messages that arrived before any of these are returned first.
func (s *Stream) Recv() ([]byte, error) {
	for {
		s.mu.Lock()
		if s.closed {
			s.mu.Unlock()
			return nil, ErrStreamClosed
		}
		if len(s.queue) > 0 {
			m := s.queue[0]
			s.queue[0] = nil
			s.queue = s.queue[1:]
			s.qbytes -= int64(len(m))
			if len(s.queue) == 0 {
				s.queue = nil
			}
			s.mu.Unlock()
			s.consumed()
			return m, nil
		}
		switch {
		case s.err != nil:
			err := s.err
			s.mu.Unlock()
			return nil, err
		case s.eof:
			s.mu.Unlock()
			return nil, io.EOF
		case s.done:
			s.mu.Unlock()
			return nil, ErrStreamClosed
		}
		s.mu.Unlock()
		<-s.rwake
	}
}

// consumed gives credit back once the queue is drained.
func (s *Stream) consumed() {
	s.mu.Lock()
	var give int64
	if len(s.queue) == 0 && s.owed >= creditBatch && !s.done && !s.closed && s.err == nil {
		give = s.owed
		s.owed = 0
		s.allowed += give
	}
	s.mu.Unlock()
	if give > 0 {
		s.c.queueCredit(s.id, give)
	}
}

// Send sends one message, in frames of at most 256 KiB, waiting for credit
// when the peer has a window's worth unread.
func (s *Stream) Send(msg []byte) error {
	if int64(len(msg)) > s.c.peerMax.Load() {
		return ErrTooLarge
	}
	s.smu.Lock()
	defer s.smu.Unlock()
	if s.sentEOF {
		return ErrSendClosed
	}
	return s.sendFrom(msg, 0, true)
}

func (s *Stream) sendFrom(msg []byte, off int, first bool) error {
	for first || off < len(msg) {
		n, err := s.takeCredit(len(msg)-off, first)
		if err != nil {
			return err
		}
		h := frameHeader{typ: frameData, id: s.id}
		if first {
			h.flags = flagFirst
			h.aux = uint32(len(msg))
		}
		if err := s.c.writeFrame(h, msg[off:off+n]); err != nil {
			return s.writeErr(err)
		}
		first = false
		off += n
	}
	return nil
}

func (s *Stream) takeCredit(rem int, first bool) (int, error) {
	need := int64(0)
	if first {
		need = msgCost
	}
	for {
		s.mu.Lock()
		switch {
		case s.err != nil:
			err := s.err
			s.mu.Unlock()
			return 0, err
		case s.closed || s.done:
			s.mu.Unlock()
			return 0, ErrStreamClosed
		case rem == 0 && s.credit >= need:
			s.credit -= need
			s.mu.Unlock()
			return 0, nil
		case rem > 0 && s.credit > need:
			n := int(min(int64(rem), s.credit-need, maxFrame))
			s.credit -= int64(n) + need
			s.mu.Unlock()
			return n, nil
		}
		s.mu.Unlock()
		<-s.cwake
	}
}

// writeErr turns a failed write into the error the stream will report:
// the process's ExitError when the parent learns of it in time.
func (s *Stream) writeErr(err error) error {
	if s.proc != nil {
		select {
		case <-s.proc.done:
			return s.proc.exitErr
		case <-time.After(s.proc.slot.pool.grace):
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.err != nil {
		return s.err
	}
	return err
}

// SendLast (worker side) sends msgs, the CloseSend and the end of the
// handler's stream together, in one write to the channel. The handler
// must return right after, without blocking: the peer may send its next
// request at once, and the channel's reader waits for this handler's
// goroutine to take it. Parent side it is Sends and CloseSend.
func (s *Stream) SendLast(msgs ...[]byte) error {
	c := s.c
	c.wwait.Add(1) // no frame flushes before the last one
	defer func() {
		if c.wwait.Add(-1) == 0 {
			c.lockWriter()
			if c.werr == nil && c.w.Buffered() > 0 {
				c.flushLocked()
			}
			c.wmu.Unlock()
		}
	}()
	for _, m := range msgs {
		if err := s.Send(m); err != nil {
			return err
		}
	}
	if err := s.CloseSend(); err != nil || c.parent {
		return err
	}
	s.mu.Lock()
	send := !s.done && s.err == nil && !s.sentReset
	s.sentReset = true
	if send && s.started {
		s.lastSent = true
		c.ending.Add(1)
	}
	s.mu.Unlock()
	if send {
		return c.writeFrame(frameHeader{typ: frameReset, id: s.id}, nil)
	}
	return nil
}

// endedEarly reports whether the handler's SendLast counted it in
// conn.ending.
func (s *Stream) endedEarly() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.lastSent
}

// CloseSend tells the peer no more messages follow (its Recv returns io.EOF).
func (s *Stream) CloseSend() error {
	s.smu.Lock()
	defer s.smu.Unlock()
	if s.sentEOF {
		return nil
	}
	s.mu.Lock()
	err := s.err
	if err == nil && (s.closed || s.done) {
		err = ErrStreamClosed
	}
	s.mu.Unlock()
	if err != nil {
		return err
	}
	s.sentEOF = true
	if err := s.c.writeFrame(frameHeader{typ: frameEOF, id: s.id}, nil); err != nil {
		return s.writeErr(err)
	}
	return nil
}

// Close abandons the stream and frees it: on the parent side the worker's
// handler context is canceled. It never blocks and may be called more
// than once; every stream should be Closed when its caller is done with it.
func (s *Stream) Close() {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return
	}
	s.closed = true
	live := !s.done && s.err == nil
	s.queue, s.qbytes = nil, 0
	s.mu.Unlock()
	s.c.remove(s)
	if live && s.c.parent {
		s.c.queueReset(s.id)
	}
	if s.cancel != nil {
		s.cancel()
	}
	signal(s.rwake)
	signal(s.cwake)
}

// SetBackground marks a stream that stays open between operations (an
// events stream): the channel's reader does not poll for it
// (shouldPoll).
func (s *Stream) SetBackground() {
	c := s.c
	c.mu.Lock()
	if !s.background {
		s.background = true
		if c.streams[s.id] == s {
			c.opDone()
		}
	}
	c.mu.Unlock()
}

// SetDeadline (parent side) arranges for the worker process to be killed
// if the stream is still open at t plus the pool's Grace; Recv then
// returns an *ExitError with Reason ExitDeadline. The zero time clears it.
// On the worker side it does nothing.
func (s *Stream) SetDeadline(t time.Time) {
	if s.proc == nil {
		return
	}
	s.mu.Lock()
	s.deadlineSeq++
	seq := s.deadlineSeq
	s.mu.Unlock()
	if !t.IsZero() {
		s.proc.slot.pool.addDeadline(t, s, seq)
	}
}

// open reports whether the stream still holds its worker to a deadline.
func (s *Stream) live(seq uint64) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return seq == s.deadlineSeq && !s.closed && !s.done && s.err == nil
}

// terminate ends the stream with the connection's error.
func (s *Stream) terminate(err error) {
	s.mu.Lock()
	if s.err == nil {
		s.err = err
	}
	s.mu.Unlock()
	if s.cancel != nil {
		s.cancel()
	}
	signal(s.rwake)
	signal(s.cwake)
}

// finish runs after the worker's handler returned: EOF if the handler did
// not send it, then a reset so the parent knows nothing more comes.
func (s *Stream) finish() {
	s.CloseSend()
	s.mu.Lock()
	send := !s.done && s.err == nil && !s.sentReset
	s.sentReset = true
	s.closed = true
	s.queue = nil
	s.mu.Unlock()
	s.c.remove(s)
	if send {
		s.c.writeFrame(frameHeader{typ: frameReset, id: s.id}, nil)
	}
	s.cancel()
}
