package conformance

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/subako/subako-runner/protocol"
	srt "github.com/subako/subako-runner/runtime"
)

func ms(d time.Duration) string { return fmt.Sprintf("%.1f ms", float64(d)/1e6) }

func crashStderr(c *srt.Crash) string {
	if c == nil {
		return ""
	}
	return c.Stderr
}

func crashText(c *srt.Crash) string {
	if c == nil {
		return "no crash"
	}
	return c.Reason + ": " + c.Message
}

// stderrSuffix is a newline and the stderr evidence, or "" when empty.
func stderrSuffix(tail string) string {
	if strings.TrimSpace(tail) == "" {
		return ""
	}
	return "\n" + stderrEvidence(tail)
}

// stderrEvidence quotes the last lines of a stderr tail.
func stderrEvidence(tail string) string {
	tail = strings.TrimRight(tail, "\n")
	if strings.TrimSpace(tail) == "" {
		return "stderr: (empty)"
	}
	lines := strings.Split(tail, "\n")
	if len(lines) > 4 {
		lines = lines[len(lines)-4:]
	}
	for i, l := range lines {
		lines[i] = "| " + excerpt(l, 160)
	}
	return "stderr (last lines):\n" + strings.Join(lines, "\n")
}

func excerpt(s string, n int) string {
	r := []rune(s)
	if len(r) > n {
		return string(r[:n]) + "…"
	}
	return s
}

func toolNames(tools []protocol.Tool) string {
	names := make([]string, len(tools))
	for i, t := range tools {
		names[i] = excerpt(t.Name, 40)
	}
	if len(names) > 12 {
		names = append(names[:12], fmt.Sprintf("… (%d more)", len(names)-12))
	}
	return strings.Join(names, ", ")
}

func groupDigits(n int) string {
	s := fmt.Sprint(n)
	var b strings.Builder
	for i, ch := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(ch)
	}
	return b.String()
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
