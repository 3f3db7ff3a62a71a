package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/subako/subako-runner/internal/devtools/testguest"
	"github.com/subako/subako-runner/internal/wasmbin/wasmtest"
)

// TestNameCountBombDoesNotEndTheProcess: the red team's 64-byte module
// (a name section declaring 0xFFFFFFFF function names) made validate,
// call and run end with the Go runtime's "fatal error: out of memory".
// The separately built binary answers each with the invalid_module
// rejection and a message naming the name section: exit 4, or 2 for run,
// which reports a module it will not run as a host error (cli.md).
func TestNameCountBombDoesNotEndTheProcess(t *testing.T) {
	bin := runnerBinary(t)
	dir := t.TempDir()
	module := filepath.Join(dir, "module.wasm")
	if err := os.WriteFile(module, wasmtest.NameCountBomb(), 0o644); err != nil {
		t.Fatal(err)
	}
	pkg := testguest.Package(t, module, "bomb", nil)
	for _, tt := range []struct {
		args []string
		exit int
	}{
		{[]string{"validate", "--json", pkg}, exitRejected},
		{[]string{"call", "--json", pkg, "greet"}, exitRejected},
		{[]string{"run", module}, exitUsage},
	} {
		args := tt.args
		t.Run(args[0], func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			cmd := exec.Command(bin, args...)
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			err := cmd.Run()
			var exit *exec.ExitError
			if !errors.As(err, &exit) || exit.ExitCode() != tt.exit {
				t.Fatalf("%v: %v, want exit %d\nstdout: %s\nstderr: %s", args, err, tt.exit, stdout.String(), stderr.String())
			}
			if strings.Contains(stderr.String(), "fatal error") {
				t.Fatalf("the Go runtime ended the process:\n%s", stderr.String())
			}
			out := stdout.String() + stderr.String()
			if args[0] != "run" {
				var m struct {
					Rejection []struct{ Code, Message string }
				}
				if err := json.Unmarshal(stdout.Bytes(), &m); err != nil {
					t.Fatalf("output is not JSON: %v\n%s", err, out)
				}
				if len(m.Rejection) != 1 || m.Rejection[0].Code != "invalid_module" {
					t.Fatalf("rejection %+v, want one invalid_module", m.Rejection)
				}
			}
			if !strings.Contains(out, "invalid_module") || !strings.Contains(out, "name section") {
				t.Fatalf("the output does not name invalid_module and the name section:\n%s", out)
			}
		})
	}
}
