package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestParseSpec(t *testing.T) {
	tests := []struct {
		name, json string
		want       spec
		err        string
	}{
		{"legacy", `{"args":["a","b"],"env":{"x":"1"},"root":"fs-tests.dir","exit_code":3,"stdout":"hi"}`,
			spec{Args: []string{"a", "b"}, Env: map[string]string{"x": "1"}, Root: "fs-tests.dir", ExitCode: 3, Stdout: "hi"}, ""},
		{"legacy defaults", `{}`, spec{}, ""},
		{"operations", `{"operations":[{"type":"run","args":["z"],"root":"r"},{"type":"read","payload":"out"},{"type":"read","id":"stderr","payload":"err"},{"type":"wait","exit_code":1}]}`,
			spec{Args: []string{"z"}, Root: "r", Stdout: "out", Stderr: "err", ExitCode: 1}, ""},
		{"sockets are not faked", `{"operations":[{"type":"run"},{"type":"connect"},{"type":"wait"}]}`, spec{}, "unsupported operation"},
		{"proposals are not faked", `{"proposals":["http"]}`, spec{}, "needs proposals"},
		{"no wait", `{"operations":[{"type":"run"}]}`, spec{}, "one run and one wait"},
		{"read before run", `{"operations":[{"type":"read"},{"type":"run"},{"type":"wait"}]}`, spec{}, "read before run"},
		{"not JSON", `{`, spec{}, "bad spec"},
	}
	for _, tt := range tests {
		got, err := parseSpec([]byte(tt.json))
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("%s: err %v, want %q", tt.name, err, tt.err)
			}
			continue
		}
		if err != nil || !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%s: %+v, %v; want %+v", tt.name, got, err, tt.want)
		}
	}
}

func TestArgv(t *testing.T) {
	s := spec{Args: []string{"-x", "y"}, Env: map[string]string{"b": "2", "a": "1"}}
	got := s.argv([]string{"bin"}, "t.wasm", "/tmp/r")
	want := []string{"bin", "run", "--env", "a=1", "--env", "b=2", "--dir", "/tmp/r::/", "--", "t.wasm", "-x", "y"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("argv %q, want %q", got, want)
	}
}

// TestOfficialSuite runs the whole suite when SUBAKO_WASI_TESTSUITE names a
// copy of it (the make target wasi-testsuite is the usual way).
func TestOfficialSuite(t *testing.T) {
	dir := os.Getenv("SUBAKO_WASI_TESTSUITE")
	if dir == "" {
		t.Skip("SKIPPED: set SUBAKO_WASI_TESTSUITE to a copy of github.com/WebAssembly/wasi-testsuite (prod/testsuite-base) to run it")
	}
	tests, err := findTests(dir)
	if err != nil || len(tests) == 0 {
		t.Fatalf("no tests under %s: %v", dir, err)
	}
	bin := filepath.Join(t.TempDir(), "subako-runner")
	if out, err := exec.Command("go", "build", "-o", bin, "../../../cmd/subako-runner").CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	failed := 0
	for _, wasm := range tests {
		if err := runTest(t.Context(), []string{bin}, wasm); err != nil {
			failed++
			t.Errorf("%s: %v", filepath.Base(wasm), err)
		}
	}
	t.Logf("%d passed, %d failed", len(tests)-failed, failed)
}
