package instance

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// A crash's message is bounded on a UTF-8 boundary, with an ellipsis
// saying how long it was.
func TestCrashMessageIsBounded(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name string
		in   string
	}{
		{"short", "a crash"},
		{"exactly the bound", strings.Repeat("a", MaxCrashMessage)},
		{"ascii", strings.Repeat("a", 3*MaxCrashMessage)},
		{"two-byte runes across the bound", "x" + strings.Repeat("é", MaxCrashMessage)},
		{"four-byte runes", strings.Repeat("😀", MaxCrashMessage)},
	} {
		t.Run(tt.name, func(t *testing.T) {
			in := &Instance{stderr: newStderrTail(16, nil)}
			got := in.newCrash(ReasonTrap, tt.in).Message
			if len(tt.in) <= MaxCrashMessage {
				if got != tt.in {
					t.Fatalf("a message within the bound was changed: %q", got)
				}
				return
			}
			if !utf8.ValidString(got) || len(got) > MaxCrashMessage+32 || !strings.HasSuffix(got, " bytes)") {
				t.Fatalf("the message is %d bytes, valid UTF-8 %v, ending %q", len(got), utf8.ValidString(got), got[max(0, len(got)-20):])
			}
			if prefix, _, _ := strings.Cut(got, "…"); !strings.HasPrefix(tt.in, prefix) || len(prefix) < MaxCrashMessage-utf8.UTFMax {
				t.Fatalf("the message kept %d bytes of the start", len(prefix))
			}
		})
	}
}
