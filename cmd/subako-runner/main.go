package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

// Exit statuses of cli.md.
const (
	exitOK        = 0
	exitToolError = 1 // also: a check failed
	exitUsage     = 2
	exitCrashed   = 3
	exitRejected  = 4
)

// env is what a command may touch of the process, so tests can run the CLI
// in-process.
type env struct {
	stdin          io.Reader
	stdout, stderr io.Writer
	getenv         func(string) string
}

type command struct {
	name    string
	summary string
	run     func(ctx context.Context, e *env, args []string) int
}

func commands() []command {
	return []command{
		{"validate", "check a package against the upload rules of ABI 1", runValidate},
		{"discover", "validate, then discover the package's tools", runDiscover},
		{"call", "validate, discover, then call one tool and print the model view", runCall},
		{"check", "run the conformance suite on a package and report every checklist item", runCheck},
		{"run", "run a module as a plain WASI preview 1 command (with subako_http)", runRun},
		{"version", "print the version, ABI and MCP revision", runVersion},
	}
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := mainWith(ctx, &env{stdin: os.Stdin, stdout: os.Stdout, stderr: os.Stderr, getenv: os.Getenv}, os.Args[1:])
	stop()
	os.Exit(code)
}

func mainWith(ctx context.Context, e *env, args []string) int {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		usage(e.stdout)
		if len(args) == 0 {
			return exitUsage
		}
		return exitOK
	}
	for _, c := range commands() {
		if c.name == args[0] {
			return c.run(ctx, e, args[1:])
		}
	}
	fmt.Fprintf(e.stderr, "subako-runner: unknown command %q\n\n", args[0])
	usage(e.stderr)
	return exitUsage
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "subako-runner — the host of Subako ABI 1 packages (WASI preview 1 MCP servers)")
	fmt.Fprintln(w, "\nUsage: subako-runner COMMAND [FLAGS] ARGS...\n\nCommands:")
	for _, c := range commands() {
		fmt.Fprintf(w, "  %-9s %s\n", c.name, c.summary)
	}
	fmt.Fprintln(w, "\nRun 'subako-runner COMMAND --help' for a command's flags.")
	fmt.Fprintln(w, "Exit status: 0 ok, 1 tool error, 2 usage or host error, 3 module crashed, 4 package rejected.")
}

func fail(e *env, format string, a ...any) int {
	fmt.Fprintf(e.stderr, "subako-runner: "+format+"\n", a...)
	return exitUsage
}
