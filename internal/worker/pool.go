package worker

import (
	"container/heap"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"
)

// ChannelEnv is the environment variable the parent sets in a worker: the number of the
// descriptor (always "3") holding the worker's end of the channel.
const ChannelEnv = "SUBAKO_WORKER_CHANNEL"

// Exit reasons, ExitError.Reason.
const (
	ExitDeadline = "deadline" // a stream outlived its deadline plus Grace: killed
	ExitMemory   = "memory"   // past Config.MemoryMax: killed
	ExitCrashed  = "crashed"  // died on its own, signals included
	ExitProtocol = "protocol" // sent something malformed: killed
	ExitClosed   = "closed"   // the pool closed
)

// ErrClosed is returned by Open on a closed pool; an *ExitError with Reason
// ExitClosed matches it under errors.Is.
var ErrClosed = errors.New("worker: pool closed")

// Config configures a Pool.
type Config struct {
	Path       string        // executable to start
	Args       []string      // its arguments (argv[1:])
	Env        []string      // environment (nil: the parent's), ChannelEnv is added
	Count      int           // number of slots; 0 = runtime.NumCPU()
	Grace      time.Duration // past a stream's deadline + Grace the process is SIGKILLed; 0 = 1s
	MemoryMax  int64         // RSS ceiling per worker in bytes; 0 = none. Past it: SIGKILL
	MaxMessage int64         // largest message accepted FROM the worker; 0 = 256 MiB
	Log        *zap.Logger
	OnExit     func(e *ExitError) // told of every worker process that ends (not on Pool.Close's own ends)

	// StartTimeout bounds a replacement's wait for its hello; 0 = 30s.
	// (Start's own processes are bounded by Start's ctx as well.)
	StartTimeout time.Duration
}

// ExitError tells how a worker process ended; the streams open on it
// report it from Recv (and Send).
type ExitError struct {
	Slot       int
	Generation uint64
	Pid        int
	Reason     string // ExitDeadline, ExitMemory, ExitCrashed, ExitProtocol or ExitClosed
	Status     string // e.g. "signal: killed", "exit status 2"
}

// Error names the slot, process, reason and status.
func (e *ExitError) Error() string {
	return fmt.Sprintf("worker: slot %d process %d (generation %d) ended: %s (%s)",
		e.Slot, e.Pid, e.Generation, e.Reason, e.Status)
}

// Is makes an ExitError of a closed pool match ErrClosed.
func (e *ExitError) Is(target error) bool { return target == ErrClosed && e.Reason == ExitClosed }

// StartError is a worker process that could not be started or did not
// send its hello; Stderr is the tail of what it wrote there.
type StartError struct {
	Slot   int
	Err    error
	Stderr string
}

// Error includes the stderr tail.
func (e *StartError) Error() string {
	s := fmt.Sprintf("worker: slot %d: start: %v", e.Slot, e.Err)
	if e.Stderr != "" {
		s += "; stderr: " + e.Stderr
	}
	return s
}

// Unwrap gives the cause: an *ExitError when the process died before its hello.
func (e *StartError) Unwrap() error { return e.Err }

// errGone: the process died before a stream could be opened on it.
var errGone = errors.New("worker: process gone")

var errUnsupported = errors.New("worker: worker processes are supported on unix only")

// Pool is a fixed set of slots, each holding one worker process that is
// replaced whenever it dies.
type Pool struct {
	cfg   Config
	log   *zap.Logger
	grace time.Duration
	env   []string
	slots []*Slot
	// spinners: the channels' readers polling now (blockingReader).
	spinners atomic.Int32

	ctx    context.Context // canceled by Close
	cancel context.CancelFunc

	mu     sync.Mutex
	closed bool
	procs  map[*proc]struct{}
	wg     sync.WaitGroup // reapers and respawns

	dmu       sync.Mutex
	deadlines deadlineHeap
	compactAt int
	dwake     chan struct{}
	watchDone chan struct{}

	spawns      chan func()
	spawnerOnce sync.Once
}

