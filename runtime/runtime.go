package runtime

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	goruntime "runtime"
	"sync"

	"github.com/subako/subako-runner/internal/compile"
	"github.com/subako/subako-runner/internal/instance"
	"github.com/subako/subako-runner/internal/tmpvol"

	"github.com/tetratelabs/wazero"
	"go.uber.org/zap"

	"github.com/subako/subako-runner/hostmod/subakohttp"
	"github.com/subako/subako-runner/internal/fuel"
	"github.com/subako/subako-runner/internal/modcheck"
	"github.com/subako/subako-runner/limits"
	"github.com/subako/subako-runner/protocol"
	"github.com/subako/subako-runner/wasi"
)

// Version is the version of subako-runner, sent to modules as
// clientInfo.version.
const Version = "0.1.0"

// ABIVersion is the Subako ABI this runner implements.
const ABIVersion = 1

// GCPercent is the garbage collector's target (GOGC) recommended for a
// process that serves many small calls with a small heap of its own; the
// subako-runner command runs with it unless GOGC is set. Go's default of
// 100 collects such a heap hundreds of times a second, and every
// collection's stop-the-world waits for the goroutines running compiled
// Wasm to reach a host call (docs/embedding.md). The library itself never
// changes process-wide settings.
//
// Experimental: the value follows measurements of this runner and of
// Go's collector, and may change in any release (docs/embedding.md,
// "What may change").
const GCPercent = 800

// Config configures a Runtime. The zero value is ready to use.
type Config struct {
	// Logger receives the host's own logs; nil logs nothing.
	Logger *zap.Logger
	// Limits are the defaults for every load and call; the zero value
	// means limits.Default(). A call may override them.
	Limits *limits.Limits
	// CompilationCacheDir, when set, keeps compiled machine code on disk so
	// that another process loads the same module without recompiling. A
	// cache is an optimisation: one that cannot be used or written when
	// New runs (read-only, full, not a directory) is logged as a warning
	// and the runtime compiles into memory only, unless
	// StrictCompilationCache is set; one that fails later is logged once,
	// and the modules it could not keep are compiled into memory.
	CompilationCacheDir string
	// StrictCompilationCache makes New fail when CompilationCacheDir
	// cannot be used or written, instead of running without it.
	StrictCompilationCache bool
	// Observer, when set, receives one event per upload and per call.
	Observer Observer
	// Progress, when set, is told when a slow step (compilation,
	// discovery) starts and ends, from the goroutine doing it.
	Progress func(ProgressEvent)
	// Trace, when set, receives every line the host writes to a module's
	// stdin and the module writes to its stdout and stderr, and the closing
	// of stdin and the instance's end. It runs synchronously (inside the guest's
	// write for its lines): keep it quick.
	Trace func(TraceEvent)
	// TempDir is where the runtime keeps the /volume/tmp directories it
	// makes for calls, each runtime in a directory of its own; empty means
	// <os.TempDir()>/subako-runner-<uid>. A runtime that starts removes what
	// runtimes that died (killed, crashed) left there (docs/embedding.md).
	TempDir string
	// MaxInstances is how many module instances (calls, probes,
	// discoveries) may run at once; the others wait their turn, and their
	// time limits start when their instance starts. 0 means
	// runtime.NumCPU(), and with IsolationWorkers four times that (a call
	// in flight to a worker holds no CPU on its way there and back); a
	// negative value means no bound.
	MaxInstances int
	// CompilationWorkers is how many goroutines compile one module's
	// functions at once (wazero's experimental.WithCompilationWorkers); 0
	// means runtime.NumCPU(), 1 compiles on the caller's goroutine alone.
	// An upload of a large module is then bounded by the cores, not one.
	//
	// Experimental: it mirrors a wazero option that wazero itself marks
	// experimental, so it may change meaning or go away when wazero's does
	// (docs/embedding.md, "What may change").
	CompilationWorkers int
	// Isolation says where guests run: in this process (the zero value)
	// or in sandboxed worker processes (IsolationWorkers, configured by
	// Workers). docs/embedding.md ("Worker processes") weighs the two.
	Isolation Isolation
	// Workers configures the worker processes of IsolationWorkers.
	Workers WorkerConfig
}

