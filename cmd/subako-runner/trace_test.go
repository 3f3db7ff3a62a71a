package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestTraceShowsTheConversation(t *testing.T) {
	pkg := pkgDir(t, "greet", nil)
	code, out, errOut := cli(t, "", "call", "--trace", pkg, "greet", `{"name":"Ada"}`)
	if code != exitOK || !strings.Contains(out, "Hello, Ada!") {
		t.Fatalf("exit %d, %q", code, out)
	}
	var events []string
	line := regexp.MustCompile(`^\d\d:\d\d:\d\d\.\d{6} #(\d+) (→ \{.*"method":"([a-z/]+)".*\}|← \{.*"result".*\}|stdin closed|exited: exit code 0)$`)
	stderrLines := 0
	for _, l := range strings.Split(strings.TrimRight(errOut, "\n"), "\n") {
		if regexp.MustCompile(`^\d\d:\d\d:\d\d\.\d{6} #\d+ stderr: greet: `).MatchString(l) {
			stderrLines++ // the module's log lines, between request and answer
			continue
		}
		m := line.FindStringSubmatch(l)
		if m == nil {
			t.Fatalf("not a trace line: %q", l)
		}
		ev := m[1] + " " + strings.SplitN(m[2], " ", 2)[0]
		if m[3] != "" {
			ev += " " + m[3]
		}
		events = append(events, ev)
	}
	want := "1 → server/discover,1 ←,1 → tools/list,1 ←,1 stdin,1 exited:,2 → tools/call,2 ←,2 stdin,2 exited:"
	if got := strings.Join(events, ","); got != want {
		t.Errorf("events %s\nwant   %s", got, want)
	}
	if stderrLines < 3 {
		t.Errorf("%d stderr lines traced, want one a request at least", stderrLines)
	}
	if !strings.Contains(errOut, `"arguments":{"name":"Ada"}`) {
		t.Errorf("the call's request is not traced in full: %q", errOut)
	}

	file := filepath.Join(t.TempDir(), "trace.log")
	code, _, errOut = cli(t, "", "discover", "--trace="+file, pkg)
	b, err := os.ReadFile(file)
	if code != exitOK || err != nil || errOut != "" || strings.Count(string(b), " → ") != 2 || !strings.Contains(string(b), "#1 exited: exit code 0\n") {
		t.Errorf("--trace=FILE: exit %d, stderr %q, file %q %v", code, errOut, b, err)
	}
	if code, _, errOut := cli(t, "", "discover", "--trace="+filepath.Join(t.TempDir(), "no", "such", "dir"), pkg); code != exitUsage || !strings.Contains(errOut, "--trace: ") {
		t.Errorf("unwritable --trace file: exit %d, %q", code, errOut)
	}
}

func TestTraceBoundsLines(t *testing.T) {
	short := []byte(`{"a":1}`)
	if got := boundLine(short); got != string(short) {
		t.Errorf("short line changed: %q", got)
	}
	long := []byte(strings.Repeat("é", traceLineMax)) // 2 bytes a character
	got := boundLine(long)
	if !strings.HasSuffix(got, "… (8192 bytes)") || len(got) > traceLineMax+64 || !utf8.ValidString(got) {
		t.Errorf("long line: %d bytes, valid %v, ends %q", len(got), utf8.ValidString(got), got[len(got)-40:])
	}
}