// spawner forks every worker from one goroutine locked to its thread for
// the pool's life: Pdeathsig fires when the forking *thread* exits, and Go
// retires the threads of goroutines that exit locked (a wasm engine may
// do that), which would kill healthy workers.
func (p *Pool) spawner() {
	runtime.LockOSThread() // never unlocked: the thread ends with the pool
	for fn := range p.spawns {
		fn()
	}
}

func (p *Pool) stopSpawner() { p.spawnerOnce.Do(func() { close(p.spawns) }) }

// Slot is one place in the pool; its process is replaced after it dies.
type Slot struct {
	pool  *Pool
	index int

	mu       sync.Mutex
	cur      *proc // the ready process; nil while none
	gen      uint64
	startErr error         // the last start failed: what Open returns until one succeeds
	changed  chan struct{} // closed and replaced on every change
	quick    int           // processes in a row that died soon after their start
}

// proc is one worker process.
type proc struct {
	slot    *Slot
	gen     uint64
	cmd     *exec.Cmd
	pid     int
	conn    *conn
	hello   []byte
	started time.Time
	stderr  *stderrTail

	reason  atomic.Pointer[string] // why we killed it; first wins
	kmu     sync.Mutex
	exited  bool
	ready   bool          // under slot.mu: it became the slot's process
	reaped  bool          // under slot.mu: its exit is being handled
	done    chan struct{} // closed after the exit was handled; exitErr set
	exitErr *ExitError
}

// Start starts every slot's process and returns when each sent its hello,
// or the first error (the others are killed).
func Start(ctx context.Context, cfg Config) (*Pool, error) {
	if !supported {
		return nil, errUnsupported
	}
	if cfg.Path == "" {
		return nil, errors.New("worker: Config.Path is empty")
	}
	if cfg.Count <= 0 {
		cfg.Count = runtime.NumCPU()
	}
	if cfg.Grace <= 0 {
		cfg.Grace = time.Second
	}
	if cfg.MaxMessage <= 0 {
		cfg.MaxMessage = 256 << 20
	}
	cfg.MaxMessage = min(cfg.MaxMessage, maxMessageLimit)
	if cfg.StartTimeout <= 0 {
		cfg.StartTimeout = 30 * time.Second
	}
	p := &Pool{
		cfg:       cfg,
		log:       cfg.Log,
		grace:     cfg.Grace,
		procs:     make(map[*proc]struct{}),
		dwake:     make(chan struct{}, 1),
		watchDone: make(chan struct{}),
		compactAt: 256,
		spawns:    make(chan func()),
	}
	go p.spawner()
	env := cfg.Env
	if env == nil {
		env = os.Environ()
	}
	p.env = make([]string, 0, len(env)+1)
	for _, kv := range env {
		if !strings.HasPrefix(kv, ChannelEnv+"=") {
			p.env = append(p.env, kv)
		}
	}
	p.env = append(p.env, ChannelEnv+"=3")
	p.ctx, p.cancel = context.WithCancel(context.Background())
	p.slots = make([]*Slot, cfg.Count)
	for i := range p.slots {
		p.slots[i] = &Slot{pool: p, index: i, changed: make(chan struct{})}
	}
	errs := make([]error, cfg.Count)
	var wg sync.WaitGroup
	for i, s := range p.slots {
		wg.Go(func() {
			_, errs[i] = s.spawn(ctx)
		})
	}
	wg.Wait()
	go p.watch()
	if err := errors.Join(errs...); err != nil {
		cctx, cancel := context.WithCancel(context.Background())
		cancel() // kill at once
		p.Close(cctx)
		return nil, err
	}
	return p, nil
}

// Len is the number of slots.
func (p *Pool) Len() int { return len(p.slots) }

// Slot returns slot i, 0 <= i < Len().
func (p *Pool) Slot(i int) *Slot { return p.slots[i] }

// MemoryGuard says how MemoryMax is enforced: "rss" (the resident set is
// polled from /proc every 50 ms and the worker SIGKILLed past it), or
// "none" (no MemoryMax, or no /proc on this system).
func (p *Pool) MemoryGuard() string {
	if p.cfg.MemoryMax > 0 && rssSupported {
		return "rss"
	}
	return "none"
}

