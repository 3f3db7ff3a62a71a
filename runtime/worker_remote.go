package runtime

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	goruntime "runtime"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/tetratelabs/wazero"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/subako/subako-runner/internal/compile"
	"github.com/subako/subako-runner/internal/instance"
	"github.com/subako/subako-runner/internal/tmpvol"
	"github.com/subako/subako-runner/internal/worker"
	"github.com/subako/subako-runner/limits"
	"github.com/subako/subako-runner/protocol"
)

// workers is a runtime's pool of worker processes (IsolationWorkers): the
// parent's side of every operation that runs a module.
type workers struct {
	pool   *worker.Pool
	report SandboxReport
	log    *zap.Logger
	grace  time.Duration

	// what the runtime's hooks want from the workers' events streams
	trace    func(TraceEvent)
	progress func(ProgressEvent)
	instObs  InstanceObserver
	logs     bool // the runtime's logger takes entries: the workers send theirs
	limits   limits.Limits

	mu      sync.Mutex
	held    []int64  // estimated resident bytes of the packages each slot holds
	evGen   []uint64 // generation whose events stream is open, per slot
	evClose []func()
	// evSeen is the last wireSync each slot's events stream delivered;
	// evMoved is closed (and replaced) whenever one moves or a stream ends.
	evSeen  []uint64
	evMoved chan struct{}
}

// workerEnvVars are the parent's variables a worker inherits: the Go
// runtime's own settings, never the embedder's secrets (a worker taken
// over by its guest could read its environment).
func workerEnvVars() []string {
	return append([]string{"GOGC", "GOMEMLIMIT", "GOMAXPROCS", "GODEBUG", "GOTRACEBACK", "GOCOVERDIR", "GORACE"}, testEnvVars()...)
}

// workerEnviron is a worker's whole environment: its configuration and
// the Go runtime's settings of this process, nothing else.
func workerEnviron(config []byte) []string {
	vars := []string{workerConfigEnv + "=" + string(config)}
	for _, k := range workerEnvVars() {
		if v, ok := os.LookupEnv(k); ok {
			vars = append(vars, k+"="+v)
		}
	}
	return vars
}

// startWorkers starts the pool of a runtime of IsolationWorkers.
func startWorkers(ctx context.Context, cfg Config, env workerEnv, log *zap.Logger) (*workers, error) {
	wc := cfg.Workers
	exe := wc.Executable
	if exe == "" {
		var err error
		if exe, err = os.Executable(); err != nil {
			return nil, fmt.Errorf("worker executable: %w", err)
		}
	}
	doc, err := json.Marshal(env)
	if err != nil {
		return nil, err
	}
	vars := workerEnviron(doc)
	grace := wc.Grace
	if grace <= 0 {
		grace = time.Second
	}
	mem := wc.MemoryMax
	switch {
	case mem == 0:
		mem = DefaultWorkerMemory
	case mem < 0:
		mem = 0
	}
	w := &workers{log: log, grace: grace, trace: cfg.Trace, progress: cfg.Progress, logs: zapcore.Level(env.LogLevel) <= zapcore.FatalLevel, limits: env.Limits}
	w.instObs, _ = cfg.Observer.(InstanceObserver)
	pool, err := worker.Start(ctx, worker.Config{Path: exe, Args: wc.Args, Env: vars, Count: wc.Count, Grace: grace, MemoryMax: mem, Log: log})
	if err != nil {
		return nil, fmt.Errorf("starting worker processes: %w", err)
	}
	w.pool = pool
	if err := decodeWire(pool.Slot(0).Hello(), wireReply, &w.report); err != nil {
		pool.Close(ctx)
		return nil, fmt.Errorf("the worker's hello: %w", err)
	}
	w.report.Workers = true
	w.report.MemoryGuard = pool.MemoryGuard()
	if mem == 0 {
		w.report.MemoryGuard = "none"
		w.report.Missing = append(w.report.Missing, "memory ceiling: WorkerConfig.MemoryMax is negative (no bound)")
	}
	if wc.RequireSandbox && !w.report.Complete() {
		pool.Close(ctx)
		return nil, fmt.Errorf("the worker sandbox is incomplete on this machine and RequireSandbox is set: %s", strings.Join(w.report.Missing, "; "))
	}
	if len(w.report.Missing) > 0 {
		log.Warn("worker sandbox incomplete: guests run in worker processes without these layers", zap.Strings("missing", w.report.Missing))
	}
	w.held = make([]int64, pool.Len())
	w.evSeen = make([]uint64, pool.Len())
	w.evMoved = make(chan struct{})
	w.evGen = make([]uint64, pool.Len())
	w.evClose = make([]func(), pool.Len())
	return w, nil
}

