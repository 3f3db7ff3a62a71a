package main

import (
	"encoding/json"
	"encoding/xml"
	"net/http"
	"net/http/httptest"
	"net/url"
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
	refused := filepath.Join(t.TempDir(), "refused.json") // greet answers isError: a warning
	os.WriteFile(refused, []byte(`{"greet":[{"name":5}]}`), 0o644)
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
		{"an example that warns says how CI catches it", []string{"check", "--examples", refused, rust}, exitOK, "1 example call(s) did not pass, yet the run passes (warnings do not fail it): for CI to catch it, run check --strict"},
		{"--strict fails on the example", []string{"check", "--strict", "--examples", refused, rust}, exitToolError, "strict: the 2 warning(s) fail the run"},
		{"--strict fails on warnings", []string{"check", "--strict", rust}, exitToolError, "strict: the 1 warning(s) fail the run"},
		{"--strict in JSON", []string{"check", "--json", "--strict", rust}, exitToolError, `"failOn": "warn"`},
		{"--strict in JUnit", []string{"check", "--format", "junit", "--strict", rust}, exitToolError, `<property name="fail-on" value="warn">`},
		{"default level in JSON", []string{"check", "--json", rust}, exitOK, `"failOn": "fail"`},
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

// check --examples takes call's network flags, so a tool that fetches is
// judged on a real answer (issue 28); without them its request is refused.
func TestCheckExamplesTakeTheNetworkFlags(t *testing.T) {
	// Parallel: most of its time is two examples waiting out --timeout 3s.
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte("hello from the test server"))
	}))
	defer srv.Close()
	u, _ := url.Parse(srv.URL)
	pkg := pkgDir(t, "httpprobe", nil)
	examples := filepath.Join(t.TempDir(), "examples.json")
	os.WriteFile(examples, []byte(`{"http":[{"request":{"url":"`+srv.URL+`/"}}]}`), 0o644)
	// The example's check, from the JSON report. (--timeout: httpprobe's
	// http_raw waits for the deadline on the probes' invalid arguments.)
	example := func(args ...string) (detail, errOut string) {
		t.Helper()
		_, out, errOut := cli(t, "", append([]string{"check", "--json", "--timeout", "3s", "--examples", examples}, append(args, pkg)...)...)
		var rep struct {
			Checks []struct{ ID, Status, Detail string }
		}
		if err := json.Unmarshal([]byte(out), &rep); err != nil {
			t.Fatalf("%v: %v\n%s\n%s", args, err, out, errOut)
		}
		for _, c := range rep.Checks {
			if c.ID == "examples.http/1" {
				return c.Detail, errOut
			}
		}
		t.Fatalf("%v: no examples.http/1 in\n%s", args, out)
		return "", ""
	}
	detail, errOut := example("--allow-host", u.Host, "--allow-private", "127.0.0.1/32")
	if !strings.Contains(detail, "hello from the test server") {
		t.Errorf("with the flags the example did not reach the server: %s", detail)
	}
	if !strings.Contains(errOut, "--allow-private lets the module reach 127.0.0.1/32") {
		t.Errorf("no warning for --allow-private: %q", errOut)
	}
	if detail, _ = example(); !strings.Contains(detail, "host_not_allowed") || strings.Contains(detail, "hello from the test server") {
		t.Errorf("without the flags the request was not refused: %s", detail)
	}
	// The probes never get the network: the flags without examples are a
	// usage error rather than silently unused.
	code, _, errOut := cli(t, "", "check", "--allow-host", u.Host, pkg)
	if code != exitUsage || !strings.Contains(errOut, "--examples calls only") {
		t.Errorf("network flags without --examples: exit %d, %q", code, errOut)
	}
}
