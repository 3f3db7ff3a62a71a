package runtime

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"fmt"
	goruntime "runtime"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
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

// Config configures a Runtime. The zero value is ready to use.
type Config struct {
	// Logger receives the host's own logs; nil logs nothing.
	Logger *zap.Logger
	// Limits are the defaults for every load and call; the zero value
	// means limits.Default(). A call may override them.
	Limits *limits.Limits
	// CompilationCacheDir, when set, keeps compiled machine code on disk so
	// that another process loads the same module without recompiling.
	CompilationCacheDir string
	// Observer, when set, receives one event per upload and per call.
	Observer Observer
	// TempDir is where the runtime keeps the /volume/tmp directories it
	// makes for calls, each runtime in a directory of its own; empty means
	// <os.TempDir()>/subako-runner-<uid>. A runtime that starts removes what
	// runtimes that died (killed, crashed) left there (docs/embedding.md).
	TempDir string
	// MaxInstances is how many module instances (calls, probes,
	// discoveries) may run at once; the others wait their turn, and their
	// time limits start when their instance starts. 0 means
	// runtime.NumCPU(); a negative value means no bound.
	MaxInstances int
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
//   - Close closes every package loaded through it.
type Runtime struct {
	wz       wazero.Runtime
	cache    wazero.CompilationCache
	log      *zap.Logger
	limits   limits.Limits
	client   protocol.ClientInfo
	observer Observer
	volumes  *tempVolumes
	admit    *admission
	memPool  *memoryPool
	// modConfig is every instance's module configuration, made once: no
	// name, no start functions (runInstance calls _start), and a random
	// source that costs nothing to set up (wazero would otherwise seed a
	// math/rand source per instance, 7% of a C call; our own WASI layer
	// answers random_get from crypto/rand and never reads it).
	modConfig wazero.ModuleConfig
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
	rc := wazero.NewRuntimeConfig().
		WithCoreFeatures(api.CoreFeaturesV2).
		// The per-instance allocator enforces each call's own limit; this is
		// the ceiling for all of them (4 GiB, all a 32-bit module can use).
		WithMemoryLimitPages(65536)
	// No WithCloseOnContextDone: every module is fuel-metered (internal/fuel)
	// and the refuel host function, entered about every millisecond, checks
	// the deadline at a fraction of that option's cost.
	maxInstances := cfg.MaxInstances
	if maxInstances == 0 {
		maxInstances = goruntime.NumCPU()
	}
	rt := &Runtime{log: log, limits: lim, client: protocol.ClientInfo{Name: "subako", Version: Version}, observer: cfg.Observer,
		admit:     newAdmission(maxInstances),
		memPool:   newMemoryPool(max(2, goruntime.NumCPU())),
		modConfig: wazero.NewModuleConfig().WithName("").WithStartFunctions().WithRandSource(rand.Reader)}
	if cfg.CompilationCacheDir != "" {
		cache, err := wazero.NewCompilationCacheWithDir(cfg.CompilationCacheDir)
		if err != nil {
			return nil, fmt.Errorf("compilation cache: %w", err)
		}
		rt.cache = cache
		rc = rc.WithCompilationCache(cache)
	}
	volumes, err := openTempVolumes(cfg.TempDir, log)
	if err != nil {
		if rt.cache != nil {
			rt.cache.Close(ctx)
		}
		return nil, err
	}
	rt.volumes = volumes
	rt.wz = wazero.NewRuntimeWithConfig(ctx, rc)
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

// Close releases the runtime and every package loaded through it, and
// removes the /volume/tmp directories it made, those of results not
// released yet included.
func (rt *Runtime) Close(ctx context.Context) error {
	err := rt.wz.Close(ctx)
	if rt.cache != nil {
		err = errors.Join(err, rt.cache.Close(ctx))
	}
	rt.memPool.close()
	return errors.Join(err, rt.volumes.close())
}

// Limits returns the runtime's default limits.
func (rt *Runtime) Limits() limits.Limits { return rt.limits }

// Checked is a module that passed the upload checks, compiled and ready to
// discover or run.
type Checked struct {
	// Source is the package as read from disk.
	Source *Source
	// Hash is the SHA-256 of module.wasm.
	Hash [sha256.Size]byte
	// Metered is the module with fuel metering injected (internal/fuel):
	// what actually runs.
	Metered []byte

	compiled wazero.CompiledModule
}

// Close releases the compiled code.
func (c *Checked) Close(ctx context.Context) error { return c.compiled.Close(ctx) }

// Validate reads the package at path and runs every upload-time check of
// host-contract §1 and §2, then compiles the module. A package that fails
// any check yields a *RejectedError listing every problem; other errors mean
// the path could not be read.
func (rt *Runtime) Validate(ctx context.Context, path string) (*Checked, error) {
	src, err := ReadSource(path, rt.limits.ModuleSize)
	if err != nil {
		return nil, err
	}
	return rt.check(ctx, src)
}

// check runs the module checks on a package read from disk and compiles it.
func (rt *Runtime) check(ctx context.Context, src *Source) (*Checked, error) {
	rej := append([]Rejection(nil), src.Rejections...)
	if src.Module != nil {
		for _, p := range modcheck.Check(src.Module, modcheck.Options{MaxMemoryBytes: rt.limits.Memory}) {
			rej = append(rej, Rejection{Code: p.Code, Message: p.Message})
		}
	}
	if len(rej) > 0 {
		return nil, &RejectedError{Rejections: rej}
	}
	metered, compiled, err := rt.compile(ctx, src.Module)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, &RejectedError{Rejections: []Rejection{{CodeInvalidModule, err.Error()}}}
	}
	return &Checked{Source: src, Hash: sha256.Sum256(src.Module), Metered: metered, compiled: compiled}, nil
}

// compile injects fuel metering and compiles the result.
func (rt *Runtime) compile(ctx context.Context, module []byte) ([]byte, wazero.CompiledModule, error) {
	metered, err := fuel.Instrument(module)
	if err != nil {
		return nil, nil, fmt.Errorf("the module cannot be metered: %v", err)
	}
	compiled, err := rt.wz.CompileModule(ctx, metered)
	if err != nil {
		return nil, nil, fmt.Errorf("the module does not compile: %v", err)
	}
	return metered, compiled, nil
}
