package text

import (
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
