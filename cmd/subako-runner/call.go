package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

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
}

func newCallCmd(a *app) *cobra.Command {
	var h hostFlags
	var c callFlags
	var argsFile string
	cmd := &cobra.Command{
		Use:   "call [flags] PACKAGE TOOL [ARGS_JSON]",
		Short: "validate, discover, then call one tool and print the model view",
		Long:  "Check and discover PACKAGE, then call TOOL once with ARGS_JSON (default {}) in a fresh\ninstance, and print the view the model reads.",
		Args:  positionals([]string{"PACKAGE", "TOOL", "ARGS_JSON"}, 2, 3),
		RunE: func(cmd *cobra.Command, args []string) error {
			arguments, err := readArgs(a.e, argsFile, args[2:])
			if err != nil {
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
	rt, closeRT, err := h.openRuntime(ctx, e, *req.Limits, path)
	if err != nil {
		return fail(e, "%v", err)
	}
	defer closeRT()
	pkg, err := rt.Load(ctx, path)
	if err != nil {
		var rej *runtime.RejectedError
		if h.json && errors.As(err, &rej) {
			outcome, code := "rejected", exitRejected
			if rej.Crash != nil {
				outcome, code = "crashed", exitCrashed
			}
			writeJSON(e, callReport{Outcome: outcome, Rejection: rej.Rejections, Crash: rej.Crash})
			return code
		}
		return reportPackageError(e, h, err)
	}
	defer pkg.Close(ctx)

	res, err := pkg.Call(ctx, req)
	if err != nil {
		return fail(e, "%v", err)
	}
	keep := c.volumes.keepTmp
	if !keep {
		defer res.Release()
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
	printCall(e.stdout, res)
	if keep {
		fmt.Fprintf(e.stdout, "\n/volume/tmp kept at %s\n", res.TmpDir)
	}
	return code
}

func printCall(w io.Writer, res *runtime.Result) {
	switch res.Outcome {
	case runtime.OutcomeCrashed:
		fmt.Fprintf(w, "crashed (%s): %s\n", res.Crash.Reason, res.Crash.Message)
		printStderr(w, res.Crash.Stderr)
	case runtime.OutcomeToolError:
		fmt.Fprintln(w, "tool error (isError: true) — the model reads:")
	}
	for _, v := range res.View {
		switch v.Type {
		case "text":
			fmt.Fprintln(w, v.Text)
		case "image":
			where := "inline"
			if v.HostPath != "" {
				where = v.Source + " at " + v.HostPath
			}
			fmt.Fprintf(w, "[image %s, %d bytes, %s]\n", v.MimeType, v.Bytes, where)
		case "file":
			fmt.Fprintf(w, "[file %s, %d bytes, at %s]\n", v.Path, v.Size, v.HostPath)
		case "link":
			fmt.Fprintf(w, "[link] %s\n", v.Text)
		case "note":
			fmt.Fprintf(w, "[note] %s\n", v.Text)
		}
	}
	if len(res.Parsed.StructuredContent) > 0 {
		fmt.Fprintf(w, "structuredContent: %s\n", compact(res.Parsed.StructuredContent))
	}
	s := res.Stats
	fmt.Fprintf(w, "(%.1f ms, peak memory %s, %d bytes written, %d HTTP requests)\n", s.DurationMs, humanBytes(s.MemoryBytes), s.BytesWritten, s.HTTPRequests)
}

func humanBytes(n int64) string {
	switch {
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}

// parseDirFlag parses --dir HOST[::GUEST] (wasmtime's syntax); without
// ::GUEST the directory appears under its own path.
func parseDirFlag(v string) (host, guest string, err error) {
	host, guest, found := strings.Cut(v, "::")
	if host == "" {
		return "", "", fmt.Errorf("--dir %q: empty host directory", v)
	}
	if !found {
		guest = host
	}
	abs, err := filepath.Abs(host)
	if err != nil {
		return "", "", err
	}
	if info, err := os.Stat(abs); err != nil || !info.IsDir() {
		return "", "", fmt.Errorf("--dir %q: %s is not a directory", v, host)
	}
	return abs, guest, nil
}
