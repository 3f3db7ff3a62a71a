package conformance

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"
)

func sampleReport() *Report {
	return &Report{Package: "pkg", Passed: false, Duration: 1500 * time.Millisecond, Checks: []Check{
		{ID: "upload.checks", Item: 1, Title: "[1] upload", Status: Pass, Detail: "ok"},
		{ID: "tools.unknown_tool", Item: 6, Title: "[6] unknown", Status: Warn, Detail: "JSON-RPC error\nsecond line", Profile: &Profile{DurationMs: 12.5, MemoryBytes: 3 << 20}},
		{ID: "protocol.eof_exit", Item: 2, Title: "[2] eof", Status: Fail, Detail: "exit_timeout <&>"},
		{ID: "view.renders", Title: "view", Status: Skip, Detail: "no images"},
	}}
}

func TestHumanReportMarksEveryStatusAndColoursOnlyWhenAsked(t *testing.T) {
	var plain, color bytes.Buffer
	rep := sampleReport()
	if err := rep.WriteHuman(&plain, false); err != nil {
		t.Fatal(err)
	}
	rep.WriteHuman(&color, true)
	out := plain.String()
	for _, want := range []string{"✓ [1] upload  (upload.checks)", "! [6] unknown  (tools.unknown_tool)", "    second line", "[12.5 ms, 3 MiB peak memory]",
		"✗ [2] eof  (protocol.eof_exit)", "- view  (view.renders)", "FAILED: 1 passed, 1 warnings, 1 failed, 1 skipped (4 checks in 1.5s)"} {
		if !strings.Contains(out, want) {
			t.Errorf("human report lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "\x1b[") {
		t.Errorf("colour without a terminal:\n%q", out)
	}
	if !strings.Contains(color.String(), "\x1b[31m✗\x1b[0m") || !strings.Contains(color.String(), "\x1b[32m✓\x1b[0m") {
		t.Errorf("no colour when asked:\n%q", color.String())
	}
}

func TestJSONReportHasTheCLIShape(t *testing.T) {
	var buf bytes.Buffer
	if err := sampleReport().WriteJSON(&buf); err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Passed *bool `json:"passed"`
		Checks []map[string]any
	}
	if err := json.Unmarshal(buf.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	if doc.Passed == nil || *doc.Passed || len(doc.Checks) != 4 {
		t.Fatalf("passed %v, %d checks:\n%s", doc.Passed, len(doc.Checks), buf.String())
	}
	for _, c := range doc.Checks {
		for _, k := range []string{"id", "title", "status", "detail"} {
			if _, ok := c[k].(string); !ok {
				t.Errorf("check %v lacks string %q", c["id"], k)
			}
		}
	}
	if !strings.Contains(buf.String(), `"exit_timeout <&>"`) {
		t.Errorf("HTML escaping in JSON detail:\n%s", buf.String())
	}
}

func TestParseFormatAndExamples(t *testing.T) {
	for _, f := range []string{"human", "json", "junit"} {
		if got, err := ParseFormat(f); err != nil || string(got) != f {
			t.Errorf("ParseFormat(%q) = %q, %v", f, got, err)
		}
	}
	if _, err := ParseFormat("xml"); err == nil {
		t.Error("ParseFormat(xml) accepted")
	}
	ex, err := ParseExamples([]byte(`{"greet":[{"name":"Ada"},{}]}`))
	if err != nil || len(ex["greet"]) != 2 {
		t.Errorf("ParseExamples: %v %v", ex, err)
	}
	for _, bad := range []string{`[]`, `{"greet":{"name":"Ada"}}`, `{"greet":[1]}`, `{"greet":[null]}`, `not json`} {
		if _, err := ParseExamples([]byte(bad)); err == nil {
			t.Errorf("ParseExamples(%s) accepted", bad)
		}
	}
}

// A report at fail-on warn fails on a warning: Passed, the JUnit
// <failure> of type warn with the suite's fail-on property, and the human
// summary says why; at the default level an example that did not pass
// gets the line that tells how to make CI catch it.
func TestFailOnWarn(t *testing.T) {
	checks := []Check{
		{ID: "upload.checks", Item: 1, Title: "[1] upload", Status: Pass, Detail: "ok"},
		{ID: "examples.fetch/1", Item: 6, Title: "example 1 of fetch", Status: Warn, Detail: "host_not_allowed"},
	}
	for _, tt := range []struct {
		failOn     Status
		passed     bool
		human, not string
		junit      []string
	}{
		{Fail, true, "1 example call(s) did not pass, yet the run passes (warnings do not fail it): for CI to catch it, run check --strict",
			"strict:", []string{`failures="0"`, `<property name="fail-on" value="fail">`, "WARNING: host_not_allowed"}},
		{Warn, false, "strict: the 1 warning(s) fail the run", "for CI to catch it",
			[]string{`failures="1"`, `<property name="fail-on" value="warn">`, `<failure message="example 1 of fetch" type="warn">host_not_allowed</failure>`}},
	} {
		rep := &Report{Package: "pkg", FailOn: tt.failOn, Checks: checks}
		rep.Passed = rep.passes()
		if rep.Passed != tt.passed {
			t.Errorf("fail-on %s: passed %v, want %v", tt.failOn, rep.Passed, tt.passed)
		}
		var human, junit, js bytes.Buffer
		rep.WriteHuman(&human, false)
		rep.WriteJUnit(&junit)
		rep.WriteJSON(&js)
		if !strings.Contains(human.String(), tt.human) || strings.Contains(human.String(), tt.not) {
			t.Errorf("fail-on %s: human report lacks %q or has %q:\n%s", tt.failOn, tt.human, tt.not, human.String())
		}
		for _, want := range tt.junit {
			if !strings.Contains(junit.String(), want) {
				t.Errorf("fail-on %s: JUnit lacks %q:\n%s", tt.failOn, want, junit.String())
			}
		}
		if want := `"failOn": "` + string(tt.failOn) + `"`; !strings.Contains(js.String(), want) {
			t.Errorf("JSON lacks %s:\n%s", want, js.String())
		}
	}
	for _, s := range []string{"", "fail", "warn"} {
		if _, err := checkFailOn(Status(s)); err != nil {
			t.Errorf("fail-on %q: %v", s, err)
		}
	}
	if _, err := checkFailOn(Skip); err == nil || !strings.Contains(err.Error(), "use fail or warn") {
		t.Errorf("fail-on skip: %v; want a clear error", err)
	}
}
