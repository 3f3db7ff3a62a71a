package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/subako/subako-runner/internal/text"
	"github.com/subako/subako-runner/limits"
	"github.com/subako/subako-runner/protocol"
	"github.com/subako/subako-runner/runtime"
)

// callReport is the JSON of call (cli.md).
type callReport struct {
	Outcome   string              `json:"outcome"`
	Result    json.RawMessage     `json:"result,omitempty"`
	View      []protocol.ViewItem `json:"view,omitempty"`
	Crash     *runtime.Crash      `json:"crash,omitempty"`
	Rejection []runtime.Rejection `json:"rejection,omitempty"`
	Stats     *runtime.Stats      `json:"stats,omitempty"`
	TmpDir    string              `json:"tmpDir,omitempty"`
	Error     *hostErrorReport    `json:"error,omitempty"`
}

func newCallCmd(a *app) *cobra.Command {
	var h hostFlags
	var c callFlags
	var argsFile string
	cmd := &cobra.Command{
		Use:   "call [flags] PACKAGE TOOL [ARGS_JSON]",
		Short: "validate, discover, then call one tool and print the model view",
		Long: "Check and discover PACKAGE, then call TOOL once with ARGS_JSON (default {}) in a fresh\ninstance, and print the view the model reads.\n\n" +
			exitStatusList(exitOK, exitToolError, exitUsage, exitCrashed, exitRejected, exitInterrupted),
		Example: `  subako-runner call ./package greet '{"name": "Ada"}'
  subako-runner call --json ./package greet '{"name": "Ada"}'      # one JSON document: outcome, view, stats
  echo '{"name": "Ada"}' | subako-runner call --args-file - ./package greet
  subako-runner call --allow-host api.example.com ./package fetch '{"url": "https://api.example.com/"}'
  subako-runner call --trace ./package greet '{}'                  # the conversation with the instance, on stderr`,
		Args: positionals([]string{"PACKAGE", "TOOL", "ARGS_JSON"}, 2, 3),
		RunE: func(cmd *cobra.Command, args []string) error {
			arguments, err := readArgs(a.ctx, a.e, argsFile, args[2:])
			if code, ok := interrupted(a.ctx, a.e, err); ok {
				return status(code)
			}
			if err != nil {
				return usageErr(cmd, "%v", err)
			}
			if err := argsError(arguments); err != nil {
				return usageErr(cmd, "%v", err)
			}
			req, err := c.request(a.e, args[1], arguments)
			if err != nil {
				return usageErr(cmd, "%v", err)
			}
			return status(runCall(a.ctx, a.e, &h, &c, args[0], req))
		},
	}
	h.register(cmd, true)
	h.registerTrace(cmd)
	c.register(cmd)
	cmd.Flags().StringVar(&argsFile, "args-file", "", "read ARGS_JSON from `FILE` (- for stdin)")
	return cmd
}

