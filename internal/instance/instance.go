package instance

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/experimental"
	"github.com/tetratelabs/wazero/sys"
	"go.uber.org/zap"

	"github.com/subako/subako-runner/fsmount"
	"github.com/subako/subako-runner/hostmod/subakohttp"
	"github.com/subako/subako-runner/internal/admission"
	"github.com/subako/subako-runner/internal/fuel"
	"github.com/subako/subako-runner/internal/linmem"
	"github.com/subako/subako-runner/internal/text"
	"github.com/subako/subako-runner/limits"
	"github.com/subako/subako-runner/wasi"
)

// Reasons the host ends an instance itself; context.Cause tells them apart
// from the caller's own cancellation or deadline.
var (
	errDeadline    = errors.New("deadline reached")
	errExitTimeout = errors.New("module did not exit after stdin closed")
	errCrashed     = errors.New("module broke the protocol")
)

// Spec is one instance: the module, its limits and what it is given.
type Spec struct {
	Compiled wazero.CompiledModule
	// InitialMemory is InitialMemory(Compiled), which a session checks
	// against its limit before it starts.
	InitialMemory uint64
	Limits        limits.Limits
	// Timeout is the instance's time limit, counted from when it has its
	// turn: waiting for it is not its time.
	Timeout time.Duration
	// Mounts opens the instance's mounts once it has its turn (a call
	// waiting holds no directory open); nil mounts nothing.
	Mounts func() (*fsmount.Set, error)
	// Network is the subako_http policy; nil denies every request.
	Network *subakohttp.Policy
	// Exchange, when set, sends the guest's subako_http requests to the
	// process that holds the network (subakohttp.CallConfig.Exchange):
	// the instance runs in a worker. It is given the instance's write
	// budget, which the other side's file outputs charge.
	Exchange func(ctx context.Context, request []byte, budget *limits.WriteBudget) []byte
	// Args and Env are the module's (commands; a session has none).
	Args, Env []string
	// Stdin, Stdout and Stderr are the module's stdio. The module's
	// stderr also goes to the instance's tail (crash reports); Stderr nil
	// means the tail only.
	Stdin  *wasi.Stdin
	Stdout io.Writer
	Stderr io.Writer
	// Log is the host's logger for this instance.
	Log *zap.Logger
	// Session marks a session's instance: its stderr lines are logged (at
	// debug level) and its events traced.
	Session bool
}

// Instance is one module instance and everything that is its own: the
// context chain (the caller's, the runtime's close, the deadline, the
// host's kill), its place at the gate, mounts, write budget, subako_http
// call, linear memory, fuel meter and stderr tail. Calls, probes,
// discoveries (through a Session) and commands (Run) all set up through
// Engine.Start, and their ends are classified by the same code.
type Instance struct {
	eng      *Engine
	compiled wazero.CompiledModule
	lim      limits.Limits
	place    admission.Place
	// parent is the admitted context: the caller's, ended also (cause the
	// engine's closed error) when the runtime closes.
	parent context.Context
	// ctx is parent with the deadline (cause errDeadline) and the host's
	// kill; guest is ctx with the instance's state attached, what the
	// guest runs under.
	ctx, guest context.Context
	kill       context.CancelCauseFunc
	stop       context.CancelFunc
	deadline   time.Time // Started + the timeout
	wasi       *wasi.Instance
	stdin      *wasi.Stdin
	stderr     *stderrTail
	trace      *trace // nil unless the engine traces sessions
	gone       chan struct{}

	// Mounts, Budget, HTTP, Memory and Fuel are the instance's own; read
	// them (their usage) once it has ended.
	Mounts *fsmount.Set
	Budget *limits.WriteBudget
	HTTP   *subakohttp.Call
	Memory *linmem.Allocator
	Fuel   *fuel.Meter
	// Started is when the instance had its turn; Ended when it ended
	// (written before its end is reported).
	Started, Ended time.Time
	// Timing is written by the guest's goroutine before its end is
	// reported, and read after.
	Timing Timing
}