// close ends the pool: workers exit when their channel closes; those
// still running when ctx ends are killed.
func (w *workers) close(ctx context.Context) error {
	w.mu.Lock()
	for _, c := range w.evClose {
		if c != nil {
			c()
		}
	}
	w.mu.Unlock()
	return w.pool.Close(ctx)
}

// pick is the slot for a new package: the one holding the fewest bytes.
func (w *workers) pick() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	best := 0
	for i, b := range w.held {
		if b < w.held[best] {
			best = i
		}
	}
	return best
}

func (w *workers) hold(slot int, bytes int64) {
	w.mu.Lock()
	w.held[slot] += bytes
	w.mu.Unlock()
}

// open starts an operation on slot, with the events stream of the slot's
// current process open first when the runtime's hooks want events.
func (w *workers) open(ctx context.Context, slot int, header []byte) (*worker.Stream, uint64, error) {
	if w.trace != nil || w.progress != nil || w.instObs != nil || w.logs {
		w.events(ctx, slot)
	}
	return w.pool.Slot(slot).Open(ctx, header)
}

// events opens the events stream of slot's current process if it has
// none: its trace lines, progress and instance counts reach the runtime's
// hooks from there.
func (w *workers) events(ctx context.Context, slot int) {
	s := w.pool.Slot(slot)
	w.mu.Lock()
	if w.evGen[slot] == s.Generation() {
		w.mu.Unlock()
		return
	}
	st, gen, err := s.Open(context.WithoutCancel(ctx), encodeWire(wireEvents, nil))
	if err != nil {
		w.mu.Unlock()
		return
	}
	// Nothing starts on the worker before it knows its events stream: its
	// answer says so (a wireSync of 0). A worker that does not answer in
	// time is killed, and its next operation finds its replacement. Until
	// that answer the stream is an operation, whose answer the channel's
	// reader polls for: a background stream's frames wait for a reader
	// that an operation kicks, or the pool's watchdog (internal/worker).
	st.SetDeadline(time.Now().Add(eventsLag))
	m, err := st.Recv()
	if k, _ := wireKindOf(m); err != nil || k != wireSync {
		w.mu.Unlock()
		st.Close()
		if err == nil {
			s.KillProtocol()
		}
		return
	}
	st.SetDeadline(time.Time{})
	st.SetBackground()
	w.evGen[slot], w.evClose[slot], w.evSeen[slot] = gen, st.Close, 0
	w.mu.Unlock()
	go func() {
		defer w.eventsMoved(slot, gen, 0, true)
		for {
			m, err := st.Recv()
			if err != nil {
				return
			}
			k, err := wireKindOf(m)
			if err != nil || int64(len(m)) > w.maxEvent() {
				s.KillProtocol()
				return
			}
			switch k {
			case wireTrace:
				var e wireTraceMsg
				if decodeWire(m, k, &e) == nil && w.trace != nil {
					w.trace(e.Event)
				}
			case wireProgress:
				var e wireProgressMsg
				if decodeWire(m, k, &e) == nil && w.progress != nil {
					w.progress(e.Event)
				}
			case wireSync:
				var seq wireSeq
				if decodeWire(m, k, &seq) != nil {
					s.KillProtocol()
					return
				}
				w.eventsMoved(slot, gen, uint64(seq), false)
			case wireLog:
				var e wireLogMsg
				if decodeWire(m, k, &e) != nil {
					s.KillProtocol()
					return
				}
				w.relog(slot, e)
			case wireInstance:
				var e wireInstanceMsg
				if decodeWire(m, k, &e) == nil && w.instObs != nil {
					if e.Started {
						w.instObs.InstanceStarted(ctx)
					} else {
						w.instObs.InstanceEnded(ctx)
					}
				}
			default:
				s.KillProtocol()
				return
			}
		}
	}()
}

