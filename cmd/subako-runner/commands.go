package main

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/subako/subako-runner/internal/regfile"
	"github.com/subako/subako-runner/internal/text"
	"github.com/subako/subako-runner/limits"
	"github.com/subako/subako-runner/protocol"
	"github.com/subako/subako-runner/runtime"
)

// packageReport is the JSON of validate and discover (cli.md).
type packageReport struct {
	OK        bool                `json:"ok"`
	Rejection []runtime.Rejection `json:"rejection,omitempty"`
	Tools     []protocol.Tool     `json:"tools,omitempty"`
	Crash     *runtime.Crash      `json:"crash,omitempty"`
	// Set by validate when the package passed: what the human line says.
	Module *moduleReport `json:"module,omitempty"`
	// Error is set when the host failed under the command (a worker
	// process ended): no verdict on the package.
	Error *hostErrorReport `json:"error,omitempty"`
}

// versionBanner is what both `version` and `--version` print: the runner's
// version, the ABI it implements and the MCP revision it speaks.
func versionBanner() string {
	return fmt.Sprintf("subako-runner %s\nABI %d\nMCP %s\n", runtime.Version, runtime.ABIVersion, protocol.Version)
}

func newVersionCmd(a *app) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "version",
		Short: "print the version, ABI and MCP revision, and the worker sandbox",
		Long: "Print the version of subako-runner, the ABI it implements and the MCP revision it speaks\n" +
			"(also: subako-runner --version), then the isolation the commands use by default and the\n" +
			"layers of the worker sandbox on this machine (one worker process is started to find out).",
		Args: positionals(nil, 0, 0),
		RunE: func(cmd *cobra.Command, args []string) error {
			sb, sbErr := probeSandbox(a.ctx)
			if asJSON {
				doc := map[string]any{"version": runtime.Version, "abi": runtime.ABIVersion, "mcp": protocol.Version,
					"isolation": runtime.IsolationWorkers.String(), "sandbox": sb}
				if sbErr != nil {
					doc["sandboxError"] = sbErr.Error()
				}
				return status(writeJSON(a.e, doc))
			}
			fmt.Fprint(a.e.stdout, versionBanner())
			fmt.Fprintf(a.e.stdout, "isolation %s (--isolation=in-process turns it off)\n", runtime.IsolationWorkers)
			fmt.Fprintln(a.e.stdout, sandboxLine(sb, sbErr))
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

func newValidateCmd(a *app) *cobra.Command {
	var h hostFlags
	var memory sizeValue
	cmd := &cobra.Command{
		Use:   "validate [flags] PACKAGE",
		Short: "check a package against the upload rules of ABI 1",
		Long:  "Run the upload-time checks of ABI 1 on PACKAGE (a package directory or a .wasm file)\nand report every problem found.",
		Args:  positionals([]string{"PACKAGE"}, 1, 1),
		RunE: func(cmd *cobra.Command, args []string) error {
			lim := limits.Default()
			if memory.set {
				lim.Memory = memory.n
			}
			if err := lim.Validate(); err != nil {
				return usageErr(cmd, "%v", err)
			}
			return status(runValidate(a.ctx, a.e, &h, lim, args[0]))
		},
	}
	h.register(cmd, true)
	cmd.Flags().Var(&memory, "memory", "memory limit the module's initial memory must fit, e.g. 256MiB")
	return cmd
}

func runValidate(ctx context.Context, e *env, h *hostFlags, lim limits.Limits, path string) int {
	rt, closeRT, err := h.openRuntime(ctx, e, lim, path)
	if err != nil {
		return startFailed(ctx, e, err)
	}
	defer closeRT()
	checked, err := rt.Validate(ctx, path)
	if err != nil {
		return reportPackageError(ctx, e, h, err)
	}
	defer checked.Close(ctx)
	sum := hex.EncodeToString(checked.Hash[:])
	if h.json {
		return writeJSON(e, packageReport{OK: true, Module: &moduleReport{Bytes: len(checked.Source.Module), SHA256: sum}})
	}
	fmt.Fprintf(e.stdout, "ok: %s passes the upload checks (%d bytes, sha256 %s)\n", path, len(checked.Source.Module), sum)
	return exitOK
}

// moduleReport is what validate says of a module that passed.
type moduleReport struct {
	Bytes  int    `json:"bytes"`
	SHA256 string `json:"sha256"`
}

func newDiscoverCmd(a *app) *cobra.Command {
	var h hostFlags
	l := limitFlags{timeoutIsDiscovery: true}
	cmd := &cobra.Command{
		Use:   "discover [flags] PACKAGE",
		Short: "validate, then discover the package's tools",
		Long:  "Check PACKAGE, then run it once to discover its tools (server/discover, tools/list),\nas an upload does, and print the tool list.",
		Args:  positionals([]string{"PACKAGE"}, 1, 1),
		RunE: func(cmd *cobra.Command, args []string) error {
			lim, err := l.limits()
			if err != nil {
				return usageErr(cmd, "%v", err)
			}
			return status(runDiscover(a.ctx, a.e, &h, lim, args[0]))
		},
	}
	h.register(cmd, true)
	h.registerTrace(cmd)
	l.register(cmd)
	return cmd
}

func runDiscover(ctx context.Context, e *env, h *hostFlags, lim limits.Limits, path string) int {
	rt, closeRT, err := h.openRuntime(ctx, e, lim, path)
	if err != nil {
		return startFailed(ctx, e, err)
	}
	defer closeRT()
	pkg, err := rt.Load(ctx, path)
	if err != nil {
		return reportPackageError(ctx, e, h, err)
	}
	defer pkg.Close(ctx)
	if h.json {
		return writeJSON(e, packageReport{OK: true, Tools: pkg.Tools()})
	}
	printTools(e.stdout, pkg)
	return exitOK
}

func printTools(w io.Writer, pkg *runtime.Package) {
	printToolList(w, pkg.Name(), pkg.Discovery().Duration, pkg.Tools())
}

// printToolList prints discover's listing, every text of the package's
// with its control characters made visible (text.Terminal).
func printToolList(w io.Writer, name string, took time.Duration, tools []protocol.Tool) {
	fmt.Fprintf(w, "%s: %d tool(s), discovered in %v\n", text.Terminal(name), len(tools), took.Round(time.Millisecond))
	for _, t := range tools {
		fmt.Fprintf(w, "\n  %s", text.Terminal(t.Name))
		if t.Title != "" {
			fmt.Fprintf(w, " — %s", text.Terminal(t.Title))
		}
		fmt.Fprintln(w)
		if t.Description != "" {
			fmt.Fprintf(w, "    %s\n", strings.ReplaceAll(text.Terminal(t.Description), "\n", "\n    "))
		}
		if len(t.InputSchema) > 0 {
			fmt.Fprintf(w, "    input: %s\n", text.Terminal(compact(t.InputSchema)))
		}
		if len(t.OutputSchema) > 0 {
			fmt.Fprintf(w, "    output: %s\n", text.Terminal(compact(t.OutputSchema)))
		}
	}
}

// rejection returns the package's refusal and its exit status: 4, or 3
// when discovery crashed. Any other error is a host error: it is reported
// here and rej is nil.
func rejection(e *env, err error) (rej *runtime.RejectedError, code int) {
	if !errors.As(err, &rej) {
		return nil, fail(e, "%s", packageErrorText(err))
	}
	if rej.Crash != nil {
		return rej, exitCrashed
	}
	return rej, exitRejected
}

// reportPackageError prints a rejection (exit 4), a discovery crash (exit 3),
// an interruption (exit 130) or a host error (exit 2).
func reportPackageError(ctx context.Context, e *env, h *hostFlags, err error) int {
	if code, ok := interrupted(ctx, e, err); ok {
		return code
	}
	if code, ok := reportWorkerError(e, h, err, false); ok {
		return code
	}
	rej, code := rejection(e, err)
	if rej == nil {
		return code
	}
	if h.json {
		writeJSON(e, packageReport{Rejection: rej.Rejections, Crash: rej.Crash})
		return code
	}
	fmt.Fprintf(e.stdout, "rejected: %d problem(s)\n", len(rej.Rejections))
	for _, r := range rej.Rejections {
		fmt.Fprintf(e.stdout, "  %s: %s\n", r.Code, text.Terminal(r.Message))
	}
	if rej.Crash != nil {
		printStderr(e.stdout, rej.Crash.Stderr)
	}
	return code
}

// printStderr prints the module's last stderr, its control characters
// made visible (text.Terminal): it is the package's text.
func printStderr(w io.Writer, tail string) {
	if tail == "" {
		fmt.Fprintln(w, "  (the module wrote nothing to stderr)")
		return
	}
	fmt.Fprintln(w, "  last stderr of the module:")
	for _, line := range strings.Split(strings.TrimRight(text.Terminal(tail), "\n"), "\n") {
		fmt.Fprintf(w, "  | %s\n", line)
	}
}

// usageErr is a usage error found after parsing (a flag value that only
// the combination of flags makes wrong).
func usageErr(cmd *cobra.Command, format string, a ...any) error {
	return &usageError{cmd: cmd.CommandPath(), msg: fmt.Sprintf(format, a...)}
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

func compact(raw json.RawMessage) string {
	var b bytes.Buffer
	if err := json.Compact(&b, raw); err != nil {
		return string(raw)
	}
	return b.String()
}

// maxArgs bounds ARGS_JSON read from a file or stdin: the bound of what
// inspect's page may send, far more than any tool's arguments.
const maxArgs = 16 << 20

// readArgs reads ARGS_JSON from the argument, --args-file FILE, or stdin.
// A file must be a regular one (a FIFO or /dev/zero is refused by type);
// stdin is read up to maxArgs bytes, and the read ends when ctx does
// (SIGINT/SIGTERM), however long stdin takes to end.
func readArgs(ctx context.Context, e *env, argsFile string, rest []string) (json.RawMessage, error) {
	switch {
	case argsFile != "" && len(rest) > 0:
		return nil, errors.New("give ARGS_JSON or --args-file, not both")
	case argsFile == "-":
		return readBounded(ctx, e.stdin, maxArgs, "ARGS_JSON on stdin")
	case argsFile != "":
		b, err := regfile.ReadFile(argsFile, maxArgs)
		var tooLarge *regfile.TooLargeError
		if errors.As(err, &tooLarge) {
			return nil, fmt.Errorf("--args-file %s is over %d MiB", argsFile, maxArgs>>20)
		}
		return b, err
	case len(rest) > 0:
		return json.RawMessage(rest[0]), nil
	}
	return json.RawMessage("{}"), nil
}

// readBounded reads r to its end, at most limit bytes (what names it in
// the error), or until ctx ends: the read goes on in the background then,
// and the process exits past it.
func readBounded(ctx context.Context, r io.Reader, limit int64, what string) ([]byte, error) {
	type read struct {
		b   []byte
		err error
	}
	done := make(chan read, 1)
	go func() {
		b, err := io.ReadAll(io.LimitReader(r, limit+1))
		done <- read{b, err}
	}()
	select {
	case res := <-done:
		if int64(len(res.b)) > limit {
			return nil, fmt.Errorf("%s is over %d MiB", what, limit>>20)
		}
		return res.b, res.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// packageErrorText is a host error reading PACKAGE, said so that the
// user sees what PACKAGE must be: a path that does not exist is named as
// a package that does not exist, not as a bare stat error.
func packageErrorText(err error) string {
	var pe *fs.PathError
	if errors.Is(err, fs.ErrNotExist) && errors.As(err, &pe) {
		return fmt.Sprintf("%s: no such package (nothing at that path): PACKAGE is a package directory (subako-package.json and module.wasm) or a .wasm module", pe.Path)
	}
	return err.Error()
}
