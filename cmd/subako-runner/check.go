package main

import (
	"context"
	"flag"
	"io"
	"os"

	"github.com/subako/subako-runner/conformance"
)

func runCheck(ctx context.Context, e *env, args []string) int {
	var o options
	var format, examplesFile string
	fs := newFlagSet(e, "check", "PACKAGE", "Run the conformance suite on PACKAGE: the upload checks, discovery and a set of probes,\n"+
		"each checklist item of ABI 1 reported as pass, warning, failure or skipped.\n"+
		"Exit status: 0 when no check failed (warnings allowed), 1 when a check failed, 2 on a usage or host error.")
	o.addOutput(fs)
	o.addLimits(fs)
	fs.StringVar(&format, "format", "human", "report `FORMAT`: human, json or junit (--json is --format json)")
	fs.StringVar(&examplesFile, "examples", "", "JSON `FILE` mapping tool names to arrays of argument objects to call and report")
	rest, err := parseArgs(fs, args, 1, 1)
	if err != nil {
		return flagExit(err)
	}
	f, err := conformance.ParseFormat(format)
	if err != nil {
		return fail(e, "--format: %v", err)
	}
	if o.json {
		if formatSet(fs) && f != conformance.FormatJSON {
			return fail(e, "--json and --format %s contradict each other", f)
		}
		f = conformance.FormatJSON
	}
	var opts conformance.Options
	if examplesFile != "" {
		b, err := os.ReadFile(examplesFile)
		if err != nil {
			return fail(e, "--examples: %v", err)
		}
		if opts.Examples, err = conformance.ParseExamples(b); err != nil {
			return fail(e, "--examples %s: %v", examplesFile, err)
		}
	}
	rt, code := openRuntime(ctx, e, &o)
	if rt == nil {
		return code
	}
	defer rt.Close(ctx)
	rep, err := conformance.Run(ctx, rt, rest[0], opts)
	if err != nil {
		if code, ok := interrupted(ctx, e, err); ok {
			return code
		}
		return fail(e, "%v", err)
	}
	color := f == conformance.FormatHuman && isTerminal(e.stdout) && e.getenv("NO_COLOR") == ""
	if err := rep.Write(e.stdout, f, color); err != nil {
		return fail(e, "writing the report: %v", err)
	}
	if !rep.Passed {
		return exitToolError
	}
	return exitOK
}

func formatSet(fs *flag.FlagSet) bool {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == "format" })
	return set
}

// isTerminal reports whether w is a character device (a terminal); only
// then does the human report use colour.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	if err != nil {
		return false
	}
	return st.Mode()&os.ModeCharDevice != 0
}
