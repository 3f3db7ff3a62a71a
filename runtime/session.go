package runtime

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/experimental"
	"github.com/tetratelabs/wazero/sys"
	"go.uber.org/zap"

	"github.com/subako/subako-runner/hostmod/subakohttp"
	"github.com/subako/subako-runner/internal/fuel"
	"github.com/subako/subako-runner/internal/linmem"
	"github.com/subako/subako-runner/internal/text"
	"github.com/subako/subako-runner/limits"
	"github.com/subako/subako-runner/protocol"
	"github.com/subako/subako-runner/wasi"
)

// endGrace is how long an instance may take to stop once its context
// ended before the host logs that a host function is not honouring the
// context. The host goes on waiting: an instance is never left running.
const endGrace = 5 * time.Second

// Reasons the host ends an instance itself; context.Cause tells them apart
// from the caller's own cancellation or deadline.
var (
	errDeadline    = errors.New("deadline reached")
	errExitTimeout = errors.New("module did not exit after stdin closed")
	errCrashed     = errors.New("module broke the protocol")
)

// instanceConfig is everything one instance needs besides the compiled module.
type instanceConfig struct {
	compiled      wazero.CompiledModule
	initialMemory uint64 // initialMemory(compiled)
	limits        limits.Limits
	deadline      time.Time
	wasi          wasi.Config
	http          *subakohttp.Call
	ended         func() // called once the instance is gone (its memory too); may be nil
}

// session drives one module instance over stdio: it writes one request at a
// time into stdin, keeps stdin open until that request's response arrived,
// and classifies every stdout line as it is written. The stdout callback runs
// on the guest's goroutine inside fd_write, so a protocol violation ends the
// instance before it can write anything more.
type session struct {
	rt     *Runtime
	log    *zap.Logger
	lim    limits.Limits
	stdin  *wasi.Stdin
	stderr *stderrTail
	split  *protocol.LineSplitter
	memory *linmem.Allocator
	fuel   *fuel.Meter
	trace  *sessionTrace // nil unless Config.Trace is set
	// timing is written by the instance's goroutine before it reports its
	// end (done), and read after.
	timing instanceTiming

	parent context.Context // the caller's context
	ctx    context.Context
	kill   context.CancelCauseFunc
	stop   context.CancelFunc
	grace  time.Duration

	done      chan error // the instance's end, sent once
	responses chan protocol.Message
	exited    bool
	exitErr   error
	// canceled is set when the caller's context ended the instance: the
	// run says nothing about the module, and the entry point returns this
	// error instead of a verdict. Written before done is sent.
	canceled error
	started  time.Time
	ended    time.Time // when the instance ended; written before done is sent

	// run runs the instance to its end; nil when it could not start (the
	// crash is recorded). start runs it on a goroutine of its own, runHere
	// on the caller's.
	run func()
	// closeOnAnswer makes onLine close stdin itself the moment the pending
	// request is answered, on the guest's goroutine: the last request of a
	// session then costs no round trip to the driver before the guest sees
	// end of file (host-contract §3: stdin stays open until the answer has
	// arrived, not a moment longer than the host needs).
	closeOnAnswer bool
	closedAt      time.Time   // when stdin was closed; zero while open
	exitTimer     *time.Timer // the exit rule's timer, armed when stdin closes
	watch         struct {
		sync.Mutex
		over  bool        // runHere returned
		timer *time.Timer // logs an instance slow to stop after its context ended
	}

	mu            sync.Mutex
	pending       string // Key of the outstanding request's id; "" when none
	answered      map[string]bool
	crash         *Crash
	notifications int
}