// Start waits for the instance's turn at the gate and sets it up, not
// started yet. The error is the engine's closed error (the runtime
// closed), the caller's cancellation with its cause, or the mounts'. The
// caller must Close the instance once done with it.
func (eng *Engine) Start(ctx context.Context, spec Spec) (*Instance, error) {
	place, actx, err := eng.gate.Admit(ctx)
	if err != nil {
		if errors.Is(err, eng.closedErr) {
			return nil, err
		}
		if cerr := Canceled(ctx, "waiting for its turn to run"); cerr != nil {
			return nil, cerr
		}
		return nil, err
	}
	in := &Instance{eng: eng, compiled: spec.Compiled, lim: spec.Limits, place: place, parent: actx,
		stdin: spec.Stdin, Started: time.Now(), gone: make(chan struct{})}
	if spec.Mounts != nil {
		if in.Mounts, err = spec.Mounts(); err != nil {
			place.Done()
			place.End()
			return nil, err
		}
	}
	lim := spec.Limits
	in.Budget = limits.NewCallBudget(lim)
	httpCfg := subakohttp.CallConfig{Policy: spec.Network, Files: in.Files(), Budget: in.Budget, Limits: lim, Logger: spec.Log}
	if ex := spec.Exchange; ex != nil {
		budget := in.Budget
		httpCfg.Exchange = func(ctx context.Context, request []byte) []byte { return ex(ctx, request, budget) }
	}
	in.HTTP = subakohttp.NewCall(httpCfg)
	var stderr io.Writer
	if spec.Session {
		in.stderr = newStderrTail(lim.StderrTail, spec.Log)
		in.trace = eng.newTrace()
		stderr = in.trace.stderr(in.stderr)
	} else {
		in.stderr = newStderrTail(lim.StderrTail, nil)
		stderr = in.stderr
		if spec.Stderr != nil {
			stderr = io.MultiWriter(spec.Stderr, in.stderr)
		}
	}
	in.Memory = linmem.New(uint64(lim.Memory), eng.pool)
	in.Fuel = fuel.NewMeter(lim.Fuel)

	in.deadline = in.Started.Add(spec.Timeout)
	in.ctx, in.stop = context.WithDeadlineCause(actx, in.deadline, errDeadline)
	in.ctx, in.kill = context.WithCancelCause(in.ctx)
	in.wasi = wasi.NewInstance(wasi.Config{
		Args: spec.Args, Env: spec.Env, Stdin: spec.Stdin, Stdout: spec.Stdout, Stderr: stderr,
		Mounts: in.Mounts, Budget: in.Budget,
		MaxStdioWrite: lim.StdoutLine, // one fd_write moves at most one line's worth
	})
	g := subakohttp.WithCall(wasi.WithInstance(in.ctx, in.wasi), in.HTTP)
	g = experimental.WithMemoryAllocator(g, in.Memory)
	in.guest = fuel.WithTableBudget(fuel.WithMeter(g, in.Fuel), in.Memory)
	return in, nil
}

// Run runs the instance on the calling goroutine to its end, gives its
// memory and place back, and returns how the guest ended (nil for exit
// code 0 or a _start that returned).
func (in *Instance) Run() error {
	err := in.runGuest()
	in.closeUp(err)
	in.release()
	return err
}

// runGuest runs the guest to its end.
func (in *Instance) runGuest() error { return in.eng.run(in.guest, in.compiled, &in.Timing) }

// closeUp ends what the guest held, once it returned: its WASI state and
// its trace.
func (in *Instance) closeUp(err error) {
	in.wasi.Close()
	in.trace.exit(err)
	in.Ended = time.Now()
}

// release gives the memory and the place back, after the end is reported:
// the host's work, not the guest's.
func (in *Instance) release() {
	in.Memory.Release()
	in.place.Done()
	close(in.gone)
}

// Close ends the instance's context and gives back its mounts, once the
// driver is done with it: every driver defers it. The guest must have
// ended (Run returned, or a Session finished or aborted).
func (in *Instance) Close() {
	in.stop()
	if in.Mounts != nil {
		in.Mounts.Close()
	}
	in.place.End()
}

// QueueWait is how long the instance waited for its turn, and how many
// were waiting when it began to wait, itself included (0: it ran at once).
func (in *Instance) QueueWait() (time.Duration, int) { return in.place.Wait, in.place.Queued }

// Interrupted is the caller's cancellation when the caller's context (or
// the runtime's close) ended a run that returned err, and nil when the end
// was the module's own or the host's (deadline, exit rule, crash). A run
// the fuel meter stopped because the caller's deadline had passed is the
// caller's, though that context's timer may not have run yet: the meter's
// record decides, not the race with the timer.
func (in *Instance) Interrupted(err error) error {
	if err == nil {
		return nil
	}
	cause := in.cause()
	if hostCause(cause) {
		return nil
	}
	const what = "stopped by the caller's context"
	if cerr := Canceled(in.parent, what); cerr != nil {
		return cerr
	}
	if errors.Is(cause, errCallerDeadline) {
		return fmt.Errorf("%s: %w", what, context.DeadlineExceeded)
	}
	return nil
}

