package runtime

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"runtime/debug"
	"sync"
	"syscall"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/subako/subako-runner/fsmount"
	"github.com/subako/subako-runner/hostmod/subakohttp"
	"github.com/subako/subako-runner/internal/sandbox"
	"github.com/subako/subako-runner/internal/worker"
	"github.com/subako/subako-runner/limits"
)

// ServeWorker turns this process into a worker when a Runtime of
// IsolationWorkers started it as one, and then never returns: it exits
// when its parent closes the channel. In any other process it returns at
// once, doing nothing. Call it first thing in main (and in TestMain), before
// anything else starts: the re-exec pattern.
//
//	func main() {
//		runtime.ServeWorker()
//		... // the embedder's program
//	}
func ServeWorker() {
	ch, ok := worker.Channel()
	if !ok {
		return
	}
	if err := serveWorker(ch); err != nil && !errors.Is(err, syscall.ECONNRESET) {
		// A reset is the parent closing with frames unread: its close, not
		// a failure worth a line in its log.
		fmt.Fprintln(os.Stderr, "subako worker:", err)
		os.Exit(2)
	}
	os.Exit(0)
}

// serveWorker is a worker's life: the sandbox first, before anything is
// read from the channel, then a runtime of its own serving the parent's
// requests until the channel closes.
func serveWorker(ch *os.File) error {
	// A worker is the process GCPercent is for: many small calls, a small
	// heap of its own. The parent's GOGC, when set, came with it.
	if _, set := os.LookupEnv("GOGC"); !set {
		debug.SetGCPercent(GCPercent)
	}
	var env workerEnv
	if err := json.Unmarshal([]byte(os.Getenv(workerConfigEnv)), &env); err != nil {
		return fmt.Errorf("%s: %v", workerConfigEnv, err)
	}
	rw := append([]string{env.TempDir}, env.ReadWrite...)
	if env.CacheDir != "" {
		rw = append(rw, env.CacheDir)
	}
	sc := sandbox.Config{ReadOnly: env.ReadOnly, ReadWrite: rw}
	testSandboxKnobs(&sc)
	rep, err := sandbox.Enter(sc)
	if err != nil {
		return fmt.Errorf("entering the sandbox: %w", err)
	}
	report := SandboxReport{Workers: true, NoNewPrivs: rep.NoNewPrivs, Seccomp: rep.Seccomp, SeccompSyscalls: rep.SeccompSyscalls,
		Landlock: rep.Landlock, LandlockNet: rep.LandlockNet, Rlimits: rep.Rlimits, Missing: rep.Missing}
	ctx := context.Background()
	w := &workerServer{pkgs: map[uint64]*Package{}, checked: map[uint64]*Checked{}}
	lim := env.Limits
	cfg := Config{
		Logger:                 zap.New(&forwardCore{w: w, level: zapcore.Level(env.LogLevel), stderr: zapcore.NewCore(zapcore.NewJSONEncoder(zap.NewProductionEncoderConfig()), zapcore.Lock(os.Stderr), zap.WarnLevel)}),
		Limits:                 &lim,
		CompilationCacheDir:    env.CacheDir,
		StrictCompilationCache: env.StrictCache,
		TempDir:                env.TempDir,
		MaxInstances:           -1, // the parent admits
		CompilationWorkers:     env.CompilationWorkers,
		Observer:               workerObserver{w: w, instances: env.Instances},
	}
	if env.Trace {
		cfg.Trace = func(e TraceEvent) { w.event(wireTrace, wireTraceMsg{Event: e}) }
	}
	if env.Progress {
		cfg.Progress = func(e ProgressEvent) { w.event(wireProgress, wireProgressMsg{Event: e}) }
	}
	if w.rt, err = New(ctx, cfg); err != nil {
		return err
	}
	defer w.rt.Close(ctx)
	w.applyTestKnobs()
	hello := encodeWire(wireReply, report)
	return worker.Serve(ctx, ch, hello, w.handle)
}