// newSession prepares an instance without starting it: requests posted
// before start or runHere are in stdin when the guest first reads. The
// caller must then start it (start or runHere) and call finish (or abort)
// exactly once.
func (rt *Runtime) newSession(parent context.Context, cfg instanceConfig, log *zap.Logger) *session {
	lim := cfg.limits
	s := &session{
		rt:        rt,
		log:       log,
		lim:       lim,
		stdin:     wasi.NewStdin(),
		stderr:    newStderrTail(lim.StderrTail, log),
		memory:    linmem.New(uint64(lim.Memory), rt.memPool),
		fuel:      fuel.NewMeter(lim.Fuel),
		done:      make(chan error, 1),
		responses: make(chan protocol.Message, 1),
		answered:  map[string]bool{},
		started:   time.Now(),
		trace:     rt.newSessionTrace(),
		parent:    parent,
		grace:     rt.endGrace,
	}
	if s.grace <= 0 {
		s.grace = endGrace
	}
	s.split = protocol.NewLineSplitter(lim.StdoutLine, lim.StdoutTotal, s.onLine)

	ctx, stop := context.WithDeadlineCause(parent, cfg.deadline, errDeadline)
	ctx, kill := context.WithCancelCause(ctx)
	s.ctx, s.kill, s.stop = ctx, kill, stop

	wcfg := cfg.wasi
	wcfg.Stdin = s.stdin
	wcfg.Stdout = stdoutWriter{s}
	wcfg.Stderr = s.trace.stderr(s.stderr)
	wcfg.MaxStdioWrite = lim.StdoutLine // one fd_write moves at most one line's worth
	inst := wasi.NewInstance(wcfg)

	ictx := subakohttp.WithCall(wasi.WithInstance(ctx, inst), cfg.http)
	ictx = experimental.WithMemoryAllocator(ictx, s.memory)
	ictx = fuel.WithTableBudget(fuel.WithMeter(ictx, s.fuel), s.memory)

	if err := initialMemoryFits(cfg.initialMemory, lim.Memory); err != nil {
		// wazero cannot start an instance whose initial memory the allocator
		// refuses, so the run ends here, as the module would at its start.
		s.crash = s.newCrash(CrashOutOfMemory, err.Error())
		s.exited = true
		inst.Close()
		if cfg.ended != nil {
			cfg.ended()
		}
		return s
	}
	s.run = func() {
		err := rt.runInstance(ictx, cfg.compiled, &s.timing)
		// A trailing partial line is a protocol line too; deliver it before
		// reporting the exit, so a final answer without "\n" still counts.
		// An instance the host ended was cut off mid-write: its last bytes
		// are not a line it finished, and the reason it was ended stands.
		if context.Cause(ctx) == nil {
			if ferr := s.split.Close(); ferr != nil {
				s.failFrom(ferr)
			}
		}
		// The caller's context ended the run unless the module had already
		// broken a rule (its crash stands) or the host ended it itself.
		s.mu.Lock()
		crashed := s.crash != nil
		s.mu.Unlock()
		if err != nil && !crashed && parent.Err() != nil && !hostCause(context.Cause(ctx)) {
			s.canceled = canceled(parent, "stopped by the caller's context")
		}
		inst.Close()
		s.trace.exit(err)
		s.ended = time.Now()
		s.done <- err
		s.memory.Release() // after the end is reported: the host's work, not the guest's
		if cfg.ended != nil {
			cfg.ended()
		}
	}
	return s
}

// start runs the instance on a goroutine of its own: the driver then
// talks to it request by request.
func (s *session) start() {
	if s.run != nil {
		go s.run()
	}
}

// runHere runs the instance on the caller's goroutine, to its end: for a
// session whose requests are all posted beforehand, the last with
// closeOnAnswer, so nothing needs the driver while the guest runs. The
// guest's goroutine is then one the caller has already grown, and no
// goroutine hands the call to another. The instance's context still ends
// it (deadline, exit timer, the caller's cancellation); an instance slow
// to stop after that is logged once the grace has passed, as awaitEnd does.
func (s *session) runHere() {
	if s.run == nil {
		return
	}
	stopWatch := context.AfterFunc(s.ctx, func() {
		s.watch.Lock()
		defer s.watch.Unlock()
		if !s.watch.over {
			s.watch.timer = time.AfterFunc(s.grace, s.logSlowStop)
		}
	})
	s.run()
	stopWatch()
	s.watch.Lock()
	s.watch.over = true
	if s.watch.timer != nil {
		s.watch.timer.Stop()
	}
	s.watch.Unlock()
}

func (s *session) logSlowStop() {
	s.log.Error("module instance did not stop after its context ended; waiting for it (a host function is not honouring the context)", zap.Duration("grace", s.grace))
}

// instanceTiming is when an instance began and how long its instantiation
// took, for tracing (CallEvent).
type instanceTiming struct {
	start            time.Time
	instantiate, run time.Duration
}

