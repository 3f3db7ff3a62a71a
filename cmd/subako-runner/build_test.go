package main

import (
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
