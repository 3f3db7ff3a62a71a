package main

import (
	"bytes"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/subako/subako-runner/conformance"
	"github.com/subako/subako-runner/protocol"
	"github.com/subako/subako-runner/runtime"
)

// hostile is text a package may send: every C0 byte, DEL, every C1
// character (as UTF-8) and every byte 0x80-0x9f alone, a clipboard write
// (OSC 52), a window title (OSC 0), a clear screen (CSI 2J) and a
// carriage return that would overwrite the line.
func hostile() string {
	var b strings.Builder
	for c := range 0x20 {
		b.WriteByte(byte(c))
	}
	b.WriteByte(0x7f)
	for r := rune(0x80); r <= 0x9f; r++ {
		b.WriteRune(r)
		b.WriteByte(byte(r))
	}
	b.WriteString("\x1b]52;c;cm0gLXJmIH4K\x07\x1b]0;pwned\x1b\\\x1b[2J\x1b[Hreal\rFAKE")
	return b.String()
}

// assertNoControls fails when out holds a control character a terminal
// obeys: any but tab and newline, DEL, a C1 character or a byte that is
// not UTF-8 (an 8-bit C1 control to a terminal not in UTF-8 mode).
func assertNoControls(t *testing.T, what, out string) {
	t.Helper()
	for i := 0; i < len(out); {
		r, size := utf8.DecodeRuneInString(out[i:])
		if (r == utf8.RuneError && size == 1) || (r < 0x20 && r != '\t' && r != '\n') || (r >= 0x7f && r <= 0x9f) {
			t.Errorf("%s wrote the control %q at byte %d:\n%q", what, out[i:i+size], i, out)
			return
		}
		i += size
	}
	if !strings.Contains(out, `\x1b]52;c;`) || !strings.Contains(out, `real\x0dFAKE`) {
		t.Errorf("%s did not show the escapes:\n%q", what, out)
	}
}

// TestTerminalOutputIsSafe: the package's text that discover, call,
// check and the stderr tail print reaches the terminal with its control
// characters made visible (it was printed raw: a package could write the
// operator's clipboard, retitle the window, clear the screen, or overwrite
// a line): --json writes JSON, whose
// encoder escapes them itself.
func TestTerminalOutputIsSafe(t *testing.T) {
	h := hostile()
	var out bytes.Buffer
	printToolList(&out, h, 0, []protocol.Tool{{Name: h, Title: h, Description: h, InputSchema: []byte(`{"type":"object","description":"` + "\u009b2J" + `"}`)}})
	assertNoControls(t, "discover", out.String())

	out.Reset()
	printCall(&out, &runtime.Result{
		Outcome: runtime.OutcomeToolError,
		View: []protocol.ViewItem{
			{Type: "text", Text: h}, {Type: "link", Text: h}, {Type: "note", Text: h},
			{Type: "file", Path: h, Size: 1}, {Type: "image", MimeType: h, Source: h},
		},
		Parsed: protocol.CallToolResult{StructuredContent: []byte(`{"x":"` + "\u0085" + `"}`)},
	}, "")
	printCall(&out, &runtime.Result{Outcome: runtime.OutcomeCrashed, Crash: &runtime.Crash{Reason: "trap", Message: h, Stderr: h}}, "")
	assertNoControls(t, "call", out.String())

	out.Reset()
	printStderr(&out, h)
	assertNoControls(t, "the stderr tail", out.String())

	out.Reset()
	rep := &conformance.Report{Package: h, Checks: []conformance.Check{{ID: "x", Title: h, Status: conformance.Fail, Detail: h}}}
	if err := rep.WriteHuman(&out, false); err != nil {
		t.Fatal(err)
	}
	assertNoControls(t, "check", out.String())
}