// runInstance instantiates the module (running any start section) and then
// calls _start. wazero reports exit code 0 as success. It is the one place
// instances start: the observer's instance count follows it, and timing,
// when not nil, records its instantiation.
func (rt *Runtime) runInstance(ctx context.Context, compiled wazero.CompiledModule, timing *instanceTiming) error {
	if rt.instances != nil {
		rt.instances.InstanceStarted(ctx)
		defer rt.instances.InstanceEnded(ctx)
	}
	began := time.Now()
	mod, err := rt.instantiate(ctx, compiled)
	if timing != nil {
		timing.start, timing.instantiate = began, time.Since(began)
	}
	if err != nil {
		if m := fuel.FromContext(ctx); m != nil {
			m.Finish(nil) // ends the meter's watch of the context
		}
		return err
	}
	defer mod.Close(context.WithoutCancel(ctx))
	start := mod.ExportedFunction("_start")
	if start == nil {
		return errors.New("module has no _start") // the upload checks make this unreachable
	}
	_, err = start.Call(ctx)
	if timing != nil {
		timing.run = time.Since(began) - timing.instantiate
	}
	if m := fuel.FromContext(ctx); m != nil {
		m.Finish(mod) // reads the guest's counter: exact fuel used
	}
	var exit *sys.ExitError
	if errors.As(err, &exit) && exit.ExitCode() == 0 {
		return nil
	}
	return err
}

// instantiate is wazero's InstantiateModule with its panics turned into
// errors. wazero panics when the memory allocator refuses a module's
// initial memory (an allocation it does not expect to fail), and a panic
// here would end the host process (discovery runs its instance on a
// goroutine of its own) or leave the caller waiting for an end that never
// comes. Sessions check the initial memory against the limit first
// (initialMemoryFits); this is the backstop. The allocator has recorded
// the refusal, so the end is out_of_memory.
func (rt *Runtime) instantiate(ctx context.Context, compiled wazero.CompiledModule) (mod api.Module, err error) {
	defer func() {
		if r := recover(); r != nil {
			mod, err = nil, fmt.Errorf("the module could not be instantiated: %v", r)
		}
	}()
	return rt.wz.InstantiateModule(ctx, compiled, rt.modConfig)
}

// request sends one request and waits for its response. A nil *Crash means
// msg is a successful, complete response.
func (s *session) request(method string, params map[string]any) (protocol.Message, *Crash) {
	if crash := s.post(method, params, false); crash != nil {
		return protocol.Message{}, crash
	}
	return s.await(method)
}

// post writes one request into stdin without waiting for its response;
// await waits for it. With last set, stdin closes the moment the answer
// arrives (closeOnAnswer). Posting before the instance starts is how a
// call hands the guest its request with no wake-up in between.
func (s *session) post(method string, params map[string]any, last bool) *Crash {
	if s.exited {
		return s.classifyEnd(true)
	}
	id := newRequestID()
	line, err := protocol.EncodeRequest(id, method, params, s.rt.client)
	if err != nil {
		// Only the host's own parameters go in here; a failure is a bug.
		s.abort()
		return s.newCrash(CrashInvalidResult, "the host could not encode its request: "+err.Error())
	}
	s.mu.Lock()
	s.closeOnAnswer = last
	s.mu.Unlock()
	return s.write(line, id.Key())
}

// await waits for the answer to the posted request and judges it.
func (s *session) await(method string) (protocol.Message, *Crash) {
	msg, crash := s.wait()
	if crash != nil {
		return msg, crash
	}
	return s.checkResponse(method, msg)
}

// send writes one line to stdin and, when pending is not empty, waits for
// the response to the request whose id has that Key. It does not judge the
// response: request does, and a probe leaves that to its caller.
func (s *session) send(line []byte, pending string) (protocol.Message, *Crash) {
	if s.exited {
		return protocol.Message{}, s.classifyEnd(pending != "")
	}
	if crash := s.write(line, pending); crash != nil || pending == "" {
		return protocol.Message{}, crash
	}
	return s.wait()
}