func runCall(ctx context.Context, e *env, h *hostFlags, c *callFlags, path string, req runtime.CallRequest) int {
	var unused string // the kept /volume/tmp, until a call has run in it
	if c.volumes.keepTmp && req.Tmp == "" {
		// The runtime removes the directories it makes when it closes; a
		// kept one is made here, where nothing sweeps it, and before the
		// runtime, whose workers must be let write it.
		dir, err := os.MkdirTemp("", "subako-tmp-")
		if err != nil {
			return fail(e, "%v", err)
		}
		req.Tmp, unused = dir, dir
		defer func() {
			if unused != "" {
				os.Remove(unused) // no call ran: nothing to keep
			}
		}()
	}
	c.volumes.allow(h, req.Tmp)
	rt, closeRT, err := h.openRuntime(ctx, e, *req.Limits, path)
	if err != nil {
		return startFailed(ctx, e, err)
	}
	defer closeRT()
	pkg, err := rt.Load(ctx, path)
	if err != nil {
		if code, ok := reportWorkerError(e, h, err, true); ok {
			return code
		}
		var rej *runtime.RejectedError
		if h.json && errors.As(err, &rej) {
			outcome, code := "rejected", exitRejected
			if rej.Crash != nil {
				outcome, code = "crashed", exitCrashed
			}
			writeJSON(e, callReport{Outcome: outcome, Rejection: rej.Rejections, Crash: rej.Crash})
			return code
		}
		return reportPackageError(ctx, e, h, err)
	}
	defer pkg.Close(ctx)
	if tool, ok := pkg.Tool(req.Tool); ok {
		if w := schemaWarning(tool, req.Arguments); w != "" {
			fmt.Fprintln(e.stderr, w)
		}
	}

	// A call that runs long (a loop, a slow server) is not silent on a
	// terminal: the status line names the limits that will stop it.
	if h.status != nil {
		h.status.start(fmt.Sprintf("calling %s (time limit %v, fuel %s; Ctrl-C stops it)…", req.Tool, req.Limits.CallTimeout, fuelText(req.Limits.Fuel)))
	}
	res, err := pkg.Call(ctx, req)
	unused = ""
	if h.status != nil {
		h.status.end()
	}
	if err != nil {
		if code, ok := interrupted(ctx, e, err); ok {
			return code
		}
		if code, ok := reportWorkerError(e, h, err, true); ok {
			return code
		}
		return fail(e, "%v", err)
	}
	keep := c.volumes.keepTmp
	removed := "" // the volume whose files are gone when the command ends
	if !keep {
		// The runtime removes a volume it made off the caller's path, so
		// its files may still be there while this prints: the output names
		// only host paths that outlive the command.
		if req.Tmp == "" {
			removed = res.TmpDir
		}
		if err := res.Release(); err != nil {
			fmt.Fprintf(e.stderr, "subako-runner: WARNING: %v\n", err)
		}
	}

	if res.Outcome == runtime.OutcomeCrashed {
		if hint := limitHint(&c.limits, *req.Limits, res.Crash.Reason); hint != "" {
			fmt.Fprintln(e.stderr, hint)
		}
	}
	code := exitOK
	switch res.Outcome {
	case runtime.OutcomeToolError:
		code = exitToolError
	case runtime.OutcomeCrashed:
		code = exitCrashed
	}
	if h.json {
		rep := callReport{Outcome: string(res.Outcome), Result: res.Result, View: res.View, Crash: res.Crash, Stats: &res.Stats}
		if keep {
			rep.TmpDir = res.TmpDir
		}
		writeJSON(e, rep)
		return code
	}
	if hidden := printCall(e.stdout, res, removed); hidden {
		fmt.Fprintln(e.stdout, "(the files under /volume/tmp were removed with it; --keep-tmp keeps them)")
	}
	if keep {
		fmt.Fprintf(e.stdout, "\n/volume/tmp kept at %s\n", res.TmpDir)
	}
	return code
}

// interrupted reports whether err is the command's own context ending; if
// so it writes the one stderr line of a host error and returns 130.
func interrupted(ctx context.Context, e *env, err error) (int, bool) {
	if ctx.Err() == nil || !errors.Is(err, ctx.Err()) {
		return 0, false
	}
	fmt.Fprintf(e.stderr, "subako-runner: interrupted: %v\n", err)
	return exitInterrupted, true
}