// Close closes every channel (the workers' Serve returns on EOF), waits for
// the processes to exit, and SIGKILLs those still running when ctx ends.
// Streams still open report an *ExitError with Reason ExitClosed.
func (p *Pool) Close(ctx context.Context) error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		p.wg.Wait()
		<-p.watchDone
		return nil
	}
	p.closed = true
	procs := make([]*proc, 0, len(p.procs))
	for pr := range p.procs {
		procs = append(procs, pr)
	}
	p.mu.Unlock()
	p.cancel()
	for _, s := range p.slots {
		s.mu.Lock()
		s.notifyLocked()
		s.mu.Unlock()
	}
	for _, pr := range procs {
		pr.setReason(ExitClosed)
		pr.conn.close()
	}
	waited := make(chan struct{})
	go func() { p.wg.Wait(); close(waited) }()
	var err error
	select {
	case <-waited:
	case <-ctx.Done():
		err = ctx.Err()
		p.mu.Lock()
		for pr := range p.procs {
			pr.kill(ExitClosed)
		}
		p.mu.Unlock()
		<-waited
	}
	<-p.watchDone
	p.stopSpawner()
	return err
}

func (p *Pool) isClosed() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.closed
}

// Index is the slot's place in the pool.
func (s *Slot) Index() int { return s.index }

// Generation is 1 for the slot's first process and +1 for each replacement.
func (s *Slot) Generation() uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.gen
}

// Hello is the current process's hello payload (nil while there is none).
func (s *Slot) Hello() []byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cur == nil {
		return nil
	}
	return s.cur.hello
}

// Pid is the current process's id (0 while there is none).
func (s *Slot) Pid() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cur == nil {
		return 0
	}
	return s.cur.pid
}

// Kill SIGKILLs the current process; its streams report Reason ExitCrashed
// unless another reason was already set.
func (s *Slot) Kill() {
	s.mu.Lock()
	pr := s.cur
	s.mu.Unlock()
	if pr != nil {
		pr.kill(ExitCrashed)
	}
}

// KillProtocol SIGKILLs the current process with Reason ExitProtocol, for a
// caller that found the worker's messages malformed.
func (s *Slot) KillProtocol() {
	s.mu.Lock()
	pr := s.cur
	s.mu.Unlock()
	if pr != nil {
		pr.kill(ExitProtocol)
	}
}

// Open opens a stream on the current process, sending header as its first
// message, and returns the process's generation. If the last process died
// it waits for the replacement; if the replacement could not be started it
// returns that error (a *StartError) without waiting.
func (s *Slot) Open(ctx context.Context, header []byte) (*Stream, uint64, error) {
	for {
		s.mu.Lock()
		if s.pool.isClosed() {
			s.mu.Unlock()
			return nil, 0, ErrClosed
		}
		pr, changed, startErr := s.cur, s.changed, s.startErr
		s.mu.Unlock()
		if pr != nil {
			st, err := pr.open(header)
			if err == errGone {
				// It died before anything was sent: the replacement may take it.
				select {
				case <-pr.done:
				case <-ctx.Done():
					return nil, 0, ctx.Err()
				}
				continue
			}
			if err != nil {
				return nil, pr.gen, err
			}
			return st, pr.gen, nil
		}
		if startErr != nil {
			return nil, 0, startErr
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return nil, 0, ctx.Err()
		}
	}
}

func (pr *proc) open(header []byte) (*Stream, error) {
	c := pr.conn
	st := newStream(c, 0)
	st.proc = pr
	// The id is taken and the first frame written under the writer lock:
	// the worker sees new streams in increasing id order, so an id at or
	// below the highest it saw and not open is a stream it let go of.
	n := min(len(header), maxFrame)
	st.credit -= int64(n) + msgCost
	st.smu.Lock()
	defer st.smu.Unlock()
	c.lockWriter()
	c.mu.Lock()
	if c.err != nil {
		c.mu.Unlock()
		c.wmu.Unlock()
		return nil, errGone
	}
	c.lastID++
	st.id = c.lastID
	c.register(st)
	c.mu.Unlock()
	err := c.writeLocked(frameHeader{typ: frameData, flags: flagFirst, id: st.id, aux: uint32(len(header))}, header[:n])
	c.wmu.Unlock()
	if err == nil {
		err = st.sendFrom(header, n, false)
	} else {
		err = st.writeErr(err)
	}
	if err != nil {
		st.Close()
		return nil, err
	}
	return st, nil
}