// write puts one line into stdin, the request whose id has Key pending
// (empty for a notification) then being the one in flight.
func (s *session) write(line []byte, pending string) *Crash {
	s.mu.Lock()
	s.pending = pending
	s.mu.Unlock()
	s.trace.event(TraceSend, line) // before the write: the answer may come before Write returns
	if _, err := s.stdin.Write(line); err != nil {
		return s.failNow(CrashExitedBeforeResponse, "the module closed its stdin before the request was written")
	}
	return nil
}

// wait waits for the response to the request in flight. An answer that
// has arrived wins over an end that came after it (an instance run by
// runHere has ended before wait starts, and select picks at random among
// what is ready).
func (s *session) wait() (protocol.Message, *Crash) {
	select {
	case msg := <-s.responses:
		return msg, nil
	default:
	}
	select {
	case msg := <-s.responses:
		return msg, nil
	case err := <-s.done:
		s.exited, s.exitErr = true, err
		select {
		case msg := <-s.responses: // answered, then exited at once
			return msg, nil
		default:
		}
		return protocol.Message{}, s.classifyEnd(true)
	case <-s.ctx.Done():
		s.awaitEnd()
		return protocol.Message{}, s.classifyEnd(true)
	}
}

// awaitEnd waits for an instance whose context is done to end. Every
// blocking host function returns when the context is done, so this is
// prompt. It never gives up: returning while the guest still runs would
// release its mounts, budget and memory under it, and leave host CPU
// spent past every limit (issue 17). A host function slow to notice the
// context is a host bug, logged once the grace has passed.
func (s *session) awaitEnd() {
	if s.exited {
		return
	}
	grace := time.NewTimer(s.grace)
	defer grace.Stop()
	select {
	case err := <-s.done:
		s.exited, s.exitErr = true, err
		return
	case <-grace.C:
	}
	s.log.Error("module instance did not stop after its context ended; waiting for it (a host function is not honouring the context)", zap.Duration("grace", s.grace))
	err := <-s.done
	s.exited, s.exitErr = true, err
}

// interrupted returns the caller's context error when that context ended
// the instance, and nil when the run was the module's own. Call it once
// the session is over (after finish or abort).
func (s *session) interrupted() error { return s.canceled }

// hostCause reports whether cause is one of the reasons the host ends an
// instance itself, rather than the caller's context ending.
func hostCause(cause error) bool {
	return errors.Is(cause, errDeadline) || errors.Is(cause, errExitTimeout) || errors.Is(cause, errCrashed)
}

func (s *session) checkResponse(method string, msg protocol.Message) (protocol.Message, *Crash) {
	if msg.Kind == protocol.KindErrorResponse {
		perr := protocol.ErrJSONRPC(msg.Error)
		text := fmt.Sprintf("answering %s, %s", method, perr.Message)
		if !strings.Contains(perr.Message, "isError") {
			text += " (a failure the model should read must be a result with \"isError\": true)"
		}
		return msg, s.failNow(perr.Code, text)
	}
	if err := protocol.CheckComplete(msg.Result); err != nil {
		return msg, s.failNow(CrashResultNotComplete, errMessage(err))
	}
	return msg, nil
}

// finish closes stdin (unless the answer closed it already) and waits for
// the module to exit with code 0. It returns the run's crash, if any
// (including a crash recorded earlier).
func (s *session) finish() *Crash {
	defer s.stop()
	defer s.stopExitTimer()
	s.closeStdin()
	if !s.exited {
		select {
		case err := <-s.done:
			s.exited, s.exitErr = true, err
		case <-s.ctx.Done(): // the exit timer, the deadline or the caller
			s.awaitEnd()
		}
	}
	return s.classifyEnd(false)
}

// closeStdin closes stdin once, and arms the exit rule: an instance still
// running ExitTimeout later is ended as exit_timeout. It runs on the
// driver's goroutine (finish) or on the guest's (onLine, closeOnAnswer).
func (s *session) closeStdin() {
	s.mu.Lock()
	if !s.closedAt.IsZero() {
		s.mu.Unlock()
		return
	}
	s.closedAt = time.Now()
	s.mu.Unlock()
	// Not under the lock: a Trace function is the embedder's code.
	s.trace.event(TraceClose, nil) // before closing: the exit may be traced before CloseWrite returns
	s.stdin.CloseWrite()
	timer := time.AfterFunc(s.lim.ExitTimeout, func() { s.kill(errExitTimeout) })
	s.mu.Lock()
	s.exitTimer = timer
	s.mu.Unlock()
}

