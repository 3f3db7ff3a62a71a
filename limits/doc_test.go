package limits

import (
	"fmt"
	"math"
	"os"
	"slices"
	"strings"
	"testing"
	"time"
)

// secs is a timeout as the docs write it ("10 s", "5 minutes").
func secs(d time.Duration) string {
	if d > time.Minute && d%time.Minute == 0 {
		return fmt.Sprintf("%d minutes", d/time.Minute)
	}
	return fmt.Sprintf("%g s", d.Seconds())
}

// thousands is n with a comma every three digits ("10,000").
func thousands(n int) string {
	s := fmt.Sprint(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// power is n written 10^k when it is a power of ten.
func power(n uint64) string {
	k := math.Log10(float64(n))
	if k == math.Trunc(k) {
		return fmt.Sprintf("10^%d", int(k))
	}
	return fmt.Sprint(n)
}

// TestDocumentedDefaults keeps the defaults one fact: every row of
// docs/abi.md §9 begins with Default's value, its row names are these and
// no others, and docs/cli.md's sentence on the limits without a flag gives
// the same values.
func TestDocumentedDefaults(t *testing.T) {
	d := Default()
	rows := map[string]string{
		"module size":               HumanSize(d.ModuleSize),
		"memory":                    HumanSize(d.Memory) + " per instance, linear memory and tables together (" + fmt.Sprint(TableElementBytes) + " bytes a table element)",
		"fuel":                      power(d.Fuel) + " instructions per instance",
		"wall clock":                secs(d.DiscoveryTimeout) + " discovery, " + secs(d.CallTimeout) + " per call",
		"exit after stdin closes":   secs(d.ExitTimeout),
		"write budget":              HumanSize(d.WriteBudget) + " of file data per call",
		"directory entries created": thousands(d.MaxEntries) + " per call",
		"stdout":                    HumanSize(d.StdoutLine) + " a line, " + HumanSize(d.StdoutTotal) + " a run",
		"stderr kept":               "the last " + HumanSize(int64(d.StderrTail)),
		"HTTP":                      HumanSize(d.HTTPRequest) + " request, " + HumanSize(d.HTTPInline) + " inline response body, " + fmt.Sprint(d.HTTPRedirects) + " redirects",
		"tools":                     fmt.Sprintf("%d pages, %s tools", d.MaxPages, thousands(d.MaxTools)),
		"compilation":               secs(d.CompileTimeout) + " at upload",
		// Not Limits fields: wasi's test pins the first, §2 the second.
		"open descriptors": "",
		"module structure": "",
	}
	abi := readDoc(t, "abi.md")
	_, section, ok := strings.Cut(abi, "\n## 9. Limits\n")
	if !ok {
		t.Fatal("docs/abi.md has no \"## 9. Limits\"")
	}
	var names []string
	for _, line := range strings.Split(section, "\n") {
		cells := strings.Split(line, " | ")
		if len(cells) < 2 || !strings.HasPrefix(line, "| ") || strings.HasPrefix(line, "| limit |") {
			continue
		}
		name, value := strings.TrimPrefix(cells[0], "| "), strings.Join(cells[1:], " | ")
		names = append(names, name)
		want, known := rows[name]
		if !known {
			t.Errorf("docs/abi.md §9 has a row %q this test does not know", name)
		} else if !strings.HasPrefix(value, want) {
			t.Errorf("docs/abi.md §9, %s: %q, want it to begin %q (limits.Default)", name, value, want)
		}
	}
	for name := range rows {
		if !slices.Contains(names, name) {
			t.Errorf("docs/abi.md §9 has no row %q", name)
		}
	}

	// The same defaults where abi.md's other sections name them.
	flat := strings.Join(strings.Fields(abi), " ")
	for _, want := range []string{
		"its last " + HumanSize(int64(d.StderrTail)) + " go into crash reports",
		"must then exit with code 0 within " + secs(d.ExitTimeout),
		fmt.Sprintf("at most %d pages", d.MaxPages),
		fmt.Sprintf("the %dth page still has a `nextCursor`", d.MaxPages),
		"more than " + thousands(d.MaxTools) + " tools",
		"has " + secs(d.DiscoveryTimeout) + ".",
		"over the module size limit (" + HumanSize(d.ModuleSize) + ")",
		"above the memory limit (" + HumanSize(d.Memory) + ")",
		"the compile timeout (" + secs(d.CompileTimeout) + ")",
	} {
		if !strings.Contains(flat, want) {
			t.Errorf("docs/abi.md does not say %q (limits.Default)", want)
		}
	}

	cli := readDoc(t, "cli.md")
	i := strings.Index(cli, "The other limits of ABI 1 (")
	if i < 0 {
		t.Fatal("docs/cli.md has no sentence \"The other limits of ABI 1 (…\"")
	}
	sentence, _, _ := strings.Cut(cli[i:], "\n\n")
	sentence = strings.Join(strings.Fields(sentence), " ")
	for _, want := range []string{
		secs(d.DiscoveryTimeout) + " discovery",
		secs(d.ExitTimeout) + " exit after stdin closes",
		HumanSize(d.WriteBudget) + " write budget",
		thousands(d.MaxEntries) + " new directory entries",
		HumanSize(d.StdoutLine) + " a stdout line",
		HumanSize(d.StdoutTotal) + " a call",
		HumanSize(int64(d.StderrTail)) + " of stderr kept",
		"HTTP " + HumanSize(d.HTTPRequest) + " request",
		HumanSize(d.HTTPInline) + " inline body",
		fmt.Sprint(d.HTTPRedirects) + " redirects",
	} {
		if !strings.Contains(sentence, want) {
			t.Errorf("docs/cli.md's limits sentence does not say %q:\n%s", want, sentence)
		}
	}
	for _, want := range []string{"| " + HumanSize(d.Memory) + " |", "| " + power(d.Fuel) + " ", "| " + secs(d.CallTimeout) + " |"} {
		if !strings.Contains(cli, want) {
			t.Errorf("docs/cli.md's flag table has no default %q", want)
		}
	}
}

func readDoc(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile("../docs/" + name)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
