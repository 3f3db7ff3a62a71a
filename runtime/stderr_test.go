package runtime

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestStderrTailKeepsTheLastBytes(t *testing.T) {
	tail := newStderrTail(16, nil)
	for i := 0; i < 100; i++ {
		tail.Write([]byte("0123456789"))
	}
	tail.Write([]byte("END"))
	got := tail.String()
	if len(got) != 16 || !strings.HasSuffix(got, "END") {
		t.Fatalf("tail = %q, want the last 16 bytes ending in END", got)
	}
	big := newStderrTail(16, nil)
	big.Write([]byte(strings.Repeat("a", 100) + "0123456789abcdef"))
	if got := big.String(); got != "0123456789abcdef" {
		t.Fatalf("one large write: tail = %q", got)
	}
}

func TestStderrTailCutsOnAUTF8Boundary(t *testing.T) {
	// "é" is two bytes; the last 3 bytes of "xxxxéé" begin in the middle
	// of the first é, and the cut must drop the orphaned continuation byte.
	tail := newStderrTail(3, nil)
	tail.Write([]byte("xxxxéé"))
	got := tail.String()
	if !utf8.ValidString(got) || got != "é" {
		t.Fatalf("tail = %q, want %q", got, "é")
	}
}