// maxEvent bounds one message of an events stream: a trace line (at most
// a stdout line) and its envelope. The channel's own bound is the largest
// artifact's; an event past this one is a worker's lie, and it is killed
// before the parent decodes (and logs) it.
func (w *workers) maxEvent() int64 { return w.limits.StdoutLine + 64<<10 }

// relog writes a worker's log entry to the runtime's logger, its fields
// in key order, with the worker's slot.
func (w *workers) relog(slot int, e wireLogMsg) {
	ce := w.log.Check(e.Level, e.Message)
	if ce == nil {
		return
	}
	var fields map[string]any
	json.Unmarshal(e.Fields, &fields)
	keys := slices.Sorted(maps.Keys(fields))
	zf := make([]zap.Field, 0, len(keys)+1)
	for _, k := range keys {
		zf = append(zf, zap.Any(k, fields[k]))
	}
	ce.Write(append(zf, zap.Int("worker", slot))...)
}

// eventsMoved records that slot's events stream of generation gen reached
// seq, or ended, and wakes those waiting for it.
func (w *workers) eventsMoved(slot int, gen, seq uint64, ended bool) {
	w.mu.Lock()
	if w.evGen[slot] == gen {
		if ended {
			w.evGen[slot] = 0
		} else if seq > w.evSeen[slot] {
			w.evSeen[slot] = seq
		}
	}
	close(w.evMoved)
	w.evMoved = make(chan struct{})
	w.mu.Unlock()
}

// eventsLag bounds the wait for the events a worker announced: they were
// sent before the announcement on an ordered stream, so only a worker that
// lies (announcing events it never sends) makes the parent wait that long,
// and it is killed for it.
const eventsLag = 30 * time.Second

// awaitEvents waits until slot's events stream has delivered every event
// before the answer that carried seq (m, a wireSync), or has ended.
func (w *workers) awaitEvents(ctx context.Context, slot int, m []byte) error {
	var s wireSeq
	if err := decodeWire(m, wireSync, &s); err != nil {
		return err
	}
	seq := uint64(s)
	lag := time.NewTimer(eventsLag)
	defer lag.Stop()
	for {
		w.mu.Lock()
		done := w.evGen[slot] == 0 || w.evSeen[slot] >= seq
		moved := w.evMoved
		w.mu.Unlock()
		if done {
			return nil
		}
		select {
		case <-moved:
		case <-ctx.Done():
			return ctx.Err()
		case <-lag.C:
			return fmt.Errorf("%w: events announced (up to %d) were never sent", errMalformed, seq)
		}
	}
}

// recv is an operation's next message, past the wireSync before its
// answer (once the events before it are delivered).
func (w *workers) recv(ctx context.Context, slot int, st *worker.Stream) ([]byte, error) {
	for {
		m, err := st.Recv()
		if err != nil {
			return nil, err
		}
		if k, _ := wireKindOf(m); k != wireSync {
			return m, nil
		}
		if err := w.awaitEvents(ctx, slot, m); err != nil {
			if ctx.Err() == nil {
				w.pool.Slot(slot).KillProtocol()
			}
			return nil, err
		}
	}
}

// remoteRef is what a Checked or Package of a runtime of IsolationWorkers
// holds instead of compiled code: its handle in the worker of its slot.
// A package (whose artifact it keeps) is opened again, from the
// compilation cache, on the fresh process that replaced a dead one.
type remoteRef struct {
	w    *workers
	slot int
	// artifact and path reopen the package; nil for a Checked, which does
	// not survive its worker.
	artifact []byte
	metered  []byte
	path     string
	resident int64

	mu     sync.Mutex
	gen    uint64
	handle uint64
	closed bool
}

