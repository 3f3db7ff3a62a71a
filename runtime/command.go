package runtime

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/tetratelabs/wazero/sys"

	"github.com/subako/subako-runner/fsmount"
	"github.com/subako/subako-runner/hostmod/subakohttp"
	"github.com/subako/subako-runner/internal/instance"
	"github.com/subako/subako-runner/internal/modcheck"
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

	// exchange: as CallRequest's, inside a worker process.
	exchange func(ctx context.Context, request []byte, budget *limits.WriteBudget) []byte
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
// anything runs. When ctx ends the run, the error wraps ctx.Err(). The
// command waits for its turn among Config.MaxInstances as calls do; after
// Runtime.Close the error is ErrClosed.
func (rt *Runtime) RunCommand(ctx context.Context, path string, cmd Command) (*CommandResult, error) {
	if rt.eng.IsClosed() {
		return nil, closedError("run " + path)
	}
	lim, err := rt.limitsFor(cmd.Limits)
	if err != nil {
		return nil, err
	}
	if rt.workers != nil {
		return rt.commandRemote(ctx, path, cmd, lim)
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
	if err := instance.InitialMemoryFits(instance.InitialMemory(compiled), lim.Memory); err != nil {
		return nil, err
	}
	// A command is an instance like a call's: it takes its turn among
	// Config.MaxInstances, and its clock starts when it has it.
	stdin := wasi.NewStdin()
	stdout := cmd.Stdout
	if stdout == nil {
		stdout = io.Discard
	}
	in, err := rt.eng.Start(ctx, instance.Spec{
		Compiled: compiled, Limits: lim, Timeout: lim.CallTimeout,
		Mounts:   func() (*fsmount.Set, error) { return fsmount.Open(cmd.Mounts) },
		Network:  cmd.Network, // nil denies every request
		Exchange: cmd.exchange,
		Args:     cmd.Args, Env: cmd.Env, Stdin: stdin, Stdout: stdout, Stderr: cmd.Stderr,
		Log: rt.log,
	})
	if err != nil {
		if errors.Is(err, ErrClosed) {
			return nil, closedError("run " + path)
		}
		return nil, fmt.Errorf("run %s: %w", path, err)
	}
	defer in.Close()
	if cmd.Stdin != nil {
		stop, _ := copyStdin(stdin, cmd.Stdin)
		defer stop()
	} else {
		stdin.CloseWrite()
	}
	err = in.Run()
	if ierr := in.Interrupted(err); ierr != nil {
		return nil, interruptedError("run "+path, ierr)
	}
	if err != nil && rt.eng.IsClosed() {
		return nil, closedError("run " + path) // the engine's close cut it off
	}
	res := &CommandResult{Stats: statsOf(in, 0)}
	var exit *sys.ExitError
	if res.Crash = crashOf(in.EndCrash(err)); res.Crash == nil && errors.As(err, &exit) {
		res.ExitCode = exit.ExitCode()
	}
	return res, nil
}

// copyStdin copies r into the module's stdin on a goroutine until r ends
// (then stdin closes) or stop is called. After stop returns, r is never read
// again: a Read already in progress when the command ended may still return
// (an io.Reader cannot be interrupted), and its bytes are dropped, but no
// new Read starts, so a long-lived reader of the embedder's (a terminal, a
// pipe it goes on using) loses nothing to a command that has ended.
//
// done is closed when the copier has ended.
func copyStdin(stdin *wasi.Stdin, r io.Reader) (stop func(), done <-chan struct{}) {
	ended := make(chan struct{})
	var mu sync.Mutex
	stopped := false
	next := func() bool { // whether the copier may go on
		mu.Lock()
		defer mu.Unlock()
		return !stopped
	}
	go func() {
		defer close(ended)
		buf := make([]byte, 32<<10)
		for next() {
			n, err := r.Read(buf)
			if n > 0 && next() {
				_, _ = stdin.Write(buf[:n])
			}
			if err != nil {
				stdin.CloseWrite()
				return
			}
		}
	}()
	return func() {
		mu.Lock()
		stopped = true
		mu.Unlock()
	}, ended
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