// errCallerDeadline is the cause of an end the fuel meter made when the
// caller's deadline had passed before the caller's context reported it.
var errCallerDeadline = fmt.Errorf("the caller's deadline passed: %w", context.DeadlineExceeded)

// cause is why the instance ended, or nil while it has not been ended by
// a context: first the fuel meter's record of why it stopped the guest
// (which deadline had passed, or the context's cause when it stopped),
// then the instance's context. A deadline of the instance's own that has
// passed counts though the timer that ends the context has not run yet
// (a host function may have seen it first).
func (in *Instance) cause() error {
	if c := in.meterCause(); c != nil {
		return c
	}
	if c := context.Cause(in.ctx); c != nil {
		return c
	}
	if !time.Now().Before(in.deadline) {
		return errDeadline
	}
	return nil
}

// meterCause is why the fuel meter stopped the guest for its context, or
// nil when it did not. A deadline passed before the context's timer ran is
// the caller's when the caller's deadline is the earlier one, else the
// instance's own (errDeadline).
func (in *Instance) meterCause() error {
	stop, ok := in.Fuel.Stopped()
	if !ok {
		return nil
	}
	if stop.Cause != nil {
		return stop.Cause
	}
	if d, ok := in.parent.Deadline(); ok && d.Before(in.deadline) && !stop.Deadline.Before(d) {
		return errCallerDeadline
	}
	return errDeadline
}

// hostCause reports whether cause is one of the reasons the host ends an
// instance itself, rather than the caller's context ending.
func hostCause(cause error) bool {
	return errors.Is(cause, errDeadline) || errors.Is(cause, errExitTimeout) || errors.Is(cause, errCrashed)
}

// EndCrash classifies the ends every run shares, a session or a command:
// the host's deadline, fuel, memory, a trap. It is nil when the instance
// returned or exited (with any code), which the caller judges.
func (in *Instance) EndCrash(err error) *Crash {
	if err == nil {
		return nil
	}
	switch {
	case errors.Is(in.cause(), errDeadline):
		return in.newCrash(ReasonTimeout, fmt.Sprintf("the module ran out of time (%v)", time.Since(in.Started).Round(time.Millisecond)))
	case in.Fuel.Exhausted():
		return in.newCrash(ReasonOutOfFuel, fmt.Sprintf("the module used its whole fuel budget of %d", in.lim.Fuel))
	}
	var exit *sys.ExitError
	isExit := errors.As(err, &exit)
	if in.Memory.Refused() && (!isExit || exit.ExitCode() != 0) {
		return in.newCrash(ReasonOutOfMemory, fmt.Sprintf("the module needed more than its memory limit of %s", limits.FormatSize(in.lim.Memory)))
	}
	if !isExit {
		return in.newCrash(ReasonTrap, "the module trapped: "+text.FirstLine(err.Error()))
	}
	return nil
}

// newCrash builds a crash report with the stderr tail as it is now.
func (in *Instance) newCrash(reason, message string) *Crash {
	return &Crash{Reason: reason, Message: text.Bound(message, MaxCrashMessage), Stderr: in.stderr.String()}
}

// Canceled is the error of work that the caller's context ended before it
// was done. It wraps ctx.Err(), so errors.Is finds context.Canceled or
// context.DeadlineExceeded, and the context's cause when the caller gave
// one of its own (a signal, a context.WithCancelCause reason). It is nil
// while ctx is live.
func Canceled(ctx context.Context, what string) error {
	err := ctx.Err()
	if err == nil {
		return nil
	}
	if cause := context.Cause(ctx); cause != nil && cause != err {
		return fmt.Errorf("%s: %w (%w)", what, err, cause)
	}
	return fmt.Errorf("%s: %w", what, err)
}

// InitialMemory is the largest initial size of the module's memories, in
// bytes. wazero builds the list of memories anew at every ask, so a
// package asks once, not every call.
func InitialMemory(compiled wazero.CompiledModule) uint64 {
	var most uint64
	for _, m := range compiled.ExportedMemories() {
		most = max(most, uint64(m.Min())*uint64(limits.WasmPageSize))
	}
	return most
}

// InitialMemoryFits reports whether a module's initial memory of need bytes
// fits the limit. A call may run under a lower limit than the one checked
// at upload.
func InitialMemoryFits(need uint64, limit int64) error {
	if need > uint64(limit) {
		return fmt.Errorf("the module's initial memory of %s is over the memory limit of %s", limits.FormatSize(int64(need)), limits.FormatSize(limit))
	}
	return nil
}