// stream starts an operation on the package's worker, opening the package
// again first when its worker was replaced since.
func (r *remoteRef) stream(ctx context.Context, op string, header func(handle uint64) []byte) (*worker.Stream, error) {
	for range 3 {
		r.mu.Lock()
		if r.closed {
			r.mu.Unlock()
			return nil, fmt.Errorf("%s: %w", op, errPackageClosed)
		}
		slot := r.w.pool.Slot(r.slot)
		if slot.Generation() != r.gen {
			if r.artifact == nil {
				r.mu.Unlock()
				return nil, &WorkerError{Op: op, Reason: "replaced", Status: "the worker that checked the module was replaced", Pid: slot.Pid()}
			}
			pkg, gen, err := r.w.call(ctx, r.slot, op, encodeWire(wireOpen, wireOpenReq{Path: r.path, Artifact: r.artifact, Metered: r.metered}))
			if err != nil {
				r.mu.Unlock()
				return nil, err
			}
			var wp wirePackage
			if err := decodeWire(pkg, wireReply, &wp); err != nil {
				r.mu.Unlock()
				slot.KillProtocol()
				return nil, err
			}
			r.gen, r.handle = gen, wp.Handle
		}
		h, gen := r.handle, r.gen
		r.mu.Unlock()
		st, sgen, err := r.w.open(ctx, r.slot, header(h))
		if err != nil {
			return nil, workerErr(op, err)
		}
		if sgen == gen {
			return st, nil
		}
		st.Close() // the worker died in between: open the package again
	}
	return nil, fmt.Errorf("%s: the package's worker keeps being replaced", op)
}

// release gives the worker's handle back (Package.Close, Checked.Close).
func (r *remoteRef) release(ctx context.Context) error {
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return nil
	}
	r.closed = true
	gen, h := r.gen, r.handle
	r.mu.Unlock()
	r.w.hold(r.slot, -r.resident)
	slot := r.w.pool.Slot(r.slot)
	if slot.Generation() != gen {
		return nil // the worker that held it is gone, and the package with it
	}
	_, _, err := r.w.call(ctx, r.slot, "release", encodeWire(wireRelease, wireHandleReq{Handle: h}))
	var werr *WorkerError
	if errors.Is(err, worker.ErrClosed) || errors.Is(err, ErrClosed) || errors.As(err, &werr) {
		// The runtime closed, or the worker died: either way the package
		// went with its worker.
		return nil
	}
	return err
}

// call runs a one-message operation on slot: header, then the worker's
// reply (returned whole) or failure (as the error the caller can inspect).
func (w *workers) call(ctx context.Context, slot int, op string, header []byte) ([]byte, uint64, error) {
	st, gen, err := w.open(ctx, slot, header)
	if err != nil {
		return nil, 0, workerErr(op, err)
	}
	defer st.Close()
	// The parent's clock, a backstop: each step has its own limit in the
	// worker (the compile timeout, discovery's), which ends it first.
	lim := w.limits
	limit := 2 * lim.CompileTimeout
	if k, _ := wireKindOf(header); k == wireLoad {
		limit += lim.DiscoveryTimeout + lim.ExitTimeout
	}
	st.SetDeadline(time.Now().Add(limit))
	stop := context.AfterFunc(ctx, st.Close)
	defer stop()
	m, err := w.recv(ctx, slot, st)
	if err != nil {
		if cerr := canceled(ctx, op); cerr != nil {
			return nil, 0, cerr
		}
		return nil, 0, workerErr(op, err)
	}
	m, err = w.replyOf(slot, m)
	if err != nil {
		return nil, 0, opError(op, err)
	}
	return m, gen, nil
}

// replyOf checks a final message: a reply is returned as it is, a failure
// as its error; anything else is a protocol violation that kills the
// worker.
func (w *workers) replyOf(slot int, m []byte) ([]byte, error) {
	k, err := wireKindOf(m)
	if err == nil && k == wireError {
		var f wireFailure
		if err := decodeWire(m, wireError, &f); err != nil {
			w.pool.Slot(slot).KillProtocol()
			return nil, err
		}
		return nil, f.err()
	}
	if err != nil || k != wireReply {
		w.pool.Slot(slot).KillProtocol()
		return nil, fmt.Errorf("%w: expected a reply", errMalformed)
	}
	return m, nil
}

// err rebuilds the worker's error as the types callers inspect.
func (f wireFailure) err() error {
	switch f.Kind {
	case "rejected":
		return &RejectedError{Rejections: f.Rejections, Crash: f.Crash}
	case "call":
		return &CallError{Code: f.Code, Message: f.Message}
	case "link":
		return &LinkError{Path: f.Path, Problems: f.Rejections}
	case "closed":
		return fmt.Errorf("worker: %w", ErrClosed)
	case "canceled":
		return fmt.Errorf("worker: %s: %w", f.Message, context.Canceled)
	}
	return errors.New("worker: " + f.Message)
}

