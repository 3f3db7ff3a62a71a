package instance

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/tetratelabs/wazero/sys"
	"go.uber.org/zap"

	"github.com/subako/subako-runner/protocol"
	"github.com/subako/subako-runner/wasi"
)

// Session drives one module instance over stdio: it writes one request at
// a time into stdin, keeps stdin open until that request's response
// arrived, and classifies every stdout line as it is written. The stdout
// callback runs on the guest's goroutine inside fd_write, so a protocol
// violation ends the instance before it can write anything more.
type Session struct {
	in    *Instance
	log   *zap.Logger
	split *protocol.LineSplitter

	done      chan error // the instance's end, sent once
	responses chan protocol.Message
	exited    bool
	exitErr   error
	// canceled is set when the caller's context ended the instance: the
	// run says nothing about the module, and the entry point returns this
	// error instead of a verdict. Written before done is sent.
	canceled error
	// exitWait is the time from closing stdin to the instance's end, as
	// Finish measured it.
	exitWait time.Duration

	// run runs the instance to its end; nil when it could not start (the
	// crash is recorded). Start runs it on a goroutine of its own, RunHere
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
		over  bool        // RunHere returned
		timer *time.Timer // logs an instance slow to stop after its context ended
	}

	mu            sync.Mutex
	pending       string // Key of the outstanding request's id; "" when none
	answered      map[string]bool
	crash         *Crash
	notifications int
}

// NewSession waits for the instance's turn and prepares it without
// starting it: requests posted before Start or RunHere are in stdin when
// the guest first reads. The caller must then start it (Start or RunHere),
// end it (Finish or Abort) and Close it. An error is Start's.
func (eng *Engine) NewSession(ctx context.Context, spec Spec) (*Session, error) {
	s := &Session{
		log:       spec.Log,
		done:      make(chan error, 1),
		responses: make(chan protocol.Message, 1),
		answered:  map[string]bool{},
	}
	lim := spec.Limits
	s.split = protocol.NewLineSplitter(lim.StdoutLine, lim.StdoutTotal, s.onLine)
	spec.Stdin, spec.Stdout, spec.Session = wasi.NewStdin(), stdoutWriter{s}, true
	in, err := eng.Start(ctx, spec)
	if err != nil {
		return nil, err
	}
	s.in = in
	if err := InitialMemoryFits(spec.InitialMemory, lim.Memory); err != nil {
		// wazero cannot start an instance whose initial memory the allocator
		// refuses, so the run ends here, as the module would at its start.
		s.crash = in.newCrash(ReasonOutOfMemory, err.Error())
		s.exited = true
		in.wasi.Close()
		in.release()
		return s, nil
	}
	s.run = func() {
		err := in.runGuest()
		// A trailing partial line is a protocol line too; deliver it before
		// reporting the exit, so a final answer without "\n" still counts.
		// An instance the host ended was cut off mid-write: its last bytes
		// are not a line it finished, and the reason it was ended stands.
		if in.cause() == nil {
			if ferr := s.split.Close(); ferr != nil {
				s.failFrom(ferr)
			}
		}
		// The caller's context ended the run unless the module had already
		// broken a rule (its crash stands) or the host ended it itself.
		s.mu.Lock()
		crashed := s.crash != nil
		s.mu.Unlock()
		if !crashed {
			s.canceled = in.Interrupted(err)
		}
		in.closeUp(err)
		s.done <- err
		in.release() // after the end is reported: the host's work, not the guest's
	}
	return s, nil
}

// Instance is the session's instance, for its usage once it has ended.
func (s *Session) Instance() *Instance { return s.in }

// Start runs the instance on a goroutine of its own: the driver then
// talks to it request by request.
func (s *Session) Start() {
	if s.run != nil {
		go s.run()
	}
}

