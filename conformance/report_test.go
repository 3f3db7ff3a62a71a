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
