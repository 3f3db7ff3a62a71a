package main

import (
	"encoding/xml"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestCheckExitStatusesAndFormats(t *testing.T) {
	t.Parallel()
	const rust, c = "../../testdata/packages/rustgreet", "../../testdata/packages/cgreet"
	examples := filepath.Join(t.TempDir(), "examples.json")
	os.WriteFile(examples, []byte(`{"greet":[{"name":"Ada"}]}`), 0o644)
	badExamples := filepath.Join(t.TempDir(), "bad.json")
	os.WriteFile(badExamples, []byte(`{"greet":{}}`), 0o644)
	tests := []struct {
		name string
		args []string
		code int
		want string
	}{
		{"passing package, human", []string{"check", rust}, exitOK, "✓ [1] a WASI preview 1 command module"},
		{"warnings keep exit 0", []string{"check", rust}, exitOK, "! [6] a call of an unknown tool"},
		{"a failed check exits 1", []string{"check", c}, exitToolError, "✗ [6] tools/call trap with {}"},
		{"upload failure exits 1", []string{"check", "--json", "../../testdata/checks/unknown_import.wasm"}, exitToolError, `"status": "fail"`},
		{"--json", []string{"check", "--json", rust}, exitOK, `"passed": true`},
		{"--format json", []string{"check", "--format", "json", rust}, exitOK, `"id": "protocol.eof_exit"`},
		{"--format junit", []string{"check", "--format", "junit", c}, exitToolError, `<testcase name="tools.call_empty_args/trap"`},
		{"examples", []string{"check", "--json", "--examples", examples, rust}, exitOK, `"id": "examples.greet/1"`},
		{"bad examples", []string{"check", "--examples", badExamples, rust}, exitUsage, ""},
		{"missing examples", []string{"check", "--examples", "/nonexistent/x.json", rust}, exitUsage, ""},
		{"unknown format", []string{"check", "--format", "xml", rust}, exitUsage, ""},
		{"--json contradicts junit", []string{"check", "--json", "--format", "junit", rust}, exitUsage, ""},
		{"no package", []string{"check"}, exitUsage, ""},
		{"unreadable package", []string{"check", "/nonexistent/package"}, exitUsage, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out, errOut := cli(t, "", tt.args...)
			if code != tt.code {
				t.Fatalf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, tt.code, out, errOut)
			}
			if !strings.Contains(out, tt.want) {
				t.Errorf("stdout lacks %q:\n%s", tt.want, out)
			}
			if strings.Contains(out, "\x1b[") {
				t.Errorf("colour written to a non-terminal")
			}
			if strings.Contains(strings.Join(tt.args, " "), "junit") && code != exitUsage {
				var v struct{}
				if err := xml.Unmarshal([]byte(out), &v); err != nil {
					t.Errorf("JUnit output is not XML: %v", err)
				}
			}
		})
	}
}
