package instance

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/sys"

	"github.com/subako/subako-runner/internal/admission"
	"github.com/subako/subako-runner/internal/fuel"
	"github.com/subako/subako-runner/internal/linmem"
	"github.com/subako/subako-runner/protocol"
)

// endGrace is how long an instance may take to stop once its context
// ended before the host logs that a host function is not honouring the
// context. The host goes on waiting: an instance is never left running.
const endGrace = 5 * time.Second

// EngineConfig is what every instance of one runtime shares.
type EngineConfig struct {
	// Runtime is the wazero runtime with the host modules defined; the
	// engine instantiates guests in it and never closes it.
	Runtime wazero.Runtime
	// MaxInstances bounds the instances running at once (admission.New).
	MaxInstances int
	// Closed is the error instances refused or ended by Close get.
	Closed error
	// Client is what sessions send as clientInfo.
	Client protocol.ClientInfo
	// Started and Ended, when set, are told of every instance as it
	// starts and ends (an embedder's gauge of instances running).
	Started, Ended func(context.Context)
	// Trace, when set, receives every event of every session (Event).
	Trace func(Event)
}

// Engine starts the module instances of one runtime: calls, probes,
// discoveries and commands all pass through Start, and Engine.run is the
// one place a guest module is instantiated. It owns what they share: the
// admission gate, the pool of linear memories, the trace's numbering.
type Engine struct {
	wz        wazero.Runtime
	gate      *admission.Gate
	pool      *linmem.Pool
	client    protocol.ClientInfo
	started   func(context.Context)
	ended     func(context.Context)
	traceFn   func(Event)
	traceSeq  atomic.Int64 // the last instance number traced
	closedErr error
	// grace is endGrace, or what a test set.
	grace time.Duration
	// modConfig is every instance's module configuration, made once: no
	// name, no start functions (run calls _start), and a random source
	// that costs nothing to set up (wazero would otherwise seed a
	// math/rand source per instance, 7% of a C call; our own WASI layer
	// answers random_get from crypto/rand and never reads it).
	modConfig wazero.ModuleConfig
}

// NewEngine makes the engine of one runtime.
func NewEngine(cfg EngineConfig) *Engine {
	return &Engine{
		wz:        cfg.Runtime,
		gate:      admission.New(cfg.MaxInstances, cfg.Closed),
		pool:      linmem.NewPool(2),
		client:    cfg.Client,
		started:   cfg.Started,
		ended:     cfg.Ended,
		traceFn:   cfg.Trace,
		closedErr: cfg.Closed,
		grace:     endGrace,
		modConfig: wazero.NewModuleConfig().WithName("").WithStartFunctions().WithRandSource(rand.Reader),
	}
}

// IsClosed reports whether Close has begun: no instance starts after it.
func (eng *Engine) IsClosed() bool { return eng.gate.IsClosed() }

// Close shuts the admission gate (instances running are stopped through
// their contexts) and returns the channel closed once every instance has
// ended; call Release after that.
func (eng *Engine) Close() <-chan struct{} { return eng.gate.Close() }

// Release gives the pooled memories back to the OS, once no instance runs.
func (eng *Engine) Release() { eng.pool.Close() }

// Waiting is how many instances wait for their turn (for tests).
func (eng *Engine) Waiting() int64 { return eng.gate.Waiting() }

// Admit takes a place at the gate for work that is not an instance of
// the engine's own (tests hold places with it).
func (eng *Engine) Admit(ctx context.Context) (admission.Place, context.Context, error) {
	return eng.gate.Admit(ctx)
}

// SetEndGrace shortens the grace before a slow stop is logged (for tests).
func (eng *Engine) SetEndGrace(d time.Duration) { eng.grace = d }

// Timing is when an instance began and how long its instantiation and
// its _start took, for tracing (CallEvent).
type Timing struct {
	Start            time.Time
	Instantiate, Run time.Duration
}

// run instantiates the module (running any start section) and then calls
// _start. wazero reports exit code 0 as success. It is the one place
// guest instances start: the instance count follows it, and timing
// records its instantiation.
func (eng *Engine) run(ctx context.Context, compiled wazero.CompiledModule, timing *Timing) error {
	if eng.started != nil {
		eng.started(ctx)
		defer eng.ended(ctx)
	}
	began := time.Now()
	mod, err := eng.instantiate(ctx, compiled)
	timing.Start, timing.Instantiate = began, time.Since(began)
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
	timing.Run = time.Since(began) - timing.Instantiate
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
// (InitialMemoryFits); this is the backstop. The allocator has recorded
// the refusal, so the end is out_of_memory.
func (eng *Engine) instantiate(ctx context.Context, compiled wazero.CompiledModule) (mod api.Module, err error) {
	defer func() {
		if r := recover(); r != nil {
			mod, err = nil, fmt.Errorf("the module could not be instantiated: %v", r)
		}
	}()
	return eng.wz.InstantiateModule(ctx, compiled, eng.modConfig)
}
