package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime/debug"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/subako/subako-runner/runtime"
)

// env is what a command may touch of the process, so tests can run the CLI
// in-process.
type env struct {
	stdin          io.Reader
	stdout, stderr io.Writer
	getenv         func(string) string
	// isTerminal says whether w is a terminal; nil means the real check
	// (tests inject one to drive the progress line).
	isTerminal func(w io.Writer) bool
}

func (e *env) terminal(w io.Writer) bool {
	if l, ok := w.(*lockedWriter); ok {
		w = l.w
	}
	if e.isTerminal != nil {
		return e.isTerminal(w)
	}
	return isTerminal(w)
}

// lockStderr is e with a stderr whose Writes never overlap. The command
// writes its own lines there while the runtime's logger writes its
// entries, some from a worker's events goroutine: the logger's lock covers
// only its own writes.
func (e *env) lockStderr() *env {
	if _, ok := e.stderr.(*lockedWriter); ok {
		return e
	}
	c := *e
	c.stderr = &lockedWriter{w: e.stderr}
	return &c
}

// lockedWriter makes each Write to w alone.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

func main() {
	// This process serves calls and owns its collector (docs/RATIONALE.md);
	// so does a worker, which runs the guests: set before it serves.
	if _, set := os.LookupEnv("GOGC"); !set {
		debug.SetGCPercent(runtime.GCPercent)
	}
	// A worker process of a runtime this binary started (--isolation
	// workers) serves and exits here; for any other process this returns
	// at once.
	runtime.ServeWorker()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := mainWith(ctx, &env{stdin: os.Stdin, stdout: os.Stdout, stderr: os.Stderr, getenv: os.Getenv}, os.Args[1:])
	stop()
	os.Exit(code)
}

// runtimeCloseTimeout bounds closing the runtime at the end of a command:
// its instances are stopped through their contexts, so this is the wait for
// them to go and for the temporary volumes to be removed.
const runtimeCloseTimeout = 1500 * time.Millisecond

// closeRuntime closes rt with a fresh bounded context: after SIGINT or
// SIGTERM the command's own context has ended, and a Close under it would
// give up at once and leave the runtime's temporary directory behind.
func closeRuntime(ctx context.Context, rt *runtime.Runtime) {
	c, cancel := context.WithTimeout(context.WithoutCancel(ctx), runtimeCloseTimeout)
	defer cancel()
	_ = rt.Close(c)
}

// exitStatus is a command's exit status once it has written its output.
type exitStatus int

func (s exitStatus) Error() string { return fmt.Sprintf("exit status %d", int(s)) }

// status turns a command's exit status into RunE's error.
func status(code int) error {
	if code == exitOK {
		return nil
	}
	return exitStatus(code)
}

// usageError is a mistake on the command line: reported as one line plus a
// hint to the command's --help, exit status 2.
type usageError struct {
	cmd string // the command path, e.g. "subako-runner call"
	msg string
}

func (u *usageError) Error() string { return u.msg }

func mainWith(ctx context.Context, e *env, args []string) int {
	e = e.lockStderr()
	root := newRootCmd(ctx, e)
	root.SetArgs(normalizeArgs(root, args))
	err := root.ExecuteContext(ctx)
	if err == nil {
		return exitOK
	}
	var st exitStatus
	if errors.As(err, &st) {
		return int(st)
	}
	var u *usageError
	cmdPath := root.Name()
	if errors.As(err, &u) {
		cmdPath = u.cmd
	}
	// Cobra's own errors (an unknown command) may carry suggestions on
	// further lines; the contract is one line.
	msg := err.Error()
	if first, rest, ok := strings.Cut(msg, "\n"); ok {
		msg = first
		if s := suggestion(rest); s != "" {
			msg += " (did you mean " + s + "?)"
		}
	}
	fmt.Fprintf(e.stderr, "subako-runner: %s\nRun '%s --help' for usage.\n", msg, cmdPath)
	return exitUsage
}

// suggestion picks the command cobra suggests ("Did you mean this?\n\tx").
func suggestion(rest string) string {
	for _, l := range strings.Split(rest, "\n") {
		if strings.HasPrefix(l, "\t") {
			return strings.TrimSpace(l)
		}
	}
	return ""
}

// fail reports a host error (or a bad flag value found after parsing) as
// one stderr line; exit status 2.
func fail(e *env, format string, a ...any) int {
	fmt.Fprintf(e.stderr, "subako-runner: "+format+"\n", a...)
	return exitUsage
}

// commandConstructors lists every command; adding a command is adding its
// file and its constructor here.
func commandConstructors() []func(*app) *cobra.Command {
	return []func(*app) *cobra.Command{
		newValidateCmd,
		newDiscoverCmd,
		newCallCmd,
		newMCPCmd,
		newInspectCmd,
		newCheckCmd,
		newRunCmd,
		newVersionCmd,
		newInitCmd,
		newWorkerCmd,
	}
}