// opError names op in err, keeping what callers inspect.
func opError(op string, err error) error {
	var rej *RejectedError
	var cerr *CallError
	var lerr *LinkError
	if errors.As(err, &rej) || errors.As(err, &cerr) || errors.As(err, &lerr) {
		return err
	}
	return fmt.Errorf("%s: %w", op, err)
}

// workerErr is the error of an operation whose worker ended.
func workerErr(op string, err error) error {
	var exit *worker.ExitError
	if errors.As(err, &exit) {
		if exit.Reason == worker.ExitClosed {
			return closedError(op)
		}
		return &WorkerError{Op: op, Reason: exit.Reason, Status: exit.Status, Pid: exit.Pid}
	}
	if errors.Is(err, worker.ErrClosed) {
		return closedError(op)
	}
	return fmt.Errorf("%s: %w", op, err)
}

// remotePackage makes the parent's Package of a package the worker of
// slot holds, from the worker's description. What the parent relies on it
// derives itself: the tool list is validated again from the artifact's
// raw tools, the hashes are the artifact's, checked by parseArtifact.
func (rt *Runtime) remotePackage(slot int, gen uint64, m []byte, path string) (*Package, error) {
	r, err := parseRemotePackage(m)
	if err != nil {
		rt.workers.pool.Slot(slot).KillProtocol()
		return nil, err
	}
	wp, a, tools, discover, hash := r.wire, r.artifact, r.tools, r.discover, r.hash
	src := &Source{Manifest: a.Manifest, HasAssets: a.HasAssets}
	if info, err := os.Stat(path); err == nil && info.IsDir() {
		src.Dir = path
	}
	ref := &remoteRef{w: rt.workers, slot: slot, gen: gen, handle: wp.Handle, artifact: wp.Artifact, metered: a.Metered, path: path}
	c := &Checked{Source: src, Hash: hash, sha256Hex: a.ModuleSHA256, metered: a.Metered, remote: ref, imports: wp.Imports}
	d := wp.Discovery
	p := &Package{rt: rt, checked: c, name: a.Name, tools: tools, Opened: wp.Opened,
		discovery: Discovery{Result: discover, Pages: d.Pages, Notifications: d.Notifications, Duration: d.Duration, Stderr: d.Stderr, MemoryBytes: d.MemoryBytes, FuelUsed: d.FuelUsed}}
	// The slot's share is the parent's own estimate, from the metered
	// module it checked: never a number the worker sent.
	ref.resident = p.ResidentBytes()
	rt.workers.hold(slot, ref.resident)
	return p, nil
}

// uploadTries runs one step of an upload in a worker: when the worker
// dies under it, once more on a fresh one (a neighbour's call may have
// taken the memory), and when that one dies too the upload is rejected
// as worker_exited: the module's checks end workers.
func uploadTries[T any](ctx context.Context, op string, try func() (T, error)) (T, error) {
	var zero T
	var werr *WorkerError
	for attempt := 0; ; attempt++ {
		v, err := try()
		if !errors.As(err, &werr) || ctx.Err() != nil {
			return v, err
		}
		if attempt == 1 {
			return zero, &RejectedError{Rejections: []Rejection{{Code: CodeWorkerExited,
				Message: fmt.Sprintf("%s ended its worker process twice (%s, %s): the module crashes the engine, or needs more memory than a worker may have", op, werr.Reason, werr.Status)}}}
		}
	}
}

// remoteDescription is a worker's description of a package it holds, as
// the parent checked it.
type remoteDescription struct {
	wire     wirePackage
	artifact *Artifact
	tools    *protocol.ToolSet
	discover protocol.DiscoverResult
	hash     [32]byte
}