// Runtime loads packages and runs their calls. It owns a wazero runtime
// with the host modules of ABI 1 (our wasi_snapshot_preview1 and
// subako_http) defined once; every instance gets its own state through
// its context.
//
//	rt, err := runtime.New(ctx, runtime.Config{Logger: log})
//	if err != nil { ... }
//	defer rt.Close(ctx)
//
// # Notes
//
//   - A Runtime is safe for concurrent use: load and call from any number
//     of goroutines.
//   - The Runtime keeps no list of the packages loaded through it. Close
//     ends them all the same: their calls return ErrClosed, and their
//     compiled code goes with the runtime's. Package.Close stays safe to
//     call after it, and is what closes a package's /package directory.
type Runtime struct {
	wz       wazero.Runtime
	cache    wazero.CompilationCache
	log      *zap.Logger
	limits   limits.Limits
	observer Observer
	// eng starts every module instance: it holds the admission gate that
	// Close shuts, the memory pool and the trace's numbering.
	eng *instance.Engine
	// compiler validates, meters and compiles modules (internal/compile).
	compiler *compile.Compiler
	// meterings are the meterings this host derived itself (Open).
	meterings *meteringRecords

	progressFn func(ProgressEvent)
	volumes    *tmpvol.Pool
	// workers run every module when the runtime is of IsolationWorkers;
	// nil in-process.
	workers *workers
}

// New creates a Runtime.
func New(ctx context.Context, cfg Config) (*Runtime, error) {
	lim := limits.Default()
	if cfg.Limits != nil {
		lim = *cfg.Limits
	}
	if err := lim.Validate(); err != nil {
		return nil, err
	}
	log := cfg.Logger
	if log == nil {
		log = zap.NewNop()
	}
	rc := compile.RuntimeConfig()
	maxInstances := cfg.MaxInstances
	if maxInstances == 0 {
		maxInstances = goruntime.NumCPU()
	}
	rt := &Runtime{log: log, limits: lim, observer: cfg.Observer,
		progressFn: cfg.Progress}
	workers := cfg.CompilationWorkers
	if workers <= 0 {
		workers = goruntime.NumCPU()
	}
	cacheDir := cfg.CompilationCacheDir
	switch cfg.Isolation {
	case IsolationInProcess:
	case IsolationWorkers:
		// The workers compile, through the cache; this process never
		// compiles a guest and keeps no cache of its own.
		return newWorkerRuntime(ctx, rt, cfg, workers)
	default:
		return nil, fmt.Errorf("unknown isolation %v", cfg.Isolation)
	}
	if cacheDir != "" {
		cache, err := compile.OpenCache(cacheDir)
		switch {
		case err != nil && cfg.StrictCompilationCache:
			return nil, fmt.Errorf("compilation cache: %w", err)
		case err != nil:
			log.Warn("compilation cache cannot be used: modules are compiled into memory only", zap.String("cache", cacheDir), zap.Error(err))
			cacheDir = ""
		default:
			rt.cache = cache
			rc = rc.WithCompilationCache(cache)
		}
	}
	rt.meterings = newMeteringRecords(cacheDir)
	volumes, err := tmpvol.Open(cfg.TempDir, log)
	if err != nil {
		if rt.cache != nil {
			rt.cache.Close(ctx)
		}
		return nil, err
	}
	rt.volumes = volumes
	rt.wz = wazero.NewRuntimeWithConfig(ctx, rc)
	rt.eng = instance.NewEngine(engineConfig(rt.wz, maxInstances, cfg))
	rt.compiler = compile.New(compile.Config{Runtime: rt.wz, CacheDir: cacheDir, ScratchDir: volumes.Dir(), Workers: workers, Log: log,
		IsClosed: rt.eng.IsClosed, Closed: ErrClosed, Phase: phase,
		Known: func(module [sha256.Size]byte) bool { return rt.meterings.known(module, fuel.MeteringVersion) }})
	if _, err := wasi.Instantiate(ctx, rt.wz); err != nil {
		rt.Close(ctx)
		return nil, fmt.Errorf("defining wasi_snapshot_preview1: %w", err)
	}
	if _, err := subakohttp.Instantiate(ctx, rt.wz); err != nil {
		rt.Close(ctx)
		return nil, fmt.Errorf("defining subako_http: %w", err)
	}
	if _, err := fuel.Instantiate(ctx, rt.wz); err != nil {
		rt.Close(ctx)
		return nil, fmt.Errorf("defining subako_fuel: %w", err)
	}
	return rt, nil
}