func (s *Slot) notifyLocked() {
	close(s.changed)
	s.changed = make(chan struct{})
}

func (s *Slot) setFailed(err error) {
	s.mu.Lock()
	s.startErr = err
	s.notifyLocked()
	s.mu.Unlock()
}

// spawn starts one process and waits for its hello.
func (s *Slot) spawn(ctx context.Context) (*proc, error) {
	p := s.pool
	s.mu.Lock()
	gen := s.gen + 1
	s.mu.Unlock()
	tail := &stderrTail{log: p.log, slot: s.index}
	var (
		cmd *exec.Cmd
		f   *os.File
		err error
	)
	started := make(chan struct{})
	p.spawns <- func() {
		cmd, f, err = startProcess(p.cfg.Path, p.cfg.Args, p.env, tail)
		close(started)
	}
	<-started
	if err != nil {
		return nil, &StartError{Slot: s.index, Err: err}
	}
	s.mu.Lock()
	s.gen = gen
	s.mu.Unlock()
	pr := &proc{
		slot:    s,
		gen:     gen,
		cmd:     cmd,
		pid:     cmd.Process.Pid,
		started: time.Now(),
		stderr:  tail,
		done:    make(chan struct{}),
	}
	pr.conn = newConn(f, true, p.cfg.MaxMessage, &p.spinners)
	p.mu.Lock()
	p.procs[pr] = struct{}{}
	p.wg.Add(1)
	p.mu.Unlock()
	go pr.reap()
	go pr.conn.ctlLoop()
	hello := make(chan []byte, 1)
	go pr.read(hello)
	pr.conn.writeFrame(frameHeader{typ: frameSettings, aux: uint32(p.cfg.MaxMessage)}, nil)

	timer := time.NewTimer(p.cfg.StartTimeout)
	defer timer.Stop()
	var why error
	select {
	case h := <-hello:
		pr.hello = h
		// Becoming the slot's process and being reaped exclude each other:
		// a worker that says hello and dies at once is a failed start.
		s.mu.Lock()
		if !pr.reaped {
			pr.ready = true
			s.cur = pr
			s.startErr = nil
			s.notifyLocked()
			s.mu.Unlock()
			return pr, nil
		}
		s.mu.Unlock()
		<-pr.done
		why = pr.exitErr
	case <-pr.done:
		why = pr.exitErr
	case <-ctx.Done():
		why = ctx.Err()
	case <-p.ctx.Done():
		why = ErrClosed
	case <-timer.C:
		why = errors.New("no hello in time")
	}
	pr.kill(ExitCrashed)
	<-pr.done
	return nil, &StartError{Slot: s.index, Err: why, Stderr: tail.String()}
}

// read runs the channel's reader; when it ends the process is done for.
func (pr *proc) read(hello chan<- []byte) {
	err := pr.conn.readLoop(func(h []byte) { hello <- h })
	var pe *ProtocolError
	if errors.As(err, &pe) {
		pr.logger().Warn("worker protocol violation: killing it", zap.Error(err))
		pr.kill(ExitProtocol)
		return
	}
	// EOF or a read error: the worker is exiting, or closed its channel and
	// is of no more use; give it Grace to exit with its own status.
	t := time.NewTimer(pr.slot.pool.grace)
	defer t.Stop()
	select {
	case <-pr.done:
	case <-t.C:
		if !pr.slot.pool.isClosed() { // Close waits for its own ctx
			pr.kill(ExitCrashed)
		}
	}
}

func (pr *proc) logger() *zap.Logger {
	l := pr.slot.pool.log
	if l == nil {
		l = zap.NewNop()
	}
	return l.With(zap.Int("slot", pr.slot.index), zap.Int("pid", pr.pid), zap.Uint64("generation", pr.gen))
}