// workerServer is the worker's side: its runtime and the packages and
// checked modules it holds for the parent, by handle.
type workerServer struct {
	rt *Runtime

	mu      sync.Mutex
	next    uint64
	pkgs    map[uint64]*Package
	checked map[uint64]*Checked
	events  *worker.Stream // the parent's events stream, if it opened one
	seq     uint64         // the last wireSync sent on it
	sent    uint64         // events sent on it
	synced  uint64         // sent, as the last wireSync counted it
}

// syncEvents returns the number of a wireSync on the events stream that
// follows every event sent so far, sending a new one only when an event
// went out since the last: the parent waits for its events stream to
// reach it before it takes the answer that carries it. 0 when no event
// was ever sent (or there is no events stream): nothing to wait for.
func (w *workerServer) syncEvents() uint64 {
	w.mu.Lock()
	s := w.events
	if s == nil || w.sent == w.synced {
		seq := w.seq
		w.mu.Unlock()
		return seq
	}
	w.seq++
	seq := w.seq
	w.synced = w.sent
	w.mu.Unlock()
	if s.Send(encodeWire(wireSync, wireSeq(seq))) != nil {
		return 0
	}
	return seq
}

// event sends one event on the events stream; without one it is dropped.
// It counts once sent, so that a wireSync that counts it follows it.
func (w *workerServer) event(kind wireKind, v any) {
	w.mu.Lock()
	s := w.events
	w.mu.Unlock()
	if s != nil && s.Send(encodeWire(kind, v)) == nil {
		w.mu.Lock()
		w.sent++
		w.mu.Unlock()
	}
}

// workerObserver forwards instance starts and ends (the parent's gauge);
// uploads and calls are reported by the parent itself.
type workerObserver struct {
	w         *workerServer
	instances bool
}

func (o workerObserver) Upload(context.Context, UploadEvent) {}
func (o workerObserver) Call(ctx context.Context, e CallEvent) {
	if sink, ok := ctx.Value(eventSinkKey{}).(*CallEvent); ok {
		*sink = e
	}
}
func (o workerObserver) InstanceStarted(context.Context) {
	if o.instances {
		o.w.event(wireInstance, wireInstanceMsg{Started: true})
	}
}
func (o workerObserver) InstanceEnded(context.Context) {
	if o.instances {
		o.w.event(wireInstance, wireInstanceMsg{Started: false})
	}
}

// soonAfter is how long into a call the worker tells the parent that the
// guest has ended (wireSoon): once the parent's reader has stopped
// polling for the answer and waits in the kernel, a little before.
const soonAfter = worker.AnswerPolled - 200*time.Microsecond

// eventSinkKey marks the context of a call whose CallEvent the handler
// wants (its timings travel back to the parent).
type eventSinkKey struct{}

func (w *workerServer) handle(ctx context.Context, header []byte, s *worker.Stream) {
	reply, err := w.serve(ctx, header, s)
	var last [][]byte
	if seq := w.syncEvents(); seq != 0 {
		last = append(last, encodeWire(wireSync, wireSeq(seq)))
	}
	if err != nil {
		last = append(last, encodeWire(wireError, failureOf(err)))
	} else if reply != nil {
		last = append(last, reply)
	}
	s.SendLast(last...)
	if k, _ := wireKindOf(header); k == wireLoad || k == wireOpen || k == wireValidate || k == wireDiscover {
		// A compilation leaves tens of MiB of garbage (the SDK's module:
		// hundreds) that the collector, at the high GOGC a worker runs
		// with, would keep resident until much later: what a worker costs
		// at rest is its code and packages, not its last upload's garbage.
		// Off the answer's path, and off this goroutine's: a handler
		// returns right after SendLast (the next request may be waiting
		// for it).
		go debug.FreeOSMemory()
	}
}

