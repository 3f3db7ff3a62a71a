package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"

	"github.com/spf13/cobra"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/subako/subako-runner/runtime"
)

// workerArg is the hidden command a worker process of subako-runner is
// started with. main serves the worker before cobra sees it; the command
// itself is only reached when someone runs it by hand.
const workerArg = "worker"

// isolationValue is --isolation: where guests run.
type isolationValue runtime.Isolation

func (v *isolationValue) String() string { return runtime.Isolation(*v).String() }
func (v *isolationValue) Type() string   { return "MODE" }
func (v *isolationValue) Set(s string) error {
	switch s {
	case "workers":
		*v = isolationValue(runtime.IsolationWorkers)
	case "in-process":
		*v = isolationValue(runtime.IsolationInProcess)
	default:
		return errors.New("want workers or in-process")
	}
	return nil
}

// registerIsolation adds --isolation and --require-sandbox (every command
// that runs a module, through register).
func (h *hostFlags) registerIsolation(cmd *cobra.Command) {
	h.isolation = isolationValue(runtime.IsolationWorkers)
	fs := cmd.Flags()
	fs.Var(&h.isolation, "isolation", "where modules run: workers (sandboxed worker processes) or in-process (this process, as before workers)")
	fs.BoolVar(&h.requireSandbox, "require-sandbox", false, "refuse to start when a layer of the worker sandbox cannot be put in force on this machine")
}

// registerWorkers adds --workers (mcp, inspect: servers whose calls run
// side by side); the one-shot commands run one worker.
func (h *hostFlags) registerWorkers(cmd *cobra.Command) {
	h.workers = 0
	cmd.Flags().IntVar(&h.workers, "workers", 0, "run `N` worker processes (default: one per CPU)")
	h.serves = true
}

// workerConfig is the runtime's configuration of IsolationWorkers for a
// command on path (the package, or run's module): the workers are this
// executable started with the hidden worker command, and Landlock lets
// them reach only the package's directory, the command's read-only
// directories (--skills, run's read-only mounts) and its writable ones
// (--data, --tmp, run's --dir), beside the runtime's own temporary
// directory and compilation cache.
func (h *hostFlags) workerConfig(path string) (runtime.WorkerConfig, error) {
	exe, err := os.Executable()
	if err != nil {
		return runtime.WorkerConfig{}, fmt.Errorf("the worker executable: %w", err)
	}
	count := 1
	if h.serves {
		if h.workers < 0 {
			return runtime.WorkerConfig{}, fmt.Errorf("--workers %d: must not be negative (0 is one per CPU)", h.workers)
		}
		count = h.workers // 0: one per CPU
	}
	ro := append(packageDirs(path), h.readOnly...)
	return runtime.WorkerConfig{
		Executable:     exe,
		Args:           []string{workerArg},
		Count:          count,
		ReadOnly:       existingDirs(ro),
		ReadWrite:      existingDirs(h.readWrite),
		RequireSandbox: h.requireSandbox,
	}, nil
}

// packageRoot is the directory the workers must read for the package at
// path: the package directory itself, or the directory of a bare .wasm
// file.
func packageRoot(path string) string {
	if info, err := os.Stat(path); err == nil && info.IsDir() {
		return path
	}
	return filepath.Dir(path)
}

// packageDirs are the directories the workers read the package at path
// from: packageRoot, and where a module or manifest that is a symbolic
// link leads (Landlock judges the file a link leads to, not the link).
func packageDirs(path string) []string {
	root := packageRoot(path)
	dirs := []string{root}
	files := []string{path}
	if root == path {
		files = []string{filepath.Join(root, runtime.ModuleFile), filepath.Join(root, runtime.ManifestFile)}
	}
	for _, f := range files {
		if info, err := os.Lstat(f); err != nil || info.Mode()&fs.ModeSymlink == 0 {
			continue
		}
		if real, err := filepath.EvalSymlinks(f); err == nil {
			dirs = append(dirs, filepath.Dir(real))
		}
	}
	return dirs
}

// existingDirs makes dirs absolute, drops what is not an existing
// directory (a worker refuses to start on a rule it cannot apply; the
// command then fails on that path as it would in-process) and repeats.
func existingDirs(dirs []string) []string {
	var out []string
	for _, d := range dirs {
		if d == "" {
			continue
		}
		abs, err := filepath.Abs(d)
		if err != nil {
			continue
		}
		if info, err := os.Stat(abs); err != nil || !info.IsDir() {
			continue
		}
		if !slices.Contains(out, abs) {
			out = append(out, abs)
		}
	}
	return out
}

// missingPackage is the error of a path with nothing at it, found before
// the runtime starts: a worker's errors reach this process as text, so
// "no such package" is decided here, in either isolation.
func missingPackage(path string) error {
	_, err := os.Stat(path)
	var pe *fs.PathError
	if errors.Is(err, fs.ErrNotExist) && errors.As(err, &pe) {
		return err
	}
	return nil
}

// startFailed reports a runtime that could not start: a SIGINT or SIGTERM
// while it started (its workers take a moment) is the interruption's 130,
// whatever the start said; anything else a host error.
func startFailed(ctx context.Context, e *env, err error) int {
	if ctx.Err() != nil {
		fmt.Fprintf(e.stderr, "subako-runner: interrupted: %v\n", err)
		return exitInterrupted
	}
	return fail(e, "%s", packageErrorText(err))
}

