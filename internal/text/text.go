// Package text holds the string helpers more than one package needs for
// messages.
package text

import "strings"

// FirstLine is s up to its first newline: the sentence of an error whose
// later lines are a stack trace or a list of details.
func FirstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}