func (w *workerServer) serve(ctx context.Context, header []byte, s *worker.Stream) ([]byte, error) {
	kind, err := wireKindOf(header)
	if err != nil {
		return nil, err
	}
	switch kind {
	case wireEvents:
		s.SetBackground()
		w.mu.Lock()
		w.events = s
		w.mu.Unlock()
		// The parent starts nothing on this worker before this answer: no
		// event of the work it starts next is sent before the stream is
		// known here.
		s.Send(encodeWire(wireSync, wireSeq(0)))
		<-ctx.Done()
		return nil, nil
	case wireLoad:
		var req wirePath
		if err := decodeWire(header, kind, &req); err != nil {
			return nil, err
		}
		p, err := w.rt.Load(ctx, req.Path)
		if err != nil {
			return nil, err
		}
		return w.keepPackage(p)
	case wireOpen:
		var req wireOpenReq
		if err := decodeWire(header, kind, &req); err != nil {
			return nil, err
		}
		a, err := parseArtifact(req.Artifact, req.Metered)
		if err != nil {
			return nil, err
		}
		p, err := w.rt.Open(ctx, a, req.Path)
		if err != nil {
			return nil, err
		}
		return w.keepPackage(p)
	case wireValidate:
		var req wirePath
		if err := decodeWire(header, kind, &req); err != nil {
			return nil, err
		}
		c, err := w.rt.Validate(ctx, req.Path)
		if err != nil {
			return nil, err
		}
		w.mu.Lock()
		w.next++
		h := w.next
		w.checked[h] = c
		w.mu.Unlock()
		return encodeWire(wireReply, wireChecked{Handle: h, Hash: c.Hash, Dir: c.Source.Dir, Manifest: c.Source.Manifest,
			HasAssets: c.Source.HasAssets, Module: c.Source.Module, Imports: c.Imports()}), nil
	case wireDiscover:
		var req wireHandleReq
		if err := decodeWire(header, kind, &req); err != nil {
			return nil, err
		}
		w.mu.Lock()
		c := w.checked[req.Handle]
		w.mu.Unlock()
		if c == nil {
			return nil, fmt.Errorf("no checked module %d in this worker", req.Handle)
		}
		p, err := w.rt.Discover(ctx, c, req.Path)
		if err != nil {
			return nil, err
		}
		return w.keepPackage(p)
	case wireRelease:
		var req wireHandleReq
		if err := decodeWire(header, kind, &req); err != nil {
			return nil, err
		}
		w.mu.Lock()
		p, c := w.pkgs[req.Handle], w.checked[req.Handle]
		delete(w.pkgs, req.Handle)
		delete(w.checked, req.Handle)
		w.mu.Unlock()
		if p != nil {
			p.Close(ctx)
		}
		if c != nil {
			c.Close(ctx)
		}
		return encodeWire(wireReply, nil), nil
	case wireCall, wireProbe:
		var req wireCallReq
		if err := decodeWire(header, kind, &req); err != nil {
			return nil, err
		}
		w.mu.Lock()
		p := w.pkgs[req.Handle]
		w.mu.Unlock()
		if p == nil {
			return nil, fmt.Errorf("no package %d in this worker", req.Handle)
		}
		creq := CallRequest{Tool: req.Tool, Arguments: req.Arguments, Tmp: req.Tmp, Data: req.Data, Skills: req.Skills, Limits: req.Limits, lazyTmp: req.LazyTmp, forParent: true}
		if req.Network {
			creq.exchange = streamExchange(s, nil)
		}
		started := time.Now()
		creq.guestEnded = func() {
			// Past soonAfter the parent's reader waits in the kernel:
			// this frame wakes it while the instance ends.
			if time.Since(started) > soonAfter {
				s.Send(encodeWire(wireSoon, nil))
			}
		}
		if kind == wireProbe {
			return w.probe(ctx, p, req, creq)
		}
		var event CallEvent
		res, err := p.Call(context.WithValue(ctx, eventSinkKey{}, &event), creq)
		if err != nil {
			return nil, err
		}
		return encodeWire(wireReply, wireResult{Result: res.Result, Crash: res.Crash, Stats: res.Stats, Reuse: res.reuse,
			Timing: wireTiming{InstanceStart: event.InstanceStart, Instantiate: event.Instantiate, Run: event.Run}}), nil
	case wireCommand:
		return w.command(ctx, header, s)
	}
	return w.serveExtra(ctx, kind, header)
}

