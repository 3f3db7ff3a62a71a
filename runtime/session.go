package runtime

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/experimental"
	"github.com/tetratelabs/wazero/sys"
	"go.uber.org/zap"

	"github.com/subako/subako-runner/hostmod/subakohttp"
	"github.com/subako/subako-runner/internal/fuel"
	"github.com/subako/subako-runner/internal/text"
	"github.com/subako/subako-runner/limits"
	"github.com/subako/subako-runner/protocol"
	"github.com/subako/subako-runner/wasi"
)

// Reasons the host ends an instance itself; context.Cause tells them apart
// when wazero reports the instance closed by its context.
// endGrace bounds the wait for an instance to stop once its context ended.
const endGrace = 5 * time.Second

var (
	errDeadline    = errors.New("deadline reached")
	errExitTimeout = errors.New("module did not exit after stdin closed")
	errCrashed     = errors.New("module broke the protocol")
)

// instanceConfig is everything one instance needs besides the compiled module.
type instanceConfig struct {
	compiled wazero.CompiledModule
	limits   limits.Limits
	deadline time.Time
	wasi     wasi.Config
	http     *subakohttp.Call
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
	memory *memoryLimit
	fuel   *fuel.Meter
	trace  *sessionTrace // nil unless Config.Trace is set

	ctx  context.Context
	kill context.CancelCauseFunc
	stop context.CancelFunc

	done      chan error // the instance's end, sent once
	responses chan protocol.Message
	exited    bool
	exitErr   error
	started   time.Time
	ended     time.Time // when the instance ended; written before done is sent

	mu            sync.Mutex
	pending       string // Key of the outstanding request's id; "" when none
	answered      map[string]bool
	crash         *Crash
	notifications int
}

