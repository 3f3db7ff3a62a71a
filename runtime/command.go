package runtime

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/tetratelabs/wazero/experimental"
	"github.com/tetratelabs/wazero/sys"

	"github.com/subako/subako-runner/fsmount"
	"github.com/subako/subako-runner/hostmod/subakohttp"
	"github.com/subako/subako-runner/internal/fuel"
	"github.com/subako/subako-runner/internal/modcheck"
	"github.com/subako/subako-runner/internal/text"
	"github.com/subako/subako-runner/limits"
	"github.com/subako/subako-runner/wasi"
)

// Command is a plain WASI preview 1 command run under the same host as
// calls (our WASI layer, subako_http, the limits), with stdio passed
// through: what `subako-runner run` does, for local testing.
type Command struct {
	// Args are the module's arguments, argv[0] included; nil means
	// ["module.wasm"].
	Args []string
	// Env are "NAME=VALUE" pairs; nil means an empty environment.
	Env []string
	// Mounts are the preopens, fd 3 onwards, in this order.
	Mounts []fsmount.Mount
	// Stdin is copied into the module's stdin; nil means empty.
	Stdin io.Reader
	// Stdout and Stderr receive the module's output; nil discards it.
	Stdout, Stderr io.Writer
	// Network is the policy for subako_http; nil denies every request.
	Network *subakohttp.Policy
	// Limits overrides the runtime's limits (Memory, CallTimeout,
	// WriteBudget apply).
	Limits *limits.Limits
}

// CommandResult is how a command ended.
type CommandResult struct {
	// ExitCode is the module's exit code (0 when _start returned).
	ExitCode uint32
	// Crash is set when the module trapped or ran out of memory, fuel or
	// time; then ExitCode is meaningless.
	Crash *Crash
	Stats Stats
}

// RunCommand compiles and runs the module at path as a command. Only the
// checks needed to run safely are applied (imports the host provides,
// memory within the limit); use Validate for the upload checks. A module
// that imports what the host does not provide is a *LinkError, before
// anything runs. When ctx ends the run, the error wraps ctx.Err().
func (rt *Runtime) RunCommand(ctx context.Context, path string, cmd Command) (*CommandResult, error) {
	lim := rt.limits
	if cmd.Limits != nil {
		lim = *cmd.Limits
		if err := lim.Validate(); err != nil {
			return nil, err
		}
	}
	src, err := ReadSource(path, lim.ModuleSize)
	if err != nil {
		return nil, err
	}
	if len(src.Rejections) > 0 {
		return nil, &RejectedError{Rejections: src.Rejections}
	}
	if err := linkCheck(path, src.Module, lim); err != nil {
		return nil, err
	}
	_, compiled, err := rt.compile(ctx, src.Module, lim, true)
	if err != nil {
		if cerr := canceled(ctx, "compile "+path); cerr != nil {
			return nil, cerr
		}
		return nil, err
	}
	defer compiled.Close(ctx)
	if err := initialMemoryFits(compiled, lim.Memory); err != nil {
		return nil, err
	}
	mounts, err := fsmount.Open(cmd.Mounts)
	if err != nil {
		return nil, err
	}
	defer mounts.Close()

	budget := limits.NewCallBudget(lim)
	policy := cmd.Network
	if policy == nil {
		policy = denyAll
	}
	httpCall := subakohttp.NewCall(subakohttp.CallConfig{Policy: policy, Files: volumeFiles{mounts}, Budget: budget, Limits: lim, Logger: rt.log})
	stdin := wasi.NewStdin()
	stdout, stderr := cmd.Stdout, cmd.Stderr
	if stdout == nil {
		stdout = io.Discard
	}
	if stderr == nil {
		stderr = io.Discard
	}
	tail := newStderrTail(lim.StderrTail, nil)
	inst := wasi.NewInstance(wasi.Config{
		Args: cmd.Args, Env: cmd.Env, Stdin: stdin, Stdout: stdout,
		Stderr: io.MultiWriter(stderr, tail), Mounts: mounts, Budget: budget,
		MaxStdioWrite: lim.StdoutLine,
	})
	defer inst.Close()

	started := time.Now()
	parent := ctx
	ctx, cancel := context.WithDeadlineCause(ctx, started.Add(lim.CallTimeout), errDeadline)
	defer cancel()
	if cmd.Stdin != nil {
		go func() {
			_, _ = io.Copy(stdin, cmd.Stdin)
			stdin.CloseWrite()
		}()
	} else {
		stdin.CloseWrite()
	}
	memory := newMemoryLimit(uint64(lim.Memory))
	meter := fuel.NewMeter(lim.Fuel)
	ictx := subakohttp.WithCall(wasi.WithInstance(ctx, inst), httpCall)
	ictx = fuel.WithMeter(experimental.WithMemoryAllocator(ictx, memory), meter)
	ictx = fuel.WithTableBudget(ictx, memory)
	err = rt.runInstance(ictx, compiled)
	if err != nil && parent.Err() != nil && !hostCause(context.Cause(ctx)) {
		return nil, canceled(parent, "run "+path)
	}

	res := &CommandResult{Stats: Stats{
		Duration: time.Since(started), MemoryBytes: int64(memory.Peak()),
		BytesWritten: budget.Used(), HTTPRequests: httpCall.Stats().Requests, FuelUsed: meter.Used(),
	}}
	res.Stats.DurationMs = float64(res.Stats.Duration.Microseconds()) / 1000
	var exit *sys.ExitError
	switch {
	case err == nil:
	case errors.Is(context.Cause(ctx), errDeadline):
		res.Crash = &Crash{Reason: CrashTimeout, Message: fmt.Sprintf("the module ran out of time (%v)", lim.CallTimeout)}
	case meter.Exhausted():
		res.Crash = &Crash{Reason: CrashOutOfFuel, Message: fmt.Sprintf("the module used its whole fuel budget of %d", lim.Fuel)}
	case memory.refused() && (!errors.As(err, &exit) || exit.ExitCode() != 0):
		res.Crash = &Crash{Reason: CrashOutOfMemory, Message: fmt.Sprintf("the module needed more than its memory limit of %s", limits.FormatSize(lim.Memory))}
	case errors.As(err, &exit):
		res.ExitCode = exit.ExitCode()
	default:
		res.Crash = &Crash{Reason: CrashTrap, Message: "the module trapped: " + text.FirstLine(err.Error())}
	}
	if res.Crash != nil {
		res.Crash.Stderr = tail.String()
	}
	return res, nil
}

// linkCheck refuses a module whose imports the host cannot satisfy, with
// the problems validate reports for them: wazero would only fail at
// instantiation with a message naming the first missing module.
func linkCheck(path string, module []byte, lim limits.Limits) error {
	var link []Rejection
	for _, p := range modcheck.Check(module, modcheck.Options{MaxMemoryBytes: lim.Memory}) {
		switch p.Code {
		case CodeUnknownImport, CodeImportSignature, CodeNonFunctionImport:
			link = append(link, Rejection{Code: p.Code, Message: p.Message})
		}
	}
	if len(link) > 0 {
		return &LinkError{Path: path, Problems: link}
	}
	return nil
}