func (w *workerServer) probe(ctx context.Context, p *Package, req wireCallReq, creq CallRequest) ([]byte, error) {
	msgs := make([]json.RawMessage, len(req.Messages))
	for i, m := range req.Messages {
		msgs[i] = m
	}
	pr, err := p.Probe(ctx, Probe{Messages: msgs, Discovery: req.Discovery}, creq)
	if err != nil {
		return nil, err
	}
	out := wireResult{Crash: pr.Crash, Stats: pr.Stats, Notifs: pr.Notifications, ExitAfter: pr.ExitAfterClose, Stderr: pr.Stderr}
	for _, m := range pr.Responses {
		out.Responses = append(out.Responses, toWireMessage(m))
	}
	return encodeWire(wireReply, out), nil
}

// keepPackage holds p under a new handle and describes it for the parent.
func (w *workerServer) keepPackage(p *Package) ([]byte, error) {
	a := p.Artifact()
	doc, err := json.Marshal(a)
	if err != nil {
		p.Close(context.Background())
		return nil, err
	}
	w.mu.Lock()
	w.next++
	h := w.next
	w.pkgs[h] = p
	w.mu.Unlock()
	d := p.discovery
	return encodeWire(wireReply, wirePackage{Handle: h, Artifact: doc, Metered: a.Metered, Opened: p.Opened, Imports: p.Imports(),
		Discovery: wireDiscovery{Pages: d.Pages, Notifications: d.Notifications, Duration: d.Duration, Stderr: d.Stderr, MemoryBytes: d.MemoryBytes, FuelUsed: d.FuelUsed}}), nil
}

// streamExchange is the worker's side of subako_http: each request
// document goes to the parent on the call's stream, with the write budget
// as the worker knows it; the parent's answer is the response document
// and what its file output charged, which the worker charges too. replies,
// when set, is where another goroutine reading the stream delivers the
// answers (a command's stream also carries stdin).
func streamExchange(s *worker.Stream, replies <-chan []byte) func(ctx context.Context, doc []byte, b *limits.WriteBudget) []byte {
	return func(ctx context.Context, doc []byte, b *limits.WriteBudget) []byte {
		if err := s.Send(encodeWire(wireHTTP, wireHTTPMsg{Doc: doc, Used: b.Used(), Entries: b.Entries(), LinkBytes: b.LinkBytes()})); err != nil {
			return httpHostFailure(err)
		}
		var m []byte
		var err error
		if replies != nil {
			var ok bool
			select {
			case m, ok = <-replies:
				if !ok {
					err = io.EOF
				}
			case <-ctx.Done():
				err = ctx.Err()
			}
		} else {
			m, err = s.Recv()
		}
		if err != nil {
			return httpHostFailure(err)
		}
		var r wireHTTPMsg
		if err := decodeWire(m, wireHTTPReply, &r); err != nil {
			return httpHostFailure(err)
		}
		if r.Used > 0 {
			b.Reserve(r.Used)
		}
		for range min(r.Entries, 1<<20) {
			b.ReserveEntry(0)
		}
		return r.Doc
	}
}

// httpHostFailure is the response document of a request the parent could
// not be asked: the guest sees a failed request, never a hang.
func httpHostFailure(err error) []byte {
	return (&subakohttp.Error{Kind: subakohttp.KindConnection, Message: "the host could not perform the request: " + err.Error()}).Document()
}

