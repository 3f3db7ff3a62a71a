package main

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// runAs runs the CLI in-process with stderr seen as a terminal or not.
func runAs(t *testing.T, terminal bool, args ...string) (int, string, string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	e := &env{stdin: strings.NewReader(""), stdout: &stdout, stderr: &stderr, getenv: func(string) string { return "" },
		isTerminal: func(w io.Writer) bool { return terminal && w == io.Writer(&stderr) }}
	code := mainWith(context.Background(), e, args)
	return code, stdout.String(), stderr.String()
}

func TestProgressLineOnATerminalOnly(t *testing.T) {
	pkg := pkgDir(t, "greet", nil)
	const erase = "\r\x1b[K"
	code, out, errOut := runAs(t, true, "discover", pkg)
	if code != exitOK || !strings.Contains(out, "tool(s)") {
		t.Fatalf("exit %d, %q", code, out)
	}
	name := filepath.Base(pkg) + "/module.wasm"
	for _, want := range []string{erase + "compiling " + name + " (", " MB)… ", erase + "discovering the tools of " + name + "… "} {
		if !strings.Contains(errOut, want) {
			t.Errorf("the status line lacks %q: %q", want, errOut)
		}
	}
	if !strings.HasSuffix(errOut, erase) {
		t.Errorf("the status line was not erased at the end: %q", errOut)
	}
	if strings.Contains(out, "\x1b") {
		t.Errorf("the status line reached stdout: %q", out)
	}
	for _, args := range [][]string{{"discover", "--quiet", pkg}, {"discover", "-q", pkg}, {"discover", "--trace", pkg}} {
		if _, _, errOut := runAs(t, true, args...); strings.Contains(errOut, "\x1b") || strings.Contains(errOut, "compiling") {
			t.Errorf("%q: a status line: %q", args, errOut)
		}
	}
	if _, _, errOut := runAs(t, false, "discover", pkg); errOut != "" {
		t.Errorf("not a terminal: stderr %q", errOut)
	}
	// A call shows its own line, naming the limits that will stop it
	// (issue 28: a loop ran 20 s in silence before out_of_fuel).
	code, _, errOut = runAs(t, true, "call", "--fuel", "5e9", pkg, "greet", `{"name":"Ada"}`)
	if want := erase + "calling greet (time limit 1m0s, fuel 5e+09; Ctrl-C stops it)… "; code != exitOK || !strings.Contains(errOut, want) || !strings.HasSuffix(errOut, erase) {
		t.Errorf("call: exit %d, stderr %q; want %q, erased at the end", code, errOut, want)
	}
	if _, _, errOut := runAs(t, false, "call", pkg, "greet", `{"name":"Ada"}`); errOut != "" {
		t.Errorf("call, not a terminal: stderr %q", errOut)
	}
}

func TestDebugLogSaysCompilationCacheHit(t *testing.T) {
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	t.Setenv("HOME", t.TempDir())
	if dir, err := os.UserCacheDir(); err != nil || !strings.HasPrefix(dir, os.Getenv("XDG_CACHE_HOME")) {
		t.Skipf("the user cache directory does not follow XDG_CACHE_HOME here: %q %v", dir, err)
	}
	module := "../../testdata/checks/ok_min.wasm"
	if _, err := os.Stat(module); err != nil {
		module = "../../testdata/packages/cgreet"
	}
	// In-process: a worker process may lose the compilation's progress
	// events (runtime: what a fresh worker says before its events stream
	// is open is dropped), and with them this line.
	_, _, first := cli(t, "", "validate", "--isolation=in-process", "--log-level", "debug", module)
	_, _, second := cli(t, "", "validate", "--isolation=in-process", "--log-level", "debug", module)
	if !strings.Contains(first, "compiled the module and stored it in the compilation cache") || strings.Contains(first, "cache hit") {
		t.Errorf("first run: %q", first)
	}
	if !strings.Contains(second, "compilation cache hit") {
		t.Errorf("second run: %q", second)
	}
	_, _, noCache := cli(t, "", "validate", "--log-level", "debug", "--no-cache", module)
	if !strings.Contains(noCache, "no compilation cache") {
		t.Errorf("--no-cache: %q", noCache)
	}
	if _, _, quiet := cli(t, "", "validate", module); strings.Contains(quiet, "cache") {
		t.Errorf("at the default level: %q", quiet)
	}
}
