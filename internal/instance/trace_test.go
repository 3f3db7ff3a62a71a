package instance

import (
	"io"
	"strings"
	"testing"
)

// stderr reaches its writer unchanged and the trace a line at a time: a
// line longer than traceStderrMax in pieces, a last line without "\n" at
// the exit.
func TestStderrTraceSplitsLines(t *testing.T) {
	var lines []string
	tr := &trace{instance: 1, fn: func(ev Event) {
		if ev.Kind == TraceStderr {
			lines = append(lines, string(ev.Line))
		}
	}}
	var sink strings.Builder
	w := tr.stderr(&sink)
	long := strings.Repeat("x", traceStderrMax+10)
	input := []string{"one\ntw", "o\n", long + "\n", "", "last"}
	for _, p := range input {
		if n, err := w.Write([]byte(p)); n != len(p) || err != nil {
			t.Fatalf("Write(%q) = %d, %v", p, n, err)
		}
	}
	tr.exit(nil)
	if sink.String() != strings.Join(input, "") {
		t.Errorf("the writer got %d bytes, want %d", sink.Len(), len(strings.Join(input, "")))
	}
	want := []string{"one", "two", long[:traceStderrMax], long[traceStderrMax:], "last"}
	if strings.Join(lines, "|") != strings.Join(want, "|") {
		t.Errorf("traced %d lines %q…, want %d", len(lines), lines[0], len(want))
	}
	if (*trace)(nil).stderr(&sink) != io.Writer(&sink) {
		t.Error("without a trace, stderr is not the writer itself")
	}
}