// startSession instantiates the module and runs its _start on a new
// goroutine. The caller must call finish (or abort) exactly once.
func (rt *Runtime) startSession(parent context.Context, cfg instanceConfig, log *zap.Logger) *session {
	lim := cfg.limits
	s := &session{
		rt:        rt,
		log:       log,
		lim:       lim,
		stdin:     wasi.NewStdin(),
		stderr:    newStderrTail(lim.StderrTail, log),
		memory:    newMemoryLimit(uint64(lim.Memory)),
		fuel:      fuel.NewMeter(lim.Fuel),
		done:      make(chan error, 1),
		responses: make(chan protocol.Message, 1),
		answered:  map[string]bool{},
		started:   time.Now(),
		trace:     rt.newSessionTrace(),
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

	if err := initialMemoryFits(cfg.compiled, lim.Memory); err != nil {
		// wazero cannot start an instance whose initial memory the allocator
		// refuses, so the run ends here, as the module would at its start.
		s.crash = s.newCrash(CrashOutOfMemory, err.Error())
		s.exited = true
		inst.Close()
		return s
	}
	go func() {
		err := rt.runInstance(ictx, cfg.compiled)
		// A trailing partial line is a protocol line too; deliver it before
		// reporting the exit, so a final answer without "\n" still counts.
		// An instance the host ended was cut off mid-write: its last bytes
		// are not a line it finished, and the reason it was ended stands.
		if context.Cause(ctx) == nil {
			if ferr := s.split.Close(); ferr != nil {
				s.failFrom(ferr)
			}
		}
		inst.Close()
		s.trace.exit(err)
		s.ended = time.Now()
		s.done <- err
	}()
	return s
}

// runInstance instantiates the module (running any start section) and then
// calls _start. wazero reports exit code 0 as success.
func (rt *Runtime) runInstance(ctx context.Context, compiled wazero.CompiledModule) error {
	mod, err := rt.wz.InstantiateModule(ctx, compiled, wazero.NewModuleConfig().WithName("").WithStartFunctions())
	if err != nil {
		return err
	}
	defer mod.Close(context.WithoutCancel(ctx))
	start := mod.ExportedFunction("_start")
	if start == nil {
		return errors.New("module has no _start") // the upload checks make this unreachable
	}
	_, err = start.Call(ctx)
	if m := fuel.FromContext(ctx); m != nil {
		m.Finish(mod) // reads the guest's counter: exact fuel used
	}
	var exit *sys.ExitError
	if errors.As(err, &exit) && exit.ExitCode() == 0 {
		return nil
	}
	return err
}

// request sends one request and waits for its response. A nil *Crash means
// msg is a successful, complete response.
func (s *session) request(method string, params map[string]any) (protocol.Message, *Crash) {
	if s.exited {
		return protocol.Message{}, s.classifyEnd(true)
	}
	id := newRequestID()
	line, err := protocol.EncodeRequest(id, method, params, s.rt.client)
	if err != nil {
		// Only the host's own parameters go in here; a failure is a bug.
		s.abort()
		return protocol.Message{}, s.newCrash(CrashInvalidResult, "the host could not encode its request: "+err.Error())
	}
	msg, crash := s.send(line, id.Key())
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
	s.mu.Lock()
	s.pending = pending
	s.mu.Unlock()
	s.trace.event(TraceSend, line) // before the write: the answer may come before Write returns
	if _, err := s.stdin.Write(line); err != nil {
		return protocol.Message{}, s.failNow(CrashExitedBeforeResponse, "the module closed its stdin before the request was written")
	}
	if pending == "" {
		return protocol.Message{}, nil
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
// prompt; the bound only keeps a host bug from hanging the caller.
func (s *session) awaitEnd() {
	select {
	case err := <-s.done:
		s.exited, s.exitErr = true, err
	case <-time.After(endGrace):
		s.exited, s.exitErr = true, errors.New("the instance did not stop after its deadline")
		s.log.Error("module instance did not stop after its context ended; abandoning it")
	}
}

func (s *session) checkResponse(method string, msg protocol.Message) (protocol.Message, *Crash) {
	if msg.Kind == protocol.KindErrorResponse {
		e := msg.Error
		return msg, s.failNow(CrashJSONRPCError, fmt.Sprintf("the module answered %s with a JSON-RPC error %d: %s (a failure the model should read must be a result with \"isError\": true)", method, e.Code, e.Message))
	}
	if err := protocol.CheckComplete(msg.Result); err != nil {
		return msg, s.failNow(CrashResultNotComplete, err.Error())
	}
	return msg, nil
}

// finish closes stdin and waits for the module to exit with code 0. It
// returns the run's crash, if any (including a crash recorded earlier).
func (s *session) finish() *Crash {
	defer s.stop()
	s.trace.event(TraceClose, nil) // before closing: the exit may be traced before CloseWrite returns
	s.stdin.CloseWrite()
	if !s.exited {
		timer := time.NewTimer(s.lim.ExitTimeout)
		defer timer.Stop()
		select {
		case err := <-s.done:
			s.exited, s.exitErr = true, err
		case <-timer.C:
			s.kill(errExitTimeout)
			s.awaitEnd()
		case <-s.ctx.Done():
			s.awaitEnd()
		}
	}
	return s.classifyEnd(false)
}

// abort ends the instance after a crash the driver found (or a host error),
// and waits for it to be gone. It is safe to call again, and after finish.
func (s *session) abort() {
	defer s.stop()
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
	switch cause := context.Cause(s.ctx); {
	case err == nil:
	case errors.Is(cause, errExitTimeout):
		return s.newCrash(CrashExitTimeout, fmt.Sprintf("the module was still running %v after its stdin closed; exit with code 0 at end of input", s.lim.ExitTimeout))
	case errors.Is(cause, errDeadline):
		return s.newCrash(CrashTimeout, fmt.Sprintf("the module ran out of time (%v)", time.Since(s.started).Round(time.Millisecond)))
	case s.fuel.Exhausted():
		return s.newCrash(CrashOutOfFuel, fmt.Sprintf("the module used its whole fuel budget of %d", s.lim.Fuel))
	}
	var exit *sys.ExitError
	isExit := errors.As(err, &exit)
	if err != nil && s.memory.refused() && (!isExit || exit.ExitCode() != 0) {
		return s.newCrash(CrashOutOfMemory, fmt.Sprintf("the module needed more than its memory limit of %s", limits.FormatSize(s.lim.Memory)))
	}
	switch {
	case err != nil && !isExit:
		return s.newCrash(CrashTrap, "the module trapped: "+text.FirstLine(err.Error()))
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

// onLine classifies one stdout line; it runs inside the guest's fd_write.
// Returning an error ends the instance at once.
func (s *session) onLine(line []byte) error {
	s.trace.event(TraceReceive, line)
	msg, err := protocol.Classify(line)
	if err != nil {
		return s.fail(CrashNotJSONRPC, fmt.Sprintf("stdout is for JSON-RPC messages only, but the module wrote %s: %v", excerpt(line), errMessage(err)))
	}
	switch msg.Kind {
	case protocol.KindNotification:
		s.mu.Lock()
		s.notifications++
		s.mu.Unlock()
		return nil
	case protocol.KindRequest:
		return s.fail(CrashServerRequest, fmt.Sprintf("the module sent a request (%q, id %s); a stateless server sends no requests", msg.Method, msg.ID))
	}
	key := msg.ID.Key()
	s.mu.Lock()
	if msg.Kind == protocol.KindErrorResponse && msg.ID.IsNull() && s.pending != "" {
		// JSON-RPC answers a request it could not read (a parse error) with
		// id null; it is the error answer to the request in flight.
		key = s.pending
	}
	if key != s.pending {
		reason := "was never requested"
		if s.answered[key] {
			reason = "was already answered"
		}
		s.mu.Unlock()
		return s.fail(CrashUnexpectedID, fmt.Sprintf("the module answered id %s, which %s", msg.ID, reason))
	}
	s.pending = ""
	s.answered[key] = true
	s.mu.Unlock()
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
	return &Crash{Reason: reason, Message: message, Stderr: s.stderr.String()}
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
// random (host-contract §3). Integers stay below 2^53 so guests that parse
// JSON numbers as doubles echo them exactly; `check` probes larger ones.
func newRequestID() protocol.ID {
	var b [9]byte
	_, _ = rand.Read(b[:])
	if b[0]&1 == 0 {
		return protocol.StringID("subako-" + hex.EncodeToString(b[1:]))
	}
	return protocol.IntID(int64(binary.LittleEndian.Uint64(b[1:]) >> 11))
}

func excerpt(line []byte) string {
	const max = 120
	if len(line) == 0 {
		return "an empty line"
	}
	s := string(line)
	if len(s) > max {
		s = s[:max] + "…"
	}
	b, _ := json.Marshal(s)
	return string(b)
}

func errMessage(err error) string {
	var perr *protocol.Error
	if errors.As(err, &perr) {
		return perr.Message
	}
	return err.Error()
}

// initialMemoryFits reports whether the module's initial memory fits the
// limit. A call may run under a lower limit than the one checked at upload.
func initialMemoryFits(compiled wazero.CompiledModule, limit int64) error {
	for _, m := range compiled.ExportedMemories() {
		if need := uint64(m.Min()) * uint64(limits.WasmPageSize); need > uint64(limit) {
			return fmt.Errorf("the module's initial memory of %s is over the memory limit of %s", limits.FormatSize(int64(need)), limits.FormatSize(limit))
		}
	}
	return nil
}