func (s *session) stopExitTimer() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.exitTimer != nil {
		s.exitTimer.Stop()
	}
}

// exitWait is the time from closing stdin to the instance's end; zero
// when the instance ended before stdin closed (or has not ended). Call it
// after finish.
func (s *session) exitWait() time.Duration {
	s.mu.Lock()
	closed := s.closedAt
	s.mu.Unlock()
	if closed.IsZero() || s.ended.IsZero() || !s.ended.After(closed) {
		return 0
	}
	return s.ended.Sub(closed)
}

// abort ends the instance after a crash the driver found (or a host error),
// and waits for it to be gone. It is safe to call again, and after finish.
func (s *session) abort() {
	defer s.stop()
	defer s.stopExitTimer()
	if !s.exited {
		s.kill(errCrashed)
		s.stdin.CloseWrite()
		s.awaitEnd()
	}
}

// classifyEnd turns the instance's end into a crash, or nil for a clean
// exit. waiting says whether a request was still unanswered.
func (s *session) classifyEnd(waiting bool) *Crash {
	s.mu.Lock()
	crash := s.crash
	s.mu.Unlock()
	if crash != nil {
		return crash
	}
	err := s.exitErr
	cause := context.Cause(s.ctx)
	if err != nil && errors.Is(cause, errExitTimeout) {
		return s.newCrash(CrashExitTimeout, fmt.Sprintf("the module was still running %v after its stdin closed; exit with code 0 at end of input", s.lim.ExitTimeout))
	}
	if c := endCrash(err, cause, s.fuel, s.memory, s.lim, time.Since(s.started)); c != nil {
		return s.newCrash(c.Reason, c.Message)
	}
	var exit *sys.ExitError
	isExit := errors.As(err, &exit)
	switch {
	case waiting:
		code := uint32(0)
		if isExit {
			code = exit.ExitCode()
		}
		return s.newCrash(CrashExitedBeforeResponse, fmt.Sprintf("the module exited with code %d before answering the request", code))
	case isExit:
		return s.newCrash(CrashExitCode, fmt.Sprintf("the module exited with code %d; it must exit with code 0 when stdin closes", exit.ExitCode()))
	}
	return nil
}

// endCrash classifies the ends every run shares, a session or a command:
// the host's deadline, fuel, memory, a trap. It is nil when the instance
// returned or exited (with any code), which the caller judges.
func endCrash(err, cause error, meter *fuel.Meter, memory *linmem.Allocator, lim limits.Limits, ran time.Duration) *Crash {
	if err == nil {
		return nil
	}
	switch {
	case errors.Is(cause, errDeadline):
		return &Crash{Reason: CrashTimeout, Message: fmt.Sprintf("the module ran out of time (%v)", ran.Round(time.Millisecond))}
	case meter.Exhausted():
		return &Crash{Reason: CrashOutOfFuel, Message: fmt.Sprintf("the module used its whole fuel budget of %d", lim.Fuel)}
	}
	var exit *sys.ExitError
	isExit := errors.As(err, &exit)
	if memory.Refused() && (!isExit || exit.ExitCode() != 0) {
		return &Crash{Reason: CrashOutOfMemory, Message: fmt.Sprintf("the module needed more than its memory limit of %s", limits.FormatSize(lim.Memory))}
	}
	if !isExit {
		return &Crash{Reason: CrashTrap, Message: "the module trapped: " + text.FirstLine(err.Error())}
	}
	return nil
}

