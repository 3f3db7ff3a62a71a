// Package text holds the string helpers more than one package needs for
// messages: the first line of an error, and the one rule for cutting what
// a guest or a user sent down to a bounded length without splitting a
// character.
package text

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// FirstLine is s up to its first newline: the sentence of an error whose
// later lines are a stack trace or a list of details.
func FirstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

// Truncate is the longest prefix of s that is at most n bytes long and
// does not end inside a UTF-8 character, so truncating never splits a
// character that was whole. n < 0 is taken as 0. (Unlike strings.Cut, it
// drops what is past n.)
func Truncate[T ~string | ~[]byte](s T, n int) T {
	if len(s) <= n {
		return s
	}
	cut := max(n, 0)
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut]
}

// Bound is s when it is at most n bytes long, and otherwise Truncate(s, n)
// followed by "… (L bytes)", L being the length of all of s: the form of
// every bounded quote in a message, so a reader always learns that
// something was left out and how much.
func Bound[T ~string | ~[]byte](s T, n int) string {
	if len(s) <= n {
		return string(s)
	}
	return fmt.Sprintf("%s… (%d bytes)", Truncate(s, n), len(s))
}

// Terminal is s made safe to write to a terminal: every control character
// but tab and newline is written as a visible escape instead, as cat -v and
// less show them, so text from a package cannot move the cursor, clear the
// screen, set the window title or the clipboard (OSC 52), or overwrite a
// line with a carriage return. C0 bytes and DEL become \x1b, \x0d, \x7f;
// C1 characters (U+0080 to U+009F, which some terminals obey as ESC
// sequences) \u009b; a byte that is not UTF-8 \x9b. Anything else, any
// other Unicode text included, is kept.
func Terminal(s string) string {
	clean := true
	for i := 0; i < len(s); i++ {
		if c := s[i]; (c < 0x20 && c != '\t' && c != '\n') || c >= 0x7f {
			clean = false
			break
		}
	}
	if clean {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case r == '\t' || r == '\n':
			b.WriteRune(r)
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(&b, `\x%02x`, r)
		case r >= 0x80 && r <= 0x9f:
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	return b.String()
}
