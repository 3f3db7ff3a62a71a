package main

import (
	"os"
	"strings"
	"testing"
)

// mcp --build without --watch is a usage error: nothing would ever run
// the build.
func TestMCPBuildNeedsWatch(t *testing.T) {
	code, _, errOut := cli(t, "", "mcp", "--build", "make", "../../testdata/packages/cgreet")
	if code != exitUsage || !strings.Contains(errOut, "--build runs on changes --watch sees: give --watch too") {
		t.Errorf("exit %d, %q", code, errOut)
	}
	_, out, _ := cli(t, "", "mcp", "--help")
	if !strings.Contains(out, "--build COMMAND") {
		t.Errorf("mcp --help lacks --build COMMAND:\n%s", out)
	}
}

// inspect --examples reads the file check --examples reads, and refuses
// the same bad ones before serving anything.
func TestInspectExamplesFlag(t *testing.T) {
	bad := t.TempDir() + "/bad.json"
	os.WriteFile(bad, []byte(`{"greet":{}}`), 0o644)
	for file, want := range map[string]string{"/nonexistent/x.json": "--examples: open /nonexistent/x.json", bad: "--examples " + bad + ": "} {
		code, _, errOut := cli(t, "", "inspect", "--examples", file, "../../testdata/packages/cgreet")
		if code != exitUsage || !strings.Contains(errOut, want) {
			t.Errorf("inspect --examples %s: exit %d, %q; want %q", file, code, errOut, want)
		}
	}
}
