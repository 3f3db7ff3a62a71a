package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/subako/subako-runner/limits"
	"github.com/subako/subako-runner/protocol"
	"github.com/subako/subako-runner/runtime"
)

// flagSuggestion is the " (did you mean --x?)" that follows pflag's
// "unknown flag: --y", as cobra does for commands; "" when no flag of cmd
// is close, or err is about something else.
func flagSuggestion(cmd *cobra.Command, err error) string {
	name, ok := strings.CutPrefix(err.Error(), "unknown flag: --")
	if !ok {
		return ""
	}
	name, _, _ = strings.Cut(name, "=")
	best, bestDist := "", 3 // at most two edits away, as cobra's SuggestionsMinimumDistance
	consider := func(f *pflag.Flag) {
		if f.Hidden {
			return
		}
		d := editDistance(strings.ToLower(name), f.Name)
		// A prefix of a flag counts as near: --allow for --allow-host.
		if strings.HasPrefix(f.Name, name) && len(name) >= 3 {
			d = min(d, 1)
		}
		if d < bestDist || (d == bestDist && best != "" && f.Name < best) {
			best, bestDist = f.Name, d
		}
	}
	cmd.Flags().VisitAll(consider)
	cmd.InheritedFlags().VisitAll(consider)
	if best == "" {
		return ""
	}
	return fmt.Sprintf(" (did you mean --%s?)", best)
}

// editDistance is the Levenshtein distance of a and b, in bytes (flag
// names are ASCII).
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// argsError says what is wrong with ARGS_JSON, or nil when it is a JSON
// object: the parser's message, the byte offset and the text around it,
// and for the usual shell slips (unquoted keys, single quotes, key=value)
// how to write it.
func argsError(raw []byte) error {
	var v any
	err := json.Unmarshal(raw, &v)
	if err == nil {
		if _, ok := v.(map[string]any); ok {
			return nil
		}
		return fmt.Errorf("ARGS_JSON must be a JSON object such as '{\"name\": \"Ada\"}', not %s", jsonKind(v))
	}
	var syn *json.SyntaxError
	if !errors.As(err, &syn) {
		return fmt.Errorf("ARGS_JSON is not valid JSON: %v", err)
	}
	off := int(syn.Offset)
	// Offset counts the bytes read, the bad one included.
	at := max(off-1, 0)
	if off > len(raw) || strings.Contains(err.Error(), "unexpected end") {
		at = len(raw)
	}
	msg := fmt.Sprintf("ARGS_JSON is not valid JSON: %v, at byte %d: %s", err, at, around(raw, at))
	s := strings.TrimSpace(string(raw))
	switch {
	case strings.HasPrefix(s, "{") && at < len(raw) && raw[at] == '\'':
		msg += "; JSON strings take double quotes"
	case strings.HasPrefix(s, "{") && at < len(raw) && isKeyStart(raw[at]) && strings.Contains(err.Error(), "object key"):
		msg += "; object keys are strings in double quotes, as in {\"name\": \"Ada\"}"
	case !strings.HasPrefix(s, "{") && strings.Contains(s, "="):
		k, val, _ := strings.Cut(s, "=")
		b, _ := json.Marshal(map[string]string{k: val})
		msg += fmt.Sprintf("; ARGS_JSON is a JSON object: write '%s'", b)
	case at >= len(raw):
		msg += "; the text ends before the JSON does (a quote or a brace missing? the shell may have eaten a quote)"
	}
	return errors.New(msg)
}

func isKeyStart(c byte) bool {
	return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}

// around shows raw with a ▸ before byte at, cut to a few dozen bytes on
// each side (on rune boundaries).
func around(raw []byte, at int) string {
	const span = 24
	start, end := max(at-span, 0), min(at+span, len(raw))
	for start > 0 && !utf8.RuneStart(raw[start]) {
		start--
	}
	for end < len(raw) && !utf8.RuneStart(raw[end]) {
		end++
	}
	var b strings.Builder
	if start > 0 {
		b.WriteString("…")
	}
	b.Write(raw[start:at])
	b.WriteString("▸")
	b.Write(raw[at:end])
	if end < len(raw) {
		b.WriteString("…")
	}
	return b.String()
}

func jsonKind(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case string:
		return "a string"
	case float64:
		return "a number"
	case bool:
		return "a boolean"
	case []any:
		return "an array"
	}
	return "an object"
}

// schemaWarning is the stderr line of a call whose arguments the tool's
// inputSchema refuses: the call still goes ahead (ABI 1 leaves validation
// to the module, which may accept more than it declares), but the author
// sees the first mismatch. "" when the arguments match.
func schemaWarning(tool *protocol.CompiledTool, args json.RawMessage) string {
	err := tool.ValidateInput(args)
	if err == nil {
		return ""
	}
	first, _, _ := strings.Cut(err.Error(), "\n")
	first = strings.TrimPrefix(first, "arguments does not match the schema: ")
	return fmt.Sprintf("subako-runner: WARNING: the arguments do not match %s's inputSchema: %s (calling it anyway: the module decides)", tool.Tool.Name, first)
}

// limitHint is the stderr line after a call that ran into a limit: which
// flag raises it, and whether the limit was the default or the flag's.
// "" for any other crash.
func limitHint(l *limitFlags, lim limits.Limits, reason string) string {
	var flag, what, example string
	var set bool
	switch reason {
	case runtime.CrashOutOfFuel:
		flag, set, example = "--fuel", l.fuel.set, "--fuel 1e12, or --fuel 0 for no budget"
		what = fmt.Sprintf("fuel budget (%d instructions)", lim.Fuel)
	case runtime.CrashOutOfMemory:
		flag, set, example = "--memory", l.memory.set, "--memory 1GiB"
		what = fmt.Sprintf("memory limit (%s)", limits.HumanSize(lim.Memory))
	case runtime.CrashTimeout:
		flag, set, example = "--timeout", l.timeout.set, "--timeout 5m"
		what = fmt.Sprintf("time limit (%v)", lim.CallTimeout)
	default:
		return ""
	}
	if set {
		return fmt.Sprintf("subako-runner: %s: the call reached the %s that %s set; a larger %s raises it", reason, what, flag, flag)
	}
	return fmt.Sprintf("subako-runner: %s: the call reached the default %s; %s raises it, e.g. %s", reason, what, flag, example)
}

// fuelText is a fuel budget as the status line shows it: 1e+11, or
// "unlimited" for 0.
func fuelText(n uint64) string {
	if n == 0 {
		return "unlimited"
	}
	return strconv.FormatFloat(float64(n), 'g', 4, 64)
}
