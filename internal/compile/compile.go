package compile

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/experimental"
	"go.uber.org/zap"

	"github.com/subako/subako-runner/internal/modcheck"
)

// CodeCompileTimeout is the rejection of a module whose compilation to
// machine code took longer than limits.CompileTimeout.
const CodeCompileTimeout = "compile_timeout"

// features and maxPages are the runtime's wazero configuration: the core
// features of WebAssembly 2.0, and the ceiling of every instance's
// memory (4 GiB, all a 32-bit module can use; each call's own limit is
// the memory allocator's, internal/linmem).
const (
	features = api.CoreFeaturesV2
	maxPages = 65536
)

// RuntimeConfig is the configuration of the runtime's wazero runtime,
// without its compilation cache. The cache's key for a module depends on
// it (on the features and on whether the engine ensures termination), so
// the scratch compilation of cachefault.go, which uses it too, writes an
// entry of the damaged entry's name only because the two are one.
//
// DWARF is off: wazero then skips every custom section but the name
// section without reading it into memory (customs.go), and a metered
// module has no DWARF to read anyway (the rewriter drops it).
//
// There is no WithCloseOnContextDone: every module is fuel-metered
// (internal/fuel), and the refuel host function, entered about every
// millisecond, checks the deadline at a fraction of that option's cost.
func RuntimeConfig() wazero.RuntimeConfig {
	return wazero.NewRuntimeConfig().WithCoreFeatures(features).WithMemoryLimitPages(maxPages).WithDebugInfoEnabled(false)
}

// Rejected is a module the compiler refuses for what it is: a rejection
// with a code of the host contract, which the runtime reports as its own.
type Rejected struct {
	Code, Message string
}

func (e *Rejected) Error() string { return e.Code + ": " + e.Message }

// Config is what a Compiler needs of its runtime.
type Config struct {
	// Runtime is the runtime's wazero runtime (RuntimeConfig, with the
	// cache when there is one); modules compiled for running are its.
	Runtime wazero.Runtime
	// CacheDir is the runtime's compilation cache directory, "" without
	// one: where cachefault.go replaces a damaged entry.
	CacheDir string
	// ScratchDir is the runtime's own temporary directory, where
	// cachefault.go compiles a module again without the cache; "" is
	// os.TempDir().
	ScratchDir string
	// Workers is how many goroutines compile one module's functions.
	Workers int
	Log     *zap.Logger
	// IsClosed reports whether the runtime has begun to close; Closed is
	// the error that says so.
	IsClosed func() bool
	Closed   error
	// Known reports whether this host metered the module (its SHA-256)
	// at this metering version before, and so validated it then.
	Known func(module [32]byte) bool
	// Phase times one step of an upload (UploadEvent.Phases).
	Phase func(ctx context.Context, name string) (end func())
}

// Compiler validates, meters and compiles the modules of one runtime.
// A compilation runs on a goroutine of its own, so that the caller's
// context and the compile timeout end the wait while wazero, which does
// not watch the context, goes on; Close waits for the compilations that
// callers stopped waiting for.
type Compiler struct {
	wz         wazero.Runtime
	cacheDir   string
	scratchDir string
	// writeFaultLogged is set once a cache write fault was logged at
	// warn level (cachefault.go).
	writeFaultLogged atomic.Bool
	workers          int
	log              *zap.Logger
	isClosed         func() bool
	closedErr        error
	known            func([32]byte) bool
	phase            func(context.Context, string) func()
	// unmetered is only ever set by test builds (tag subakoprobe,
	// unmetered_probe.go): modules then run without either metering line.
	unmetered atomic.Bool

	// compiling counts the compilations in flight; Close waits for them.
	compiling sync.WaitGroup
	// locks serialises compilations of the same bytes (lock.go).
	locks compileLocks
	// beforeCompile, when set (by tests), runs on the compiling goroutine
	// before wazero starts: a test holds a compilation there to show that
	// callers do not wait for it.
	beforeCompile func()
}