// command runs a RunCommand the parent asked for, its stdio over the
// stream.
func (w *workerServer) command(ctx context.Context, header []byte, s *worker.Stream) ([]byte, error) {
	var req wireCommandReq
	if err := decodeWire(header, wireCommand, &req); err != nil {
		return nil, err
	}
	stdinR, stdinW := io.Pipe()
	replies := make(chan []byte, 1)
	go func() { // the stream's reader: stdin chunks and HTTP answers
		defer close(replies)
		for {
			m, err := s.Recv()
			if err != nil {
				stdinW.CloseWithError(err)
				return
			}
			k, _ := wireKindOf(m)
			switch k {
			case wireStdin:
				var chunk []byte
				if decodeWire(m, wireStdin, &chunk) != nil || len(chunk) == 0 {
					stdinW.Close()
					continue
				}
				stdinW.Write(chunk)
			case wireHTTPReply:
				replies <- m
			}
		}
	}()
	cmd := Command{Args: req.Args, Env: req.Env, Limits: &req.Limits,
		Stdout: streamWriter{s, wireStdout}, Stderr: streamWriter{s, wireStderr}}
	if req.HasStdin {
		cmd.Stdin = stdinR
	}
	for _, m := range req.Mounts {
		cmd.Mounts = append(cmd.Mounts, fsmount.Mount{Guest: m.Guest, Host: m.Host, ReadOnly: m.ReadOnly})
	}
	if req.Network {
		cmd.exchange = streamExchange(s, replies)
	}
	res, err := w.rt.RunCommand(ctx, req.Path, cmd)
	stdinR.Close()
	if err != nil {
		return nil, err
	}
	return encodeWire(wireReply, wireResult{Crash: res.Crash, Stats: res.Stats, ExitCode: res.ExitCode}), nil
}

// streamWriter sends what the guest writes as messages of one kind.
type streamWriter struct {
	s    *worker.Stream
	kind wireKind
}

func (sw streamWriter) Write(p []byte) (int, error) {
	if err := sw.s.Send(encodeWire(sw.kind, p)); err != nil {
		return 0, err
	}
	return len(p), nil
}

// failureOf is err as the parent can rebuild it.
func failureOf(err error) wireFailure {
	f := wireFailure{Kind: "other", Message: err.Error()}
	var rej *RejectedError
	var cerr *CallError
	var lerr *LinkError
	switch {
	case errors.As(err, &rej):
		f.Kind, f.Rejections, f.Crash = "rejected", rej.Rejections, rej.Crash
	case errors.As(err, &cerr):
		f.Kind, f.Code, f.Message = "call", cerr.Code, cerr.Message
	case errors.As(err, &lerr):
		f.Kind, f.Path, f.Rejections = "link", lerr.Path, lerr.Problems
	case errors.Is(err, ErrClosed):
		f.Kind = "closed"
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		f.Kind = "canceled"
	case errors.Is(err, fs.ErrPermission):
		f.Message += " (a worker process may read only the directories of WorkerConfig.ReadOnly and ReadWrite: add the package's, or the volume's, there)"
	}
	return f
}

// forwardCore is a worker runtime's log: its entries go to the parent's
// logger over the events stream (module stderr at debug, the runtime's own
// warnings), and to stderr at warn while there is no events stream (the
// pool logs a worker's stderr).
type forwardCore struct {
	w      *workerServer
	level  zapcore.Level
	fields []zapcore.Field
	stderr zapcore.Core
}

func (c *forwardCore) Enabled(l zapcore.Level) bool { return l >= c.level || c.stderr.Enabled(l) }

func (c *forwardCore) With(fields []zapcore.Field) zapcore.Core {
	return &forwardCore{w: c.w, level: c.level, fields: append(append([]zapcore.Field(nil), c.fields...), fields...), stderr: c.stderr.With(fields)}
}

func (c *forwardCore) Check(e zapcore.Entry, ce *zapcore.CheckedEntry) *zapcore.CheckedEntry {
	if c.Enabled(e.Level) {
		return ce.AddCore(e, c)
	}
	return ce
}

func (c *forwardCore) Write(e zapcore.Entry, fields []zapcore.Field) error {
	c.w.mu.Lock()
	s := c.w.events
	c.w.mu.Unlock()
	if s == nil || e.Level < c.level {
		if c.stderr.Enabled(e.Level) {
			return c.stderr.Write(e, fields)
		}
		return nil
	}
	enc := zapcore.NewMapObjectEncoder()
	for _, f := range append(append([]zapcore.Field(nil), c.fields...), fields...) {
		f.AddTo(enc)
	}
	doc, err := json.Marshal(enc.Fields)
	if err != nil {
		return err
	}
	return s.Send(encodeWire(wireLog, wireLogMsg{Level: e.Level, Message: e.Message, Fields: doc}))
}

func (c *forwardCore) Sync() error { return nil }