// engineConfig is what the instances of a runtime made with cfg share.
func engineConfig(wz wazero.Runtime, maxInstances int, cfg Config) instance.EngineConfig {
	ec := instance.EngineConfig{Runtime: wz, MaxInstances: maxInstances, Closed: ErrClosed,
		Client: protocol.ClientInfo{Name: "subako", Version: Version}}
	if o, ok := cfg.Observer.(InstanceObserver); ok {
		ec.Started, ec.Ended = o.InstanceStarted, o.InstanceEnded
	}
	if trace := cfg.Trace; trace != nil {
		ec.Trace = func(e instance.Event) {
			trace(TraceEvent{Instance: e.Instance, Kind: TraceKind(e.Kind), Time: e.Time, Line: e.Line, Exit: e.Exit})
		}
	}
	return ec
}

// Close releases the runtime, with the compiled code of every package
// loaded through it (their calls then return ErrClosed; Package.Close
// remains safe and closes each one's /package directory), and removes the
// /volume/tmp directories it made, those of results not released yet
// included. It first stops the instances running and waits for them, and
// for compilations a caller stopped waiting for (they cannot be
// interrupted, and the structural bounds keep them finite); if ctx ends
// first, Close returns ctx.Err() and leaves the runtime to them, which is
// what a process exiting on a signal wants.
func (rt *Runtime) Close(ctx context.Context) error {
	// From here every entry point returns ErrClosed, and the instances
	// running are stopped through their contexts (instance.Engine.Close).
	instances := rt.eng.Close()
	if rt.workers != nil {
		// The calls in flight end with ErrClosed as their contexts end
		// (the engine's close); the workers then exit as their channels
		// close, or are killed when ctx ends first.
		var waited error
		select {
		case <-instances:
		case <-ctx.Done():
			// The pool's close kills what is left: nothing of a worker's
			// outlives its runtime.
			waited = ctx.Err()
		}
		err := rt.workers.close(ctx)
		rt.eng.Release()
		return errors.Join(waited, err, rt.wz.Close(ctx), rt.volumes.Close())
	}
	idle := make(chan struct{})
	go func() {
		rt.compiler.Wait()
		<-instances
		close(idle)
	}()
	select {
	case <-idle:
	case <-ctx.Done():
		return ctx.Err()
	}
	err := rt.wz.Close(ctx)
	if rt.cache != nil {
		err = errors.Join(err, rt.cache.Close(ctx))
	}
	rt.eng.Release()
	return errors.Join(err, rt.volumes.Close())
}

// Limits returns the runtime's default limits.
func (rt *Runtime) Limits() limits.Limits { return rt.limits }

// Checked is a module that passed the upload checks, compiled and ready to
// discover.
//
// Ownership: the Checked and every Package that Discover made from it
// share the compiled code, and each holds a reference to it. Close each of
// them when done with it, in any order; the code is released when the last
// is closed. A second Close of the same holder does nothing.
type Checked struct {
	// Source is the package as read from disk.
	Source *Source
	// Hash is the SHA-256 of module.wasm.
	Hash [sha256.Size]byte

	sha256Hex string // Hash in hex, for events
	metered   []byte // the module with fuel metering injected: what runs
	compiled  wazero.CompiledModule
	// initialMemory is instance.InitialMemory(compiled), which every call checks
	// against its limit.
	initialMemory uint64
	code          *codeRefs
	closed        sync.Once
	// remote is set instead of compiled and code when a worker process
	// holds the module (IsolationWorkers); imports are then the worker's.
	remote  *remoteRef
	imports []Import
}

// newChecked holds the first reference to compiled.
func newChecked(src *Source, hash [sha256.Size]byte, metered []byte, compiled wazero.CompiledModule) *Checked {
	return &Checked{Source: src, Hash: hash, sha256Hex: hex.EncodeToString(hash[:]), metered: metered, compiled: compiled, initialMemory: instance.InitialMemory(compiled), code: newCodeRefs(compiled)}
}

