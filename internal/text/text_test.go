package text

import (
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestFirstLine(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{"", ""},
		{"one", "one"},
		{"one\ntwo\nthree", "one"},
		{"\ntwo", ""},
	} {
		if got := FirstLine(tt.in); got != tt.want {
			t.Errorf("FirstLine(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestTruncate(t *testing.T) {
	for _, tt := range []struct {
		in   string
		n    int
		want string
	}{
		{"", 3, ""},
		{"abc", 3, "abc"},  // exactly n: kept whole
		{"abcd", 3, "abc"}, // one over: cut
		{"abc", 0, ""},     // nothing fits
		{"abc", -1, ""},    // a negative bound is 0
		{"aé", 2, "a"},     // é is 2 bytes: the cut would split it
		{"aé", 3, "aé"},    // é fits exactly
		{"a😀b", 4, "a"},    // a 4-byte character, cut at each inner byte
		{"a😀b", 3, "a"},    // ...
		{"a😀b", 2, "a"},    // ...
		{"a😀b", 5, "a😀"},   // the boundary right after it
		{"日本語", 7, "日本"},   // three 3-byte characters
	} {
		if got := Truncate(tt.in, tt.n); got != tt.want {
			t.Errorf("Truncate(%q, %d) = %q, want %q", tt.in, tt.n, got, tt.want)
		}
		if got := string(Truncate([]byte(tt.in), tt.n)); got != tt.want {
			t.Errorf("Truncate([]byte(%q), %d) = %q, want %q", tt.in, tt.n, got, tt.want)
		}
	}
}

func TestBound(t *testing.T) {
	for _, tt := range []struct {
		in   string
		n    int
		want string
	}{
		{"abc", 3, "abc"},
		{"abcd", 3, "abc… (4 bytes)"},
		{"aé", 2, "a… (3 bytes)"},
		{strings.Repeat("x", 10), 4, "xxxx… (10 bytes)"},
	} {
		if got := Bound(tt.in, tt.n); got != tt.want {
			t.Errorf("Bound(%q, %d) = %q, want %q", tt.in, tt.n, got, tt.want)
		}
		if got := Bound([]byte(tt.in), tt.n); got != tt.want {
			t.Errorf("Bound([]byte(%q), %d) = %q, want %q", tt.in, tt.n, got, tt.want)
		}
	}
}

// FuzzTruncate pins the two promises: at most n bytes, a prefix, and valid UTF-8
// in gives valid UTF-8 out.
func FuzzTruncate(f *testing.F) {
	f.Add("a😀b", 2)
	f.Add("日本語", 4)
	f.Fuzz(func(t *testing.T, s string, n int) {
		got := Truncate(s, n)
		if len(got) > max(n, 0) && len(s) > n {
			t.Fatalf("Truncate(%q, %d) = %q: longer than n", s, n, got)
		}
		if !strings.HasPrefix(s, got) {
			t.Fatalf("Truncate(%q, %d) = %q: not a prefix", s, n, got)
		}
		if utf8.ValidString(s) && !utf8.ValidString(got) {
			t.Fatalf("Truncate(%q, %d) = %q: split a character", s, n, got)
		}
	})
}

// TestTerminal: every C0 byte but tab and newline, DEL, every C1 character
// and every byte that is not UTF-8 comes out as a visible escape, so
// nothing written reaches the terminal as a control; other text is kept.
func TestTerminal(t *testing.T) {
	for c := range 0x20 {
		in := "a" + string(rune(c)) + "b"
		got := Terminal(in)
		if c == '\t' || c == '\n' {
			if got != in {
				t.Errorf("%q became %q", in, got)
			}
			continue
		}
		if want := "a" + fmt.Sprintf(`\x%02x`, c) + "b"; got != want {
			t.Errorf("%q became %q, want %q", in, got, want)
		}
	}
	for r := rune(0x80); r <= 0x9f; r++ {
		if got, want := Terminal(string(r)), fmt.Sprintf(`\u%04x`, r); got != want {
			t.Errorf("U+%04X became %q, want %q", r, got, want)
		}
	}
	for _, tt := range []struct{ in, want string }{
		{"\x7f", `\x7f`},
		{"\x9b2J", `\x9b2J`}, // an 8-bit CSI byte, not UTF-8
		{"\x1b]52;c;aGk=\x07", `\x1b]52;c;aGk=\x07`},
		{"\x1b]0;pwned\x1b\\", `\x1b]0;pwned\x1b\`},
		{"\x1b[2J\x1b[H", `\x1b[2J\x1b[H`},
		{"ok\rFAKE", `ok\x0dFAKE`},
		{"plain — ünïcode ✓\ttab\nline", "plain — ünïcode ✓\ttab\nline"},
		{"\u00a0\u200b", "\u00a0\u200b"},
	} {
		if got := Terminal(tt.in); got != tt.want {
			t.Errorf("Terminal(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
	for i := range 256 {
		for _, c := range Terminal(string([]byte{byte(i)})) {
			if c < 0x20 && c != '\t' && c != '\n' || c >= 0x7f && c <= 0x9f {
				t.Errorf("byte %#x left a control in the output", i)
			}
		}
	}
}