func (pr *proc) setReason(r string) { pr.reason.CompareAndSwap(nil, &r) }

// kill SIGKILLs the process (and its process group) unless it was reaped.
func (pr *proc) kill(reason string) {
	pr.setReason(reason)
	pr.kmu.Lock()
	defer pr.kmu.Unlock()
	if !pr.exited {
		killProcess(pr.cmd)
	}
}

// reap waits for the process, fails its streams, and starts the replacement.
func (pr *proc) reap() {
	p := pr.slot.pool
	defer p.wg.Done()
	pr.cmd.Wait()
	pr.kmu.Lock()
	pr.exited = true
	pr.kmu.Unlock()
	reason := ExitCrashed
	if r := pr.reason.Load(); r != nil {
		reason = *r
	}
	p.mu.Lock()
	delete(p.procs, pr)
	closing := p.closed
	p.mu.Unlock()
	if closing && reason != ExitDeadline && reason != ExitMemory && reason != ExitProtocol {
		reason = ExitClosed
	}
	ee := &ExitError{Slot: pr.slot.index, Generation: pr.gen, Pid: pr.pid, Reason: reason,
		Status: pr.cmd.ProcessState.String()}
	pr.exitErr = ee
	// The slot lets go first: whoever sees this ExitError and Opens again
	// waits for the replacement instead of finding the dead process.
	s := pr.slot
	s.mu.Lock()
	pr.reaped = true
	ready := pr.ready
	if s.cur == pr {
		s.cur = nil
		s.notifyLocked()
	}
	s.mu.Unlock()
	pr.conn.fail(ee)
	close(pr.done)
	if !ready {
		return // spawn reports it
	}
	if closing {
		return
	}
	pr.logger().Warn("worker process ended", zap.String("reason", reason), zap.String("status", ee.Status))
	if f := p.cfg.OnExit; f != nil {
		f(ee)
	}
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return
	}
	p.wg.Add(1)
	p.mu.Unlock()
	go s.respawn(time.Since(pr.started) < quickDeath, ee)
}

// quickDeath: a process that dies sooner than this after its start counts
// toward the crash-loop backoff.
const quickDeath = time.Second

// respawn starts the replacement: at once, unless processes keep dying
// young or failing to start, then with exponential backoff (Open returns
// the failure meanwhile instead of waiting).
func (s *Slot) respawn(quick bool, last *ExitError) {
	p := s.pool
	defer p.wg.Done()
	s.mu.Lock()
	if quick {
		s.quick++
	} else {
		s.quick = 0
	}
	failures := s.quick
	s.mu.Unlock()
	if failures >= 3 {
		s.setFailed(&StartError{Slot: s.index, Err: fmt.Errorf("%d processes in a row died right after start, last: %w", failures, last)})
	}
	for {
		if failures >= 3 && !sleep(p.ctx, backoff(failures-2)) {
			return
		}
		pr, err := s.spawn(p.ctx)
		if p.isClosed() {
			if err == nil {
				pr.kill(ExitClosed)
			}
			return
		}
		if err == nil {
			return
		}
		p.logerr("starting a worker failed", err)
		s.setFailed(err)
		failures = max(failures+1, 3)
	}
}

func (p *Pool) logerr(msg string, err error) {
	if p.log != nil {
		p.log.Warn(msg, zap.Error(err))
	}
}

func backoff(n int) time.Duration {
	d := 50 * time.Millisecond << min(n, 7)
	return min(d, 5*time.Second)
}

func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// ---- deadlines and memory: one watchdog goroutine per pool ----

type deadline struct {
	at  time.Time
	s   *Stream
	seq uint64
}

type deadlineHeap []deadline

func (h deadlineHeap) Len() int           { return len(h) }
func (h deadlineHeap) Less(i, j int) bool { return h[i].at.Before(h[j].at) }
func (h deadlineHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *deadlineHeap) Push(x any)        { *h = append(*h, x.(deadline)) }
func (h *deadlineHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	old[len(old)-1] = deadline{}
	*h = old[:len(old)-1]
	return x
}