// Close releases this holder's reference to the compiled code.
func (c *Checked) Close(ctx context.Context) error {
	var err error
	c.closed.Do(func() {
		if c.remote != nil {
			err = c.remote.release(ctx)
			return
		}
		err = c.code.release(ctx)
	})
	return err
}

// codeRefs counts the holders of one compiled module.
type codeRefs struct {
	mu       sync.Mutex
	refs     int
	compiled wazero.CompiledModule
}

func newCodeRefs(compiled wazero.CompiledModule) *codeRefs {
	return &codeRefs{refs: 1, compiled: compiled}
}

func (r *codeRefs) acquire() {
	r.mu.Lock()
	r.refs++
	r.mu.Unlock()
}

func (r *codeRefs) release(ctx context.Context) error {
	r.mu.Lock()
	r.refs--
	last := r.refs == 0
	r.mu.Unlock()
	if last {
		return r.compiled.Close(ctx)
	}
	return nil
}

// Validate reads the package at path and runs every upload-time check of
// docs/abi.md §1 and §2, then compiles the module. A package that fails
// any check yields a *RejectedError listing every problem; other errors mean
// the path could not be read.
func (rt *Runtime) Validate(ctx context.Context, path string) (*Checked, error) {
	if err := canceled(ctx, "validate "+path); err != nil {
		return nil, err
	}
	if rt.eng.IsClosed() {
		return nil, closedError("validate " + path)
	}
	if rt.workers != nil {
		return rt.validateRemote(ctx, path)
	}
	src, err := ReadSource(path, rt.limits.ModuleSize)
	if err != nil {
		return nil, err
	}
	return rt.check(ctx, src)
}

// check runs the module checks on a package read from disk and compiles it.
func (rt *Runtime) check(ctx context.Context, src *Source) (*Checked, error) {
	rej := append([]Rejection(nil), src.Rejections...)
	endCheck := phase(ctx, "check")
	if src.Module != nil {
		for _, p := range modcheck.Check(src.Module, rt.checkOptions(rt.limits)) {
			rej = append(rej, Rejection{Code: p.Code, Message: p.Message})
		}
	}
	endCheck()
	if len(rej) > 0 {
		return nil, &RejectedError{Rejections: rej}
	}
	if err := canceled(ctx, "compile"); err != nil {
		return nil, err
	}
	metered, compiled, err := rt.compile(ctx, src.Module, rt.limits, false)
	if err != nil {
		if cerr := canceled(ctx, "compile"); cerr != nil {
			return nil, cerr
		}
		return nil, err
	}
	if err := canceled(ctx, "compile"); err != nil {
		compiled.Close(context.WithoutCancel(ctx))
		return nil, err
	}
	c := newChecked(src, sha256.Sum256(src.Module), metered, compiled)
	if err := rt.meterings.record(c.Hash, fuel.MeteringVersion, sha256.Sum256(metered)); err != nil {
		rt.log.Warn("cannot record the module's metering; opening its artifact will meter it again", zap.Error(err))
	}
	return c, nil
}

func (rt *Runtime) checkOptions(lim limits.Limits) modcheck.Options {
	return modcheck.Options{MaxMemoryBytes: lim.Memory, Structure: lim.Structure}
}

// compile injects fuel metering and compiles the result. structure asks
// for the structural checks first (callers that did not run modcheck.Check:
// every path that compiles must have them, or a few kilobytes of nested
// blocks hold the host for minutes). The caller's cancellation comes back
// as ctx.Err(); every other failure is a *RejectedError.
func (rt *Runtime) compile(ctx context.Context, module []byte, lim limits.Limits, structure bool) ([]byte, wazero.CompiledModule, error) {
	if structure {
		if ps := modcheck.CheckStructure(module, rt.checkOptions(lim)); len(ps) > 0 {
			return nil, nil, rejectedOf(ps)
		}
	}
	defer rt.progress(StepCompile, len(module))()
	metered, err := rt.compiler.Meter(ctx, module, lim.CompileTimeout)
	if err != nil {
		return nil, nil, rejection(err)
	}
	endCompile := phase(ctx, "compile")
	compiled, err := rt.compiler.Compile(ctx, metered, lim.CompileTimeout)
	endCompile()
	if err != nil {
		return nil, nil, rejection(err)
	}
	return metered, compiled, nil
}
