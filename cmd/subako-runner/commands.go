package main

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/subako/subako-runner/protocol"
	"github.com/subako/subako-runner/runtime"
)

// packageReport is the JSON of validate and discover (cli.md).
type packageReport struct {
	OK        bool                `json:"ok"`
	Rejection []runtime.Rejection `json:"rejection,omitempty"`
	Tools     []protocol.Tool     `json:"tools,omitempty"`
	Crash     *runtime.Crash      `json:"crash,omitempty"`
}

func runVersion(ctx context.Context, e *env, args []string) int {
	var o options
	fs := newFlagSet(e, "version", "", "Print the version of subako-runner, the ABI it implements and the MCP revision it speaks.")
	fs.BoolVar(&o.json, "json", false, "print JSON")
	if _, err := parseArgs(fs, args, 0, 0); err != nil {
		return flagExit(err)
	}
	if o.json {
		return writeJSON(e, map[string]any{"version": runtime.Version, "abi": runtime.ABIVersion, "mcp": protocol.Version})
	}
	fmt.Fprintf(e.stdout, "subako-runner %s\nABI %d\nMCP %s\n", runtime.Version, runtime.ABIVersion, protocol.Version)
	return exitOK
}

func runValidate(ctx context.Context, e *env, args []string) int {
	var o options
	fs := newFlagSet(e, "validate", "PACKAGE", "Run the upload-time checks of ABI 1 on PACKAGE (a package directory or a .wasm file)\nand report every problem found.")
	o.addOutput(fs)
	fs.StringVar(&o.memory, "memory", "", "memory limit the module's initial memory must fit, e.g. 256MiB")
	rest, err := parseArgs(fs, args, 1, 1)
	if err != nil {
		return flagExit(err)
	}
	rt, code := openRuntime(ctx, e, &o)
	if rt == nil {
		return code
	}
	defer rt.Close(ctx)
	checked, err := rt.Validate(ctx, rest[0])
	if err != nil {
		return reportPackageError(ctx, e, &o, err)
	}
	defer checked.Close(ctx)
	if o.json {
		return writeJSON(e, packageReport{OK: true})
	}
	fmt.Fprintf(e.stdout, "ok: %s passes the upload checks (%d bytes, sha256 %s)\n", rest[0], len(checked.Source.Module), hex.EncodeToString(checked.Hash[:]))
	return exitOK
}

func runDiscover(ctx context.Context, e *env, args []string) int {
	var o options
	fs := newFlagSet(e, "discover", "PACKAGE", "Check PACKAGE, then run it once to discover its tools (server/discover, tools/list),\nas an upload does, and print the tool list.")
	o.addOutput(fs)
	o.addLimits(fs)
	fs.Lookup("timeout").Usage = "wall-clock limit of the discovery run, e.g. 30s (default 10s, as at upload)"
	o.timeoutIsDiscovery = true
	rest, err := parseArgs(fs, args, 1, 1)
	if err != nil {
		return flagExit(err)
	}
	rt, code := openRuntime(ctx, e, &o)
	if rt == nil {
		return code
	}
	defer rt.Close(ctx)
	pkg, err := rt.Load(ctx, rest[0])
	if err != nil {
		return reportPackageError(ctx, e, &o, err)
	}
	defer pkg.Close(ctx)
	if o.json {
		return writeJSON(e, packageReport{OK: true, Tools: pkg.Tools()})
	}
	printTools(e.stdout, pkg)
	return exitOK
}

func printTools(w io.Writer, pkg *runtime.Package) {
	tools := pkg.Tools()
	fmt.Fprintf(w, "%s: %d tool(s), discovered in %v\n", pkg.Name(), len(tools), pkg.Discovery.Duration.Round(1e6))
	for _, t := range tools {
		fmt.Fprintf(w, "\n  %s", t.Name)
		if t.Title != "" {
			fmt.Fprintf(w, " — %s", t.Title)
		}
		fmt.Fprintln(w)
		if t.Description != "" {
			fmt.Fprintf(w, "    %s\n", strings.ReplaceAll(t.Description, "\n", "\n    "))
		}
		if len(t.InputSchema) > 0 {
			fmt.Fprintf(w, "    input: %s\n", compact(t.InputSchema))
		}
		if len(t.OutputSchema) > 0 {
			fmt.Fprintf(w, "    output: %s\n", compact(t.OutputSchema))
		}
	}
}

// reportPackageError prints a rejection (exit 4), a discovery crash (exit 3),
// an interruption (exit 130) or a host error (exit 2).
func reportPackageError(ctx context.Context, e *env, o *options, err error) int {
	if code, ok := interrupted(ctx, e, err); ok {
		return code
	}
	var rej *runtime.RejectedError
	if !errors.As(err, &rej) {
		return fail(e, "%v", err)
	}
	code := exitRejected
	if rej.Crash != nil {
		code = exitCrashed
	}
	if o.json {
		writeJSON(e, packageReport{Rejection: rej.Rejections, Crash: rej.Crash})
		return code
	}
	fmt.Fprintf(e.stdout, "rejected: %d problem(s)\n", len(rej.Rejections))
	for _, r := range rej.Rejections {
		fmt.Fprintf(e.stdout, "  %s: %s\n", r.Code, r.Message)
	}
	if rej.Crash != nil {
		printStderr(e.stdout, rej.Crash.Stderr)
	}
	return code
}

func printStderr(w io.Writer, tail string) {
	if tail == "" {
		fmt.Fprintln(w, "  (the module wrote nothing to stderr)")
		return
	}
	fmt.Fprintln(w, "  last stderr of the module:")
	for _, line := range strings.Split(strings.TrimRight(tail, "\n"), "\n") {
		fmt.Fprintf(w, "  | %s\n", line)
	}
}

// openRuntime creates the runtime from the flags; a nil runtime comes with
// the exit status to return.
func openRuntime(ctx context.Context, e *env, o *options) (*runtime.Runtime, int) {
	cfg, err := newRuntimeConfig(o, e)
	if err != nil {
		return nil, fail(e, "%v", err)
	}
	rt, err := runtime.New(ctx, cfg)
	if err != nil {
		return nil, fail(e, "%v", err)
	}
	return rt, exitOK
}

func writeJSON(e *env, v any) int {
	enc := json.NewEncoder(e.stdout)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return fail(e, "writing JSON: %v", err)
	}
	return exitOK
}

// flagExit maps a flag parsing error to the exit status: --help is not an error.
func flagExit(err error) int {
	if errors.Is(err, flag.ErrHelp) {
		return exitOK
	}
	return exitUsage
}

func compact(raw json.RawMessage) string {
	var b bytes.Buffer
	if err := json.Compact(&b, raw); err != nil {
		return string(raw)
	}
	return b.String()
}

// readArgs reads ARGS_JSON from the argument, --args-file FILE, or stdin.
func readArgs(e *env, o *options, rest []string) (json.RawMessage, error) {
	switch {
	case o.argsFile != "" && len(rest) > 0:
		return nil, errors.New("give ARGS_JSON or --args-file, not both")
	case o.argsFile == "-":
		return io.ReadAll(e.stdin)
	case o.argsFile != "":
		return os.ReadFile(o.argsFile)
	case len(rest) > 0:
		return json.RawMessage(rest[0]), nil
	}
	return json.RawMessage("{}"), nil
}
