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
