package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/subako/subako-runner/conformance"
	"github.com/subako/subako-runner/internal/regfile"
	"github.com/subako/subako-runner/limits"
)

func newCheckCmd(a *app) *cobra.Command {
	var h hostFlags
	var l limitFlags
	var n networkFlags
	var format, examplesFile string
	var strict bool
	cmd := &cobra.Command{
		Use:   "check [flags] PACKAGE",
		Short: "run the conformance suite on a package and report every checklist item",
		Long: "Run the conformance suite on PACKAGE: the upload checks, discovery and a set of probes,\n" +
			"each checklist item of ABI 1 reported as pass, warning, failure or skipped.\n" +
			"Exit status: 0 when no check failed (warnings allowed), 1 when a check failed (with --strict: or warned,\n" +
			"an example call that answered isError included), 2 on a usage or host error.",
		Args: positionals([]string{"PACKAGE"}, 1, 1),
		RunE: func(cmd *cobra.Command, args []string) error {
			f, err := conformance.ParseFormat(format)
			if err != nil {
				return usageErr(cmd, "--format: %v", err)
			}
			if h.json {
				if cmd.Flags().Changed("format") && f != conformance.FormatJSON {
					return usageErr(cmd, "--json and --format %s contradict each other", f)
				}
				f = conformance.FormatJSON
			}
			var opts conformance.Options
			if strict {
				opts.FailOn = conformance.Warn
			}
			if opts.Examples, err = readExamples(examplesFile); err != nil {
				return usageErr(cmd, "%v", err)
			}
			if n.set() && examplesFile == "" {
				return usageErr(cmd, "the network flags apply to the --examples calls only (the probes run without network); give --examples FILE")
			}
			if opts.ExampleNetwork, err = n.policy(a.e); err != nil {
				return usageErr(cmd, "%v", err)
			}
			lim, err := l.limits()
			if err != nil {
				return usageErr(cmd, "%v", err)
			}
			return status(runCheck(a.ctx, a.e, &h, lim, f, opts, args[0]))
		},
	}
	h.register(cmd, true)
	h.registerTrace(cmd)
	l.register(cmd)
	cmd.Flags().StringVar(&format, "format", "human", "report `FORMAT`: human, json or junit (--json is --format json)")
	cmd.Flags().StringVar(&examplesFile, "examples", "", "JSON `FILE` mapping tool names to arrays of argument objects to call and report")
	cmd.Flags().BoolVar(&strict, "strict", false, "fail the run (exit 1) on warnings too, example calls that answered isError included: for CI")
	n.register(cmd)
	for _, name := range []string{"allow-host", "credential", "resolve", "allow-private"} {
		f := cmd.Flags().Lookup(name)
		f.Usage += " (--examples calls only)"
	}
	return cmd
}

func runCheck(ctx context.Context, e *env, h *hostFlags, lim limits.Limits, f conformance.Format, opts conformance.Options, path string) int {
	rt, closeRT, err := h.openRuntime(ctx, e, lim, path)
	if err != nil {
		return startFailed(ctx, e, err)
	}
	defer closeRT()
	rep, err := conformance.Run(ctx, rt, path, opts)
	if err != nil {
		if code, ok := interrupted(ctx, e, err); ok {
			return code
		}
		if line, ok := workerErrorText(err); ok {
			return fail(e, "%s", line)
		}
		return fail(e, "%v", err)
	}
	color := f == conformance.FormatHuman && e.terminal(e.stdout) && e.getenv("NO_COLOR") == ""
	if err := rep.Write(e.stdout, f, color); err != nil {
		return fail(e, "writing the report: %v", err)
	}
	if !rep.Passed {
		return exitToolError
	}
	return exitOK
}

// readExamples reads an --examples file (check, inspect); "" is none.
func readExamples(file string) (map[string][]json.RawMessage, error) {
	if file == "" {
		return nil, nil
	}
	b, err := regfile.ReadFile(file, maxArgs)
	if err != nil {
		return nil, fmt.Errorf("--examples: %v", err)
	}
	examples, err := conformance.ParseExamples(b)
	if err != nil {
		return nil, fmt.Errorf("--examples %s: %v", file, err)
	}
	return examples, nil
}

// isTerminal reports whether w is a terminal: only then does the human
// report use colour and the progress line appear.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}
