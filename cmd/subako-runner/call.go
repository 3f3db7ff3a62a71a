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

func runCall(ctx context.Context, e *env, args []string) int {
	var o options
	fs := newFlagSet(e, "call", "PACKAGE TOOL [ARGS_JSON]", "Check and discover PACKAGE, then call TOOL once with ARGS_JSON (default {}) in a fresh\ninstance, and print the view the model reads.")
	o.addOutput(fs)
	o.addLimits(fs)
	o.addVolumes(fs)
	o.addNetwork(fs)
	fs.StringVar(&o.argsFile, "args-file", "", "read ARGS_JSON from `FILE` (- for stdin)")
	rest, err := parseArgs(fs, args, 2, 3)
	if err != nil {
		return flagExit(err)
	}
	arguments, err := readArgs(e, &o, rest[2:])
	if err != nil {
		return fail(e, "%v", err)
	}
	policy, err := o.policy(e)
	if err != nil {
		return fail(e, "%v", err)
	}
	rt, code := openRuntime(ctx, e, &o)
	if rt == nil {
		return code
	}
	defer rt.Close(ctx)
	pkg, err := rt.Load(ctx, rest[0])
	if err != nil {
		var rej *runtime.RejectedError
		if o.json && errors.As(err, &rej) {
			outcome, code := "rejected", exitRejected
			if rej.Crash != nil {
				outcome, code = "crashed", exitCrashed
			}
			writeJSON(e, callReport{Outcome: outcome, Rejection: rej.Rejections, Crash: rej.Crash})
			return code
		}
		return reportPackageError(e, &o, err)
	}
	defer pkg.Close(ctx)

	req := runtime.CallRequest{Tool: rest[1], Arguments: arguments, Tmp: o.tmp, Data: o.data, Skills: o.skills, Network: policy}
	if o.keepTmp && req.Tmp == "" {
		// The runtime removes the directories it makes when it closes; a
		// kept one is made here, where nothing sweeps it.
		dir, err := os.MkdirTemp("", "subako-tmp-")
		if err != nil {
			return fail(e, "%v", err)
		}
		req.Tmp = dir
	}
	lim := rt.Limits()
	req.Limits = &lim
	res, err := pkg.Call(ctx, req)
	if err != nil {
		return fail(e, "%v", err)
	}
	if !o.keepTmp {
		defer res.Release()
	}

	code = exitOK
	switch res.Outcome {
	case runtime.OutcomeToolError:
		code = exitToolError
	case runtime.OutcomeCrashed:
		code = exitCrashed
	}
	if o.json {
		rep := callReport{Outcome: string(res.Outcome), Result: res.Result, View: res.View, Crash: res.Crash, Stats: &res.Stats}
		if o.keepTmp {
			rep.TmpDir = res.TmpDir
		}
		writeJSON(e, rep)
		return code
	}
	printCall(e.stdout, res)
	if o.keepTmp {
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