// parseRemotePackage decodes and checks a worker's wirePackage: the
// artifact's layout, integrity and metered hash (parseArtifact), its tool
// list validated again, its module hash. Anything else is malformed.
func parseRemotePackage(m []byte) (*remoteDescription, error) {
	r := &remoteDescription{}
	if err := decodeWire(m, wireReply, &r.wire); err != nil {
		return nil, err
	}
	var err error
	if r.artifact, err = parseArtifact(r.wire.Artifact, r.wire.Metered); err != nil {
		return nil, fmt.Errorf("%w: the worker's artifact: %v", errMalformed, err)
	}
	if r.tools, r.discover, err = r.artifact.restore(); err != nil {
		return nil, fmt.Errorf("%w: %v", errMalformed, err)
	}
	h, err := hex.DecodeString(r.artifact.ModuleSHA256)
	if err != nil || len(h) != len(r.hash) {
		return nil, fmt.Errorf("%w: the module hash %q", errMalformed, r.artifact.ModuleSHA256)
	}
	copy(r.hash[:], h)
	return r, nil
}

// loadRemote is Load's work in a worker: checks, metering, compilation and
// discovery all happen there.
func (rt *Runtime) loadRemote(ctx context.Context, path string) (*Package, error) {
	op := "load " + path
	return uploadTries(ctx, op, func() (*Package, error) {
		slot := rt.workers.pick()
		m, gen, err := rt.workers.call(ctx, slot, op, encodeWire(wireLoad, wirePath{Path: path}))
		if err != nil {
			return nil, err
		}
		return rt.remotePackage(slot, gen, m, path)
	})
}

// openRemote is Open's work in a worker.
func (rt *Runtime) openRemote(ctx context.Context, a *Artifact, path string) (*Package, error) {
	doc, err := json.Marshal(a)
	if err != nil {
		return nil, err
	}
	slot := rt.workers.pick()
	m, gen, err := rt.workers.call(ctx, slot, "open "+path, encodeWire(wireOpen, wireOpenReq{Path: path, Artifact: doc, Metered: a.Metered}))
	if err != nil {
		return nil, err
	}
	return rt.remotePackage(slot, gen, m, path)
}

// validateRemote is Validate's work in a worker; the Checked it returns
// lives as long as that worker does.
func (rt *Runtime) validateRemote(ctx context.Context, path string) (*Checked, error) {
	op := "validate " + path
	return uploadTries(ctx, op, func() (*Checked, error) { return rt.validateOnce(ctx, op, path) })
}

func (rt *Runtime) validateOnce(ctx context.Context, op, path string) (*Checked, error) {
	slot := rt.workers.pick()
	m, gen, err := rt.workers.call(ctx, slot, op, encodeWire(wireValidate, wirePath{Path: path}))
	if err != nil {
		return nil, err
	}
	var wc wireChecked
	if err := decodeWire(m, wireReply, &wc); err != nil {
		rt.workers.pool.Slot(slot).KillProtocol()
		return nil, err
	}
	src := &Source{Dir: wc.Dir, Manifest: wc.Manifest, HasAssets: wc.HasAssets, Module: wc.Module}
	return &Checked{Source: src, Hash: wc.Hash, sha256Hex: hex.EncodeToString(wc.Hash[:]), imports: wc.Imports,
		remote: &remoteRef{w: rt.workers, slot: slot, gen: gen, handle: wc.Handle}}, nil
}

// discoverRemote is Discover's work in the worker that holds c. A worker
// that dies under it is the module's doing or a neighbour's: either way c
// is gone with it, so the verdict is uploadTries' (the caller validates
// again to try again).
func (rt *Runtime) discoverRemote(ctx context.Context, c *Checked, path string) (*Package, error) {
	op := "discover " + path
	p, err := rt.discoverOnce(ctx, c, op, path)
	var werr *WorkerError
	if errors.As(err, &werr) && ctx.Err() == nil {
		return nil, &RejectedError{Rejections: []Rejection{{Code: CodeWorkerExited,
			Message: fmt.Sprintf("%s ended its worker process (%s, %s): the module crashes the engine, or needs more memory than a worker may have", op, werr.Reason, werr.Status)}}}
	}
	return p, err
}