// sandboxWarning writes the one line that says the workers run without
// some layer of their sandbox (the runtime's own log line is dropped by
// quietSandboxLog, so it is said once).
func sandboxWarning(w io.Writer, r runtime.SandboxReport) {
	if !r.Workers || len(r.Missing) == 0 {
		return
	}
	fmt.Fprintf(w, "subako-runner: WARNING: worker sandbox incomplete: %s (--require-sandbox refuses to run without every layer)\n", strings.Join(r.Missing, "; "))
}

// quietLog drops two runtime log lines: the one about an incomplete worker
// sandbox (sandboxWarning says it, one line, whatever the log level), and,
// once the command closes its runtime, a worker's complaint that its
// channel ended (the runtime closing it under the worker: no news).
func (h *hostFlags) quietLog(inner zapcore.Core) zapcore.Core {
	return &quietCore{Core: inner, closing: &h.closing}
}

type quietCore struct {
	zapcore.Core
	closing *atomic.Bool
}

func (c *quietCore) With(fields []zapcore.Field) zapcore.Core {
	return &quietCore{Core: c.Core.With(fields), closing: c.closing}
}

func (c *quietCore) Check(ent zapcore.Entry, ce *zapcore.CheckedEntry) *zapcore.CheckedEntry {
	if strings.HasPrefix(ent.Message, "worker sandbox incomplete") {
		return ce
	}
	if c.Core.Enabled(ent.Level) {
		return ce.AddCore(ent, c)
	}
	return ce
}

func (c *quietCore) Write(ent zapcore.Entry, fields []zapcore.Field) error {
	if ent.Message == "worker stderr" && c.closing.Load() {
		for _, f := range fields {
			if f.Key == "line" && strings.Contains(f.String, "subako-worker-channel") {
				return nil
			}
		}
	}
	return c.Core.Write(ent, fields)
}

// workerErrorText is the host-error line of an operation a worker's end
// cut off (runtime.WorkerError): the host's failure, not the package's.
func workerErrorText(err error) (string, bool) {
	var we *runtime.WorkerError
	if !errors.As(err, &we) {
		return "", false
	}
	return fmt.Sprintf("host error (%s): %v; this is the host's failure, not the package's: run the command again", runtime.CodeWorkerExited, err), true
}

// hostErrorReport is the "error" member of call --json, validate --json
// and discover --json when the host failed under the command.
type hostErrorReport struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// reportWorkerError reports err when it is a worker's end: the stderr line
// of a host error and, with --json, the document that says so (call's
// shape when call is set, validate's and discover's otherwise); exit 2.
func reportWorkerError(e *env, h *hostFlags, err error, call bool) (int, bool) {
	line, ok := workerErrorText(err)
	if !ok {
		return 0, false
	}
	fmt.Fprintf(e.stderr, "subako-runner: %s\n", line)
	if h.json {
		he := &hostErrorReport{Code: runtime.CodeWorkerExited, Message: err.Error()}
		if call {
			writeJSON(e, callReport{Outcome: outcomeHostError, Error: he})
		} else {
			writeJSON(e, packageReport{Error: he})
		}
	}
	return exitUsage, true
}

// outcomeHostError is call --json's outcome when the host failed under the
// call (a worker process ended): no verdict on the module.
const outcomeHostError = "host_error"

// newWorkerCmd is the hidden `worker` command: main serves a worker
// before cobra runs (runtime.ServeWorker), so reaching this command means
// the process was not started as one.
func newWorkerCmd(a *app) *cobra.Command {
	return &cobra.Command{
		Use:    workerArg,
		Short:  "serve as a worker process of another subako-runner (not run by hand)",
		Hidden: true,
		Args:   cobra.ArbitraryArgs,
		// The worker's flags are its parent's business: none are parsed.
		DisableFlagParsing: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			runtime.ServeWorker() // returns: this process is no worker
			fmt.Fprintln(a.e.stderr, "subako-runner: worker is started by subako-runner itself; it is not meant to be run by hand")
			return exitStatus(exitUsage)
		},
	}
}

// probeSandbox starts one worker process, as the commands do by default,
// and returns the sandbox it reports: what `version` says.
func probeSandbox(ctx context.Context) (runtime.SandboxReport, error) {
	exe, err := os.Executable()
	if err != nil {
		return runtime.SandboxReport{}, err
	}
	rt, err := runtime.New(ctx, runtime.Config{Logger: zap.NewNop(), Isolation: runtime.IsolationWorkers,
		Workers: runtime.WorkerConfig{Executable: exe, Args: []string{workerArg}, Count: 1}})
	if err != nil {
		return runtime.SandboxReport{}, err
	}
	defer closeRuntime(ctx, rt)
	return rt.Sandbox(), nil
}

// sandboxLine is version's line on the worker sandbox.
func sandboxLine(r runtime.SandboxReport, err error) string {
	if err != nil {
		return "sandbox: unknown: no worker process could be started: " + err.Error()
	}
	var layers []string
	if r.NoNewPrivs {
		layers = append(layers, "no_new_privs")
	}
	if r.Seccomp {
		layers = append(layers, fmt.Sprintf("seccomp (%d system calls)", r.SeccompSyscalls))
	}
	if r.Landlock > 0 {
		l := fmt.Sprintf("Landlock ABI %d", r.Landlock)
		if r.LandlockNet {
			l += " (files and TCP)"
		}
		layers = append(layers, l)
	}
	if r.Rlimits {
		layers = append(layers, "rlimits")
	}
	if r.MemoryGuard != "" {
		layers = append(layers, "memory ceiling by "+r.MemoryGuard)
	}
	line := "sandbox: " + strings.Join(layers, ", ")
	if len(r.Missing) > 0 {
		line += "; MISSING: " + strings.Join(r.Missing, "; ")
	}
	return line
}
