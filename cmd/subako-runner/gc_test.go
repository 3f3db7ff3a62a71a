package main

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// The binary, and the worker processes it starts, run with
// runtime.GCPercent unless GOGC is set: the same
// command collects several times with GOGC=100 and at most half as often
// without GOGC (with 800 it usually does not collect at all). gctrace
// prints one line per collection on stderr.
func TestTheBinarySetsItsCollectorTarget(t *testing.T) {
	bin := runnerBinary(t)
	collections := func(gogc string) int {
		cmd := exec.Command(bin, "validate", "--no-cache", "../../testdata/packages/cgreet")
		env := []string{"GODEBUG=gctrace=1"}
		for _, kv := range os.Environ() {
			if !strings.HasPrefix(kv, "GOGC=") && !strings.HasPrefix(kv, "GODEBUG=") {
				env = append(env, kv)
			}
		}
		if gogc != "" {
			env = append(env, "GOGC="+gogc)
		}
		cmd.Env = env
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("validate (GOGC=%q): %v\n%s", gogc, err, out)
		}
		// The worker's gctrace lines reach the command's log as "worker
		// stderr" lines: its collections count too, it runs the module.
		n := 0
		for _, line := range strings.Split(string(out), "\n") {
			if strings.HasPrefix(line, "gc ") || strings.Contains(line, `"line": "gc `) {
				n++
			}
		}
		return n
	}
	// Fewer than 2 also means the binary overrode the user's GOGC.
	atDefault := collections("100")
	if atDefault < 2 {
		t.Fatalf("validate collected %d times with GOGC=100: the binary ignores GOGC, or the command does too little to tell the settings apart", atDefault)
	}
	if unset := collections(""); unset*2 > atDefault {
		t.Errorf("without GOGC the binary collected %d times, with GOGC=100 %d: it does not raise the collector's target", unset, atDefault)
	}
}