// New makes the compiler of one runtime.
func New(cfg Config) *Compiler {
	return &Compiler{wz: cfg.Runtime, cacheDir: cfg.CacheDir, scratchDir: cfg.ScratchDir, workers: cfg.Workers, log: cfg.Log,
		isClosed: cfg.IsClosed, closedErr: cfg.Closed, known: cfg.Known, phase: cfg.Phase}
}

// Wait waits for the compilations in flight, those callers stopped
// waiting for included.
func (c *Compiler) Wait() { c.compiling.Wait() }

// SetBeforeCompile makes every compilation call f on its goroutine
// before wazero starts (for tests that hold a compilation there).
func (c *Compiler) SetBeforeCompile(f func()) { c.beforeCompile = f }

// Compile compiles wasm (a metered module) with the runtime's wazero
// runtime, but returns as soon as ctx is done (with ctx.Err()) or timeout
// passes (a compile_timeout rejection). wazero's compiler does not watch
// the context, so the compilation itself goes on, on its own goroutine,
// and is closed when it finishes; the structural checks bound how long
// that can be.
func (c *Compiler) Compile(ctx context.Context, wasm []byte, timeout time.Duration) (wazero.CompiledModule, error) {
	wasm, err := engineBytes(wasm) // customs.go
	if err != nil {
		return nil, err
	}
	return c.compileWith(ctx, timeout, "the module does not compile", func(ctx context.Context) (wazero.CompiledModule, error) {
		// The same bytes take turns (lock.go); a damaged cache entry is
		// the host's fault (cachefault.go).
		defer c.locks.lock(wasm)()
		return c.compileCached(experimental.WithCompilationWorkers(ctx, c.workers), c.wz, wasm)
	})
}

// compileWith runs compile (a wazero compilation) on a goroutine of its
// own, under Compile's rules of waiting: ctx and timeout end the wait, not
// the compilation. A module compile refuses is an invalid_module rejection
// whose message starts with what.
func (c *Compiler) compileWith(ctx context.Context, timeout time.Duration, what string, compile func(context.Context) (wazero.CompiledModule, error)) (wazero.CompiledModule, error) {
	if err := ctx.Err(); err != nil {
		return nil, err // no compilation for a caller who is gone
	}
	type result struct {
		compiled wazero.CompiledModule
		err      error
	}
	done := make(chan result, 1)
	var mu sync.Mutex
	gaveUp := false // under mu: nobody will receive from done
	c.compiling.Add(1)
	go func() {
		defer c.compiling.Done()
		if c.beforeCompile != nil {
			c.beforeCompile()
		}
		compiled, err := compile(context.WithoutCancel(ctx))
		mu.Lock()
		defer mu.Unlock()
		if gaveUp {
			if compiled != nil {
				_ = compiled.Close(context.Background())
			}
			return
		}
		done <- result{compiled, err}
	}()
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	abandon := func() {
		mu.Lock()
		defer mu.Unlock()
		gaveUp = true
		select {
		case r := <-done: // finished just now
			if r.compiled != nil {
				_ = r.compiled.Close(context.Background())
			}
		default:
		}
	}
	select {
	case r := <-done:
		if r.err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			if host := (*hostCompileError)(nil); errors.As(r.err, &host) {
				return nil, host.err // the host's fault, not the module's
			}
			return nil, &Rejected{modcheck.CodeInvalidModule, fmt.Sprintf("%s: %v", what, r.err)}
		}
		return r.compiled, nil
	case <-ctx.Done():
		abandon()
		return nil, ctx.Err()
	case <-timer.C:
		abandon()
		return nil, &Rejected{CodeCompileTimeout, fmt.Sprintf("compiling the module took longer than the compile timeout of %v: split its largest functions or reduce their blocks and loops", timeout)}
	}
}

// Workers is how many goroutines compile one module's functions.
func (c *Compiler) Workers() int { return c.workers }