func (rt *Runtime) discoverOnce(ctx context.Context, c *Checked, op, path string) (*Package, error) {
	ref := c.remote
	st, err := ref.stream(ctx, op, func(h uint64) []byte { return encodeWire(wireDiscover, wireHandleReq{Handle: h, Path: path}) })
	if err != nil {
		return nil, err
	}
	defer st.Close()
	st.SetDeadline(time.Now().Add(rt.limits.DiscoveryTimeout + rt.limits.ExitTimeout))
	stop := context.AfterFunc(ctx, st.Close)
	defer stop()
	m, err := rt.workers.recv(ctx, ref.slot, st)
	if err != nil {
		if cerr := canceled(ctx, op); cerr != nil {
			return nil, cerr
		}
		return nil, workerErr(op, err)
	}
	if m, err = rt.workers.replyOf(ref.slot, m); err != nil {
		return nil, opError(op, err)
	}
	return rt.remotePackage(ref.slot, ref.gen, m, path)
}

// workerInstancesPerCPU is how many instances per CPU a runtime of
// IsolationWorkers admits when Config.MaxInstances is 0.
const workerInstancesPerCPU = 4

// newWorkerRuntime finishes New for IsolationWorkers: the parent keeps its
// engine for admission and close (it instantiates no guest), its pool of
// /volume/tmp directories, and starts the workers.
func newWorkerRuntime(ctx context.Context, rt *Runtime, cfg Config, compileWorkers int) (*Runtime, error) {
	volumes, err := tmpvol.Open(cfg.TempDir, rt.log)
	if err != nil {
		return nil, err
	}
	rt.volumes = volumes
	cacheDir := cfg.CompilationCacheDir
	if cacheDir == "" {
		// A replacement worker opens its packages again from the cache: one
		// of the runtime's own when the embedder keeps none.
		cacheDir = filepath.Join(volumes.Dir(), ".compilation-cache")
	}
	if err := os.MkdirAll(cacheDir, 0o700); err != nil {
		volumes.Close()
		return nil, fmt.Errorf("compilation cache: %w", err)
	}
	rt.wz = wazero.NewRuntimeWithConfig(ctx, compile.RuntimeConfig())
	maxInstances := cfg.MaxInstances
	if maxInstances == 0 {
		// A call in flight to a worker spends much of its time on the way
		// there and back, where it holds no CPU: the gate lets more in
		// than there are CPUs, so that the workers' CPUs stay busy.
		maxInstances = workerInstancesPerCPU * goruntime.NumCPU()
	}
	rt.eng = instance.NewEngine(engineConfig(rt.wz, maxInstances, cfg))
	rt.meterings = newMeteringRecords("")
	rt.compiler = compile.New(compile.Config{Runtime: rt.wz, ScratchDir: volumes.Dir(), Workers: compileWorkers, Log: rt.log,
		IsClosed: rt.eng.IsClosed, Closed: ErrClosed, Phase: phase})
	env := workerEnv{Limits: rt.limits, CacheDir: cacheDir, StrictCache: cfg.StrictCompilationCache, TempDir: volumes.Dir(), CompilationWorkers: compileWorkers,
		ReadOnly: cfg.Workers.ReadOnly, ReadWrite: cfg.Workers.ReadWrite,
		Trace: cfg.Trace != nil, Progress: cfg.Progress != nil}
	_, env.Instances = cfg.Observer.(InstanceObserver)
	env.LogLevel = int8(lowestLevel(rt.log))
	if rt.workers, err = startWorkers(ctx, cfg, env, rt.log); err != nil {
		rt.wz.Close(ctx)
		rt.eng.Release()
		volumes.Close()
		return nil, err
	}
	return rt, nil
}

// lowestLevel is the lowest level log takes an entry at; above
// zapcore.FatalLevel when it takes none (zap.NewNop).
func lowestLevel(log *zap.Logger) zapcore.Level {
	for l := zapcore.DebugLevel; l <= zapcore.FatalLevel; l++ {
		if log.Core().Enabled(l) {
			return l
		}
	}
	return zapcore.FatalLevel + 1
}

// Sandbox reports the layers of the process sandbox this runtime's guests
// run under: the zero SandboxReport for IsolationInProcess.
func (rt *Runtime) Sandbox() SandboxReport {
	if rt.workers == nil {
		return SandboxReport{}
	}
	r := rt.workers.report
	r.Missing = append([]string(nil), r.Missing...)
	return r
}