// printCall prints the model view, every text of the module's with its
// control characters made visible (text.Terminal); hidden says whether a volume file's
// host path was left out because the file is gone, or is in removed (the
// released /volume/tmp, going away).
func printCall(w io.Writer, res *runtime.Result, removed string) (hidden bool) {
	exists := func(p string) bool {
		if p == "" {
			return false
		}
		if removed != "" && strings.HasPrefix(p, removed+string(filepath.Separator)) {
			hidden = true
			return false
		}
		_, err := os.Stat(p)
		if err != nil {
			hidden = true
		}
		return err == nil
	}
	switch res.Outcome {
	case runtime.OutcomeCrashed:
		fmt.Fprintf(w, "crashed (%s): %s\n", res.Crash.Reason, text.Terminal(res.Crash.Message))
		printStderr(w, res.Crash.Stderr)
	case runtime.OutcomeToolError:
		fmt.Fprintln(w, "tool error (isError: true) — the model reads:")
	}
	for _, v := range res.View {
		switch v.Type {
		case "text":
			fmt.Fprintln(w, text.Terminal(v.Text))
		case "image":
			where := "inline"
			if v.Source != "" && v.Source != "inline" {
				where = v.Source
			}
			if exists(v.HostPath) {
				where += " at " + v.HostPath
			}
			fmt.Fprintf(w, "[image %s, %d bytes, %s]\n", text.Terminal(v.MimeType), v.Bytes, text.Terminal(where))
		case "file":
			if exists(v.HostPath) {
				fmt.Fprintf(w, "[file %s, %d bytes, at %s]\n", text.Terminal(v.Path), v.Size, text.Terminal(v.HostPath))
			} else {
				fmt.Fprintf(w, "[file %s, %d bytes]\n", text.Terminal(v.Path), v.Size)
			}
		case "link":
			fmt.Fprintf(w, "[link] %s\n", text.Terminal(v.Text))
		case "note":
			fmt.Fprintf(w, "[note] %s\n", text.Terminal(v.Text))
		}
	}
	if len(res.Parsed.StructuredContent) > 0 {
		fmt.Fprintf(w, "structuredContent: %s\n", text.Terminal(compact(res.Parsed.StructuredContent)))
	}
	s := res.Stats
	fmt.Fprintf(w, "(%.1f ms, peak memory %s, %d bytes written, %d HTTP requests)\n", runtime.Milliseconds(s.Duration), limits.HumanSize(s.MemoryBytes), s.BytesWritten, s.HTTPRequests)
	return hidden
}

// parseDirFlag parses --dir HOST[::GUEST] (wasmtime's syntax). Without
// ::GUEST the directory appears under the path as written, as in
// wasmtime: --dir data is the guest's "data", which a guest resolves
// against its working directory "/", so it is mounted at /data and both
// "data/x" and "/data/x" reach it; --dir . is mounted at "/". A relative
// path that climbs out ("../x") needs an explicit GUEST. relative says the
// guest path was relative: run then gives the module PWD=/, which Go's
// wasip1 port needs to resolve "data/x" from "/" (it otherwise starts in
// its first preopen).
func parseDirFlag(v string) (host, guest string, relative bool, err error) {
	host, guest, found := strings.Cut(v, "::")
	if host == "" {
		return "", "", false, fmt.Errorf("--dir %q: empty host directory", v)
	}
	if !found {
		guest = host
	}
	guest = filepath.ToSlash(guest)
	if guest == "" {
		return "", "", false, fmt.Errorf("--dir %q: empty guest path", v)
	}
	if relative = !path.IsAbs(guest); relative {
		rel := path.Clean(guest)
		if rel == ".." || strings.HasPrefix(rel, "../") {
			return "", "", false, fmt.Errorf("--dir %q: %s climbs above the guest's working directory; name the guest path: --dir %s::/%s", v, guest, host, path.Base(rel))
		}
		guest = path.Join("/", rel)
	}
	guest = path.Clean(guest)
	abs, err := filepath.Abs(host)
	if err != nil {
		return "", "", false, err
	}
	if info, err := os.Stat(abs); err != nil || !info.IsDir() {
		return "", "", false, fmt.Errorf("--dir %q: %s is not a directory", v, host)
	}
	return abs, guest, relative, nil
}

// exitStatusList is the "Exit status" paragraph of a command's help: the rows
// of exitStatuses (exit.go, the one table) for the codes it can exit with.
func exitStatusList(codes ...int) string {
	var b strings.Builder
	b.WriteString("Exit status:")
	for _, row := range exitStatuses() {
		if slices.Contains(codes, row.code) {
			fmt.Fprintf(&b, "\n  %-4d %s", row.code, strings.ReplaceAll(row.summary, "`", ""))
		}
	}
	return b.String()
}