func (p *Pool) addDeadline(t time.Time, s *Stream, seq uint64) {
	p.dmu.Lock()
	if len(p.deadlines) >= p.compactAt {
		// Entries of streams that finished stay until their time; drop
		// them before the heap grows with them.
		live := p.deadlines[:0]
		for _, d := range p.deadlines {
			if d.s.live(d.seq) {
				live = append(live, d)
			}
		}
		clear(p.deadlines[len(live):])
		p.deadlines = live
		heap.Init(&p.deadlines)
		p.compactAt = max(256, 2*len(live))
	}
	heap.Push(&p.deadlines, deadline{at: t.Add(p.grace), s: s, seq: seq})
	first := p.deadlines[0].s == s && p.deadlines[0].seq == seq
	p.dmu.Unlock()
	if first {
		signal(p.dwake)
	}
}

// watch kills processes whose streams passed their deadline and, with
// MemoryMax, those past it; it also has the readers of idle channels wait
// in the kernel (blockingReader).
func (p *Pool) watch() {
	defer close(p.watchDone)
	t := time.NewTicker(50 * time.Millisecond)
	defer t.Stop()
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		now := time.Now()
		var expired []deadline
		p.dmu.Lock()
		for len(p.deadlines) > 0 && !p.deadlines[0].at.After(now) {
			expired = append(expired, heap.Pop(&p.deadlines).(deadline))
		}
		next := time.Hour
		if len(p.deadlines) > 0 {
			next = p.deadlines[0].at.Sub(now)
		}
		p.dmu.Unlock()
		for _, d := range expired {
			if d.s.live(d.seq) {
				d.s.proc.kill(ExitDeadline)
			}
		}
		timer.Reset(next)
		select {
		case <-p.ctx.Done():
			return
		case <-p.dwake:
		case <-timer.C:
		case now := <-t.C:
			if p.cfg.MemoryMax > 0 && rssSupported {
				p.checkMemory()
			}
			p.settleIdle(now)
		}
	}
}

// settleIdle has the readers of channels idle for settleAfter wait in the
// kernel.
func (p *Pool) settleIdle(now time.Time) {
	for _, s := range p.slots {
		s.mu.Lock()
		pr := s.cur
		s.mu.Unlock()
		if pr != nil {
			pr.conn.settleIfIdle(now)
		}
	}
}

func (p *Pool) checkMemory() {
	for _, s := range p.slots {
		s.mu.Lock()
		pr := s.cur
		s.mu.Unlock()
		if pr == nil {
			continue
		}
		if n, ok := rss(pr.pid); ok && n > p.cfg.MemoryMax {
			pr.logger().Warn("worker over its memory limit: killing it", zap.Int64("rss", n), zap.Int64("max", p.cfg.MemoryMax))
			pr.kill(ExitMemory)
		}
	}
}

// stderrTail passes a worker's stderr to the log (warn) or os.Stderr, and
// keeps its last few KiB for start errors.
type stderrTail struct {
	log  *zap.Logger
	slot int
	mu   sync.Mutex
	line []byte
	tail []byte
}

const tailMax = 4 << 10

func (t *stderrTail) Write(b []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.tail = append(t.tail, b...)
	if len(t.tail) > tailMax {
		t.tail = append(t.tail[:0], t.tail[len(t.tail)-tailMax:]...)
	}
	if t.log == nil {
		os.Stderr.Write(b)
		return len(b), nil
	}
	t.line = append(t.line, b...)
	for {
		i := strings.IndexByte(string(t.line), '\n')
		if i < 0 {
			break
		}
		t.log.Warn("worker stderr", zap.Int("slot", t.slot), zap.String("line", string(t.line[:i])))
		t.line = t.line[i+1:]
	}
	if len(t.line) > tailMax {
		t.log.Warn("worker stderr", zap.Int("slot", t.slot), zap.String("line", string(t.line)))
		t.line = t.line[:0]
	}
	return len(b), nil
}

func (t *stderrTail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return strings.TrimSpace(string(t.tail))
}