// onLine classifies one stdout line; it runs inside the guest's fd_write.
// Returning an error ends the instance at once.
func (s *session) onLine(line []byte) error {
	s.trace.event(TraceReceive, line)
	msg, err := protocol.Classify(line)
	if err != nil {
		// protocol's message quotes the line itself, cut short.
		return s.fail(CrashNotJSONRPC, errMessage(err))
	}
	switch msg.Kind {
	case protocol.KindNotification:
		s.mu.Lock()
		s.notifications++
		s.mu.Unlock()
		return nil
	case protocol.KindRequest:
		perr := protocol.ErrServerRequest(msg.Method, msg.ID)
		return s.fail(perr.Code, perr.Message)
	}
	key := msg.ID.Key()
	s.mu.Lock()
	if msg.Kind == protocol.KindErrorResponse && msg.ID.IsNull() && s.pending != "" {
		// JSON-RPC answers a request it could not read (a parse error) with
		// id null; it is the error answer to the request in flight.
		key = s.pending
	}
	if key != s.pending {
		answered, sent := s.answered[key], s.pending
		s.mu.Unlock()
		perr := protocol.ErrUnexpectedIDFor(msg.ID, sent, answered)
		return s.fail(perr.Code, perr.Message)
	}
	s.pending = ""
	s.answered[key] = true
	last := s.closeOnAnswer
	s.mu.Unlock()
	if last {
		s.closeStdin()
	}
	s.responses <- msg // never blocks: one response per request sent
	return nil
}

// fail records the first crash and returns the error that ends the instance.
func (s *session) fail(reason, message string) error {
	c := s.newCrash(reason, message)
	s.mu.Lock()
	if s.crash == nil {
		s.crash = c
	}
	s.mu.Unlock()
	return c
}

// failFrom records a protocol error (e.g. output_too_large from the line
// splitter) as a crash with the same code.
func (s *session) failFrom(err error) {
	var perr *protocol.Error
	if errors.As(err, &perr) {
		_ = s.fail(perr.Code, perr.Message)
		return
	}
	var crash *Crash
	if !errors.As(err, &crash) {
		_ = s.fail(CrashNotJSONRPC, err.Error())
	}
}

// failNow records a crash the driver found and ends the instance.
func (s *session) failNow(reason, message string) *Crash {
	_ = s.fail(reason, message)
	s.abort()
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.crash
}

// newCrash builds a crash report with the stderr tail as it is now.
func (s *session) newCrash(reason, message string) *Crash {
	return &Crash{Reason: reason, Message: boundMessage(message), Stderr: s.stderr.String()}
}

// maxCrashMessage bounds Crash.Message. The messages quote what the guest
// sent through protocol's builders, each quote cut far shorter; this is
// the backstop that keeps any message, whatever it quotes, from carrying
// a guest's megabytes into logs, reports and the model's context.
const maxCrashMessage = 2048

// boundMessage cuts s to maxCrashMessage bytes on a UTF-8 boundary, with an
// ellipsis saying how long it was.
func boundMessage(s string) string {
	if len(s) <= maxCrashMessage {
		return s
	}
	cut := maxCrashMessage
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return fmt.Sprintf("%s… (%d bytes)", s[:cut], len(s))
}

// stdoutWriter hands the guest's stdout to the line splitter.
type stdoutWriter struct{ s *session }

func (w stdoutWriter) Write(p []byte) (int, error) {
	n, err := w.s.split.Write(p)
	if err != nil {
		w.s.failFrom(err)
	}
	return n, err
}

// newRequestID returns an unpredictable id, a string or an integer at
// random (docs/abi.md §3). Integers stay within 1..protocol.MaxIntID
// (2^31-1), which every mainstream JSON library echoes exactly; `check`
// probes larger ones.
func newRequestID() protocol.ID {
	var coin [1]byte
	_, _ = rand.Read(coin[:])
	if coin[0]&1 == 0 {
		return protocol.RandomStringID("subako")
	}
	return protocol.RandomIntID()
}

func errMessage(err error) string {
	var perr *protocol.Error
	if errors.As(err, &perr) {
		return perr.Message
	}
	return err.Error()
}

// initialMemory is the largest initial size of the module's memories, in
// bytes. wazero builds the list of memories anew at every ask, so a
// Checked asks once, not every call.
func initialMemory(compiled wazero.CompiledModule) uint64 {
	var most uint64
	for _, m := range compiled.ExportedMemories() {
		most = max(most, uint64(m.Min())*uint64(limits.WasmPageSize))
	}
	return most
}

// initialMemoryFits reports whether a module's initial memory of need bytes
// fits the limit. A call may run under a lower limit than the one checked
// at upload.
func initialMemoryFits(need uint64, limit int64) error {
	if need > uint64(limit) {
		return fmt.Errorf("the module's initial memory of %s is over the memory limit of %s", limits.FormatSize(int64(need)), limits.FormatSize(limit))
	}
	return nil
}