// RunHere runs the instance on the caller's goroutine, to its end: for a
// session whose requests are all posted beforehand, the last with
// closeOnAnswer, so nothing needs the driver while the guest runs. The
// guest's goroutine is then one the caller has already grown, and no
// goroutine hands the call to another. The instance's context still ends
// it (deadline, exit timer, the caller's cancellation); an instance slow
// to stop after that is logged once the grace has passed, as awaitEnd does.
func (s *Session) RunHere() {
	if s.run == nil {
		return
	}
	stopWatch := context.AfterFunc(s.in.ctx, func() {
		s.watch.Lock()
		defer s.watch.Unlock()
		if !s.watch.over {
			s.watch.timer = time.AfterFunc(s.in.eng.grace, s.logSlowStop)
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

func (s *Session) logSlowStop() {
	s.log.Error("module instance did not stop after its context ended; waiting for it (a host function is not honouring the context)", zap.Duration("grace", s.in.eng.grace))
}

// Request sends one request and waits for its response. A nil *Crash means
// msg is a successful, complete response.
func (s *Session) Request(method string, params map[string]any) (protocol.Message, *Crash) {
	if crash := s.Post(method, params, false); crash != nil {
		return protocol.Message{}, crash
	}
	return s.Await(method)
}

// Post writes one request into stdin without waiting for its response;
// Await waits for it. With last set, stdin closes the moment the answer
// arrives (closeOnAnswer). Posting before the instance starts is how a
// call hands the guest its request with no wake-up in between.
func (s *Session) Post(method string, params map[string]any, last bool) *Crash {
	if s.exited {
		return s.classifyEnd(true)
	}
	id := newRequestID()
	line, err := protocol.EncodeRequest(id, method, params, s.in.eng.client)
	if err != nil {
		// Only the host's own parameters go in here; a failure is a bug.
		s.Abort()
		return s.in.newCrash(protocol.CodeInvalidResult, "the host could not encode its request: "+err.Error())
	}
	s.mu.Lock()
	s.closeOnAnswer = last
	s.mu.Unlock()
	return s.write(line, id.Key())
}

// Await waits for the answer to the posted request and judges it.
func (s *Session) Await(method string) (protocol.Message, *Crash) {
	msg, crash := s.wait()
	if crash != nil {
		return msg, crash
	}
	return s.checkResponse(method, msg)
}

// Send writes one line to stdin and, when pending is not empty, waits for
// the response to the request whose id has that Key. It does not judge the
// response: request does, and a probe leaves that to its caller.
func (s *Session) Send(line []byte, pending string) (protocol.Message, *Crash) {
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
func (s *Session) write(line []byte, pending string) *Crash {
	s.mu.Lock()
	s.pending = pending
	s.mu.Unlock()
	s.in.trace.event(TraceSend, line) // before the write: the answer may come before Write returns
	if _, err := s.in.stdin.Write(line); err != nil {
		return s.FailNow(ReasonExitedBeforeResponse, "the module closed its stdin before the request was written")
	}
	return nil
}

// wait waits for the response to the request in flight. An answer that
// has arrived wins over an end that came after it (an instance run by
// RunHere has ended before wait starts, and select picks at random among
// what is ready).
func (s *Session) wait() (protocol.Message, *Crash) {
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
	case <-s.in.ctx.Done():
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
func (s *Session) awaitEnd() {
	if s.exited {
		return
	}
	grace := time.NewTimer(s.in.eng.grace)
	defer grace.Stop()
	select {
	case err := <-s.done:
		s.exited, s.exitErr = true, err
		return
	case <-grace.C:
	}
	s.log.Error("module instance did not stop after its context ended; waiting for it (a host function is not honouring the context)", zap.Duration("grace", s.in.eng.grace))
	err := <-s.done
	s.exited, s.exitErr = true, err
}

// Interrupted returns the caller's context error when that context ended
// the instance, and nil when the run was the module's own. Call it once
// the session is over (after Finish or Abort).
func (s *Session) Interrupted() error { return s.canceled }

func (s *Session) checkResponse(method string, msg protocol.Message) (protocol.Message, *Crash) {
	if msg.Kind == protocol.KindErrorResponse {
		perr := protocol.ErrJSONRPC(msg.Error)
		text := fmt.Sprintf("answering %s, %s", method, perr.Message)
		if !strings.Contains(perr.Message, "isError") {
			text += " (a failure the model should read must be a result with \"isError\": true)"
		}
		return msg, s.FailNow(perr.Code, text)
	}
	if err := protocol.CheckComplete(msg.Result); err != nil {
		return msg, s.FailNow(protocol.CodeResultNotComplete, ErrMessage(err))
	}
	return msg, nil
}

// Finish closes stdin (unless the answer closed it already) and waits for
// the module to exit with code 0. It returns the run's crash, if any
// (including a crash recorded earlier).
func (s *Session) Finish() *Crash {
	defer s.in.stop()
	defer s.stopExitTimer()
	s.closeStdin()
	if !s.exited {
		select {
		case err := <-s.done:
			s.exited, s.exitErr = true, err
		case <-s.in.ctx.Done(): // the exit timer, the deadline or the caller
			s.awaitEnd()
		}
	}
	s.exitWait = s.measureExitWait()
	return s.classifyEnd(false)
}

// closeStdin closes stdin once, and arms the exit rule: an instance still
// running ExitTimeout later is ended as exit_timeout. It runs on the
// driver's goroutine (Finish) or on the guest's (onLine, closeOnAnswer).
func (s *Session) closeStdin() {
	s.mu.Lock()
	if !s.closedAt.IsZero() {
		s.mu.Unlock()
		return
	}
	s.closedAt = time.Now()
	s.mu.Unlock()
	// Not under the lock: a Trace function is the embedder's code.
	s.in.trace.event(TraceClose, nil) // before closing: the exit may be traced before CloseWrite returns
	s.in.stdin.CloseWrite()
	timer := time.AfterFunc(s.in.lim.ExitTimeout, func() { s.in.kill(errExitTimeout) })
	s.mu.Lock()
	s.exitTimer = timer
	s.mu.Unlock()
}

func (s *Session) stopExitTimer() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.exitTimer != nil {
		s.exitTimer.Stop()
	}
}

// ExitWait is the time from closing stdin to the instance's end, as
// Finish measured it; zero when the instance ended before stdin closed,
// or the session did not finish (it was aborted).
func (s *Session) ExitWait() time.Duration { return s.exitWait }

// measureExitWait is ExitWait, once the instance has ended.
func (s *Session) measureExitWait() time.Duration {
	s.mu.Lock()
	closed := s.closedAt
	s.mu.Unlock()
	if closed.IsZero() || s.in.Ended.IsZero() || !s.in.Ended.After(closed) {
		return 0
	}
	return s.in.Ended.Sub(closed)
}

// Abort ends the instance after a crash the driver found (or a host error),
// and waits for it to be gone. It is safe to call again, and after Finish.
func (s *Session) Abort() {
	defer s.in.stop()
	defer s.stopExitTimer()
	if !s.exited {
		s.in.kill(errCrashed)
		s.in.stdin.CloseWrite()
		s.awaitEnd()
	}
}

// classifyEnd turns the instance's end into a crash, or nil for a clean
// exit. waiting says whether a request was still unanswered.
func (s *Session) classifyEnd(waiting bool) *Crash {
	s.mu.Lock()
	crash := s.crash
	s.mu.Unlock()
	if crash != nil {
		return crash
	}
	err := s.exitErr
	cause := s.in.cause()
	if err != nil && errors.Is(cause, errExitTimeout) {
		return s.in.newCrash(ReasonExitTimeout, fmt.Sprintf("the module was still running %v after its stdin closed; exit with code 0 at end of input", s.in.lim.ExitTimeout))
	}
	if c := s.in.EndCrash(err); c != nil {
		return c
	}
	var exit *sys.ExitError
	isExit := errors.As(err, &exit)
	switch {
	case waiting:
		code := uint32(0)
		if isExit {
			code = exit.ExitCode()
		}
		return s.in.newCrash(ReasonExitedBeforeResponse, fmt.Sprintf("the module exited with code %d before answering the request", code))
	case isExit:
		return s.in.newCrash(ReasonExitCode, fmt.Sprintf("the module exited with code %d; it must exit with code 0 when stdin closes", exit.ExitCode()))
	}
	return nil
}

// onLine classifies one stdout line; it runs inside the guest's fd_write.
// Returning an error ends the instance at once.
func (s *Session) onLine(line []byte) error {
	s.in.trace.event(TraceReceive, line)
	msg, err := protocol.Classify(line)
	if err != nil {
		// protocol's message quotes the line itself, cut short.
		return s.fail(protocol.CodeNotJSONRPC, ErrMessage(err))
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
func (s *Session) fail(reason, message string) error {
	c := s.in.newCrash(reason, message)
	s.mu.Lock()
	if s.crash == nil {
		s.crash = c
	}
	s.mu.Unlock()
	return c
}

// failFrom records a protocol error (e.g. output_too_large from the line
// splitter) as a crash with the same code.
func (s *Session) failFrom(err error) {
	var perr *protocol.Error
	if errors.As(err, &perr) {
		_ = s.fail(perr.Code, perr.Message)
		return
	}
	var crash *Crash
	if !errors.As(err, &crash) {
		_ = s.fail(protocol.CodeNotJSONRPC, err.Error())
	}
}

// FailNow records a crash the driver found and ends the instance.
func (s *Session) FailNow(reason, message string) *Crash {
	_ = s.fail(reason, message)
	s.Abort()
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.crash
}

// stdoutWriter hands the guest's stdout to the line splitter.
type stdoutWriter struct{ s *Session }

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

// Stderr is the tail of the module's stderr.
func (s *Session) Stderr() string { return s.in.stderr.String() }

// Notifications counts the messages without an id the module wrote.
func (s *Session) Notifications() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.notifications
}

// Close aborts the instance if it still runs (a no-op after Finish) and
// closes it: every driver defers it.
func (s *Session) Close() {
	s.Abort()
	s.in.Close()
}

// AwaitGone waits until the ended instance has given its memory back, so
// that a call returns with its memory in the OS. The wait is short (the
// unmap, after the instance reported its end) and bounded, for an instance
// the session had to abandon; false means it was not seen to end.
func (s *Session) AwaitGone() bool {
	s.Abort() // a no-op once the instance ended
	select {
	case <-s.in.gone:
		return true
	default:
	}
	t := time.NewTimer(endGrace)
	defer t.Stop()
	select {
	case <-s.in.gone:
		return true
	case <-t.C:
		return false
	}
}
