package conformance

import (
	"encoding/json"
	"encoding/xml"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/subako/subako-runner/internal/text"
	"github.com/subako/subako-runner/limits"
)

// Status is the verdict of one check.
type Status string

// The statuses of cli.md.
const (
	// Pass: the package does what the check asks.
	Pass Status = "pass"
	// Warn: tolerated by the host, but the author should change it.
	Warn Status = "warn"
	// Fail: the host refuses the package, or the module crashes in use.
	Fail Status = "fail"
	// Skip: the check could not be judged; the detail says why.
	Skip Status = "skip"
)

// Check is one finding of the suite.
type Check struct {
	// ID is stable across versions, e.g. "protocol.eof_exit" or
	// "tools.call_empty_args/greet"; scripts match on it.
	ID string `json:"id"`
	// Title says what is checked; it starts with the item of ABI 1's
	// checklist (docs/cli.md, "check") when the check belongs to one
	// ("[2] ...").
	Title  string `json:"title"`
	Status Status `json:"status"`
	// Detail names the evidence and, for a warning or failure, the fix.
	Detail string `json:"detail"`
	// Item is the number of the checklist item (1–9), 0 for none.
	Item int `json:"item,omitempty"`
	// Profile is what the probe behind the check used, when it ran one.
	Profile *Profile `json:"profile,omitempty"`
}

// Profile is the resources one probe (one module instance) used.
type Profile struct {
	DurationMs  float64 `json:"durationMs"`
	FuelUsed    uint64  `json:"fuelUsed"`
	MemoryBytes int64   `json:"memoryBytes"`
}

func (p *Profile) String() string {
	if p == nil {
		return ""
	}
	s := fmt.Sprintf("%.1f ms, %s peak memory", p.DurationMs, limits.HumanSize(p.MemoryBytes))
	if p.FuelUsed > 0 {
		s += fmt.Sprintf(", %s fuel", formatCount(p.FuelUsed))
	}
	return s
}

// Report is the result of Run.
type Report struct {
	// Passed is true when no check has a status at or above FailOn: by
	// default no check failed (warnings allowed).
	Passed bool `json:"passed"`
	// FailOn is the least status that failed the run: Fail, or Warn
	// (Options.FailOn, the CLI's --strict).
	FailOn Status `json:"failOn"`
	// Package is the path that was checked.
	Package string  `json:"package,omitempty"`
	Checks  []Check `json:"checks"`
	// Duration is the whole run.
	Duration time.Duration `json:"-"`
}

// checkFailOn returns the fail-on level s names: Fail (also for empty,
// the default) or Warn.
func checkFailOn(s Status) (Status, error) {
	switch s {
	case "", Fail:
		return Fail, nil
	case Warn:
		return Warn, nil
	}
	return "", fmt.Errorf("unknown fail-on level %q: use fail or warn", string(s))
}

// fails says whether a check of status st fails a run at level failOn.
func fails(st, failOn Status) bool {
	return st == Fail || (failOn == Warn && st == Warn)
}

// passes says whether no check fails the run at r's level.
func (r *Report) passes() bool {
	for _, c := range r.Checks {
		if fails(c.Status, r.FailOn) {
			return false
		}
	}
	return true
}

// examplesNotPassed counts the example calls (--examples) that did not
// pass: a failure, or a warning (an isError answer: a refused request, a
// missing allowlist entry).
func (r *Report) examplesNotPassed() int {
	n := 0
	for _, c := range r.Checks {
		if strings.HasPrefix(c.ID, "examples.") && (c.Status == Warn || c.Status == Fail) {
			n++
		}
	}
	return n
}

// Get returns the check with that id.
func (r *Report) Get(id string) (Check, bool) {
	for _, c := range r.Checks {
		if c.ID == id {
			return c, true
		}
	}
	return Check{}, false
}

// Count returns how many checks have the status.
func (r *Report) Count(s Status) int {
	n := 0
	for _, c := range r.Checks {
		if c.Status == s {
			n++
		}
	}
	return n
}

// Format is an output format of the report.
type Format string

// The formats of cli.md's --format.
const (
	FormatHuman Format = "human"
	FormatJSON  Format = "json"
	FormatJUnit Format = "junit"
)

// ParseFormat reads a --format value.
func ParseFormat(s string) (Format, error) {
	switch f := Format(s); f {
	case FormatHuman, FormatJSON, FormatJUnit:
		return f, nil
	}
	return "", fmt.Errorf("unknown format %q: use human, json or junit", s)
}

// Write renders the report in the format. color applies to FormatHuman
// only; the caller decides it (a terminal, NO_COLOR unset) so output stays
// deterministic under test.
func (r *Report) Write(w io.Writer, f Format, color bool) error {
	switch f {
	case FormatJSON:
		return r.WriteJSON(w)
	case FormatJUnit:
		return r.WriteJUnit(w)
	}
	return r.WriteHuman(w, color)
}

// WriteJSON writes the JSON document of cli.md:
// {"passed": bool, "checks": [{"id","title","status","detail"}, ...]}.
func (r *Report) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

var marks = map[Status]string{Pass: "✓", Warn: "!", Fail: "✗", Skip: "-"}

// ANSI colours of the marks: green, yellow, red, dim.
var colors = map[Status]string{Pass: "\x1b[32m", Warn: "\x1b[33m", Fail: "\x1b[31m", Skip: "\x1b[2m"}

const colorReset = "\x1b[0m"

// WriteHuman writes a checklist: one line per check with its mark (✓ pass,
// ! warning, ✗ failure, - skipped), the detail indented below, and a
// summary line.
func (r *Report) WriteHuman(w io.Writer, color bool) error {
	var b strings.Builder
	if r.Package != "" {
		fmt.Fprintf(&b, "subako-runner check %s\n\n", text.Terminal(r.Package))
	}
	for _, c := range r.Checks {
		mark := marks[c.Status]
		if color {
			mark = colors[c.Status] + mark + colorReset
		}
		fmt.Fprintf(&b, "%s %s  (%s)\n", mark, text.Terminal(c.Title), c.ID)
		// The detail quotes the package (its tools, its stderr): its
		// control characters are made visible.
		detail := text.Terminal(c.Detail)
		if c.Profile != nil {
			detail += "\n[" + c.Profile.String() + "]"
		}
		for _, line := range strings.Split(strings.TrimRight(detail, "\n"), "\n") {
			if line != "" {
				fmt.Fprintf(&b, "    %s\n", line)
			}
		}
	}
	verdict := "PASSED"
	if !r.Passed {
		verdict = "FAILED"
	}
	if color {
		c := colors[Pass]
		if !r.Passed {
			c = colors[Fail]
		}
		verdict = c + verdict + colorReset
	}
	fmt.Fprintf(&b, "\n%s: %d passed, %d warnings, %d failed, %d skipped (%d checks in %v)\n",
		verdict, r.Count(Pass), r.Count(Warn), r.Count(Fail), r.Count(Skip), len(r.Checks), r.Duration.Round(time.Millisecond))
	switch n := r.examplesNotPassed(); {
	case r.FailOn == Warn && r.Count(Warn) > 0:
		fmt.Fprintf(&b, "strict: the %d warning(s) fail the run\n", r.Count(Warn))
	case r.FailOn != Warn && n > 0 && r.Passed:
		fmt.Fprintf(&b, "%d example call(s) did not pass, yet the run passes (warnings do not fail it): for CI to catch it, run check --strict (exit 1 on any warning)\n", n)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// The JUnit XML schema as CI systems read it (Jenkins, GitLab, GitHub
// actions): one testsuite, one testcase per check.
type junitSuites struct {
	XMLName  xml.Name     `xml:"testsuites"`
	Name     string       `xml:"name,attr"`
	Tests    int          `xml:"tests,attr"`
	Failures int          `xml:"failures,attr"`
	Skipped  int          `xml:"skipped,attr"`
	Time     string       `xml:"time,attr"`
	Suites   []junitSuite `xml:"testsuite"`
}

type junitSuite struct {
	Name       string      `xml:"name,attr"`
	Tests      int         `xml:"tests,attr"`
	Failures   int         `xml:"failures,attr"`
	Errors     int         `xml:"errors,attr"`
	Skipped    int         `xml:"skipped,attr"`
	Time       string      `xml:"time,attr"`
	Properties *junitProps `xml:"properties,omitempty"`
	Cases      []junitCase `xml:"testcase"`
}

type junitCase struct {
	Name       string        `xml:"name,attr"`
	Classname  string        `xml:"classname,attr"`
	Time       string        `xml:"time,attr"`
	Properties *junitProps   `xml:"properties,omitempty"`
	Failure    *junitMessage `xml:"failure,omitempty"`
	Skipped    *junitMessage `xml:"skipped,omitempty"`
	SystemOut  string        `xml:"system-out,omitempty"`
}

type junitProps struct {
	Props []junitProp `xml:"property"`
}

type junitProp struct {
	Name  string `xml:"name,attr"`
	Value string `xml:"value,attr"`
}

type junitMessage struct {
	Message string `xml:"message,attr"`
	Type    string `xml:"type,attr,omitempty"`
	Text    string `xml:",chardata"`
}

// WriteJUnit writes JUnit XML: one testsuite named for the package, one
// testcase per check named by its id. A failure is a <failure>, a skip a
// <skipped>; a warning passes (CI should not go red for it) but carries a
// property status=warn and its detail in <system-out> prefixed "WARNING:",
// unless the report fails on warnings (FailOn Warn): then it is a
// <failure> of type "warn". The suite's property fail-on says which.
func (r *Report) WriteJUnit(w io.Writer) error {
	name := r.Package
	if name == "" {
		name = "package"
	}
	secs := func(d float64) string { return fmt.Sprintf("%.3f", d/1000) }
	failOn := r.FailOn
	if failOn == "" {
		failOn = Fail
	}
	failures := r.Count(Fail)
	if failOn == Warn {
		failures += r.Count(Warn)
	}
	suite := junitSuite{Name: name, Tests: len(r.Checks), Failures: failures, Skipped: r.Count(Skip), Time: secs(float64(r.Duration.Milliseconds())),
		Properties: &junitProps{Props: []junitProp{{"fail-on", string(failOn)}}}}
	for _, c := range r.Checks {
		tc := junitCase{Name: c.ID, Classname: "subako.check", Time: "0.000",
			Properties: &junitProps{Props: []junitProp{{"status", string(c.Status)}, {"title", c.Title}}}}
		if c.Item > 0 {
			tc.Properties.Props = append(tc.Properties.Props, junitProp{"checklist", fmt.Sprint(c.Item)})
		}
		if c.Profile != nil {
			tc.Time = secs(c.Profile.DurationMs)
		}
		switch c.Status {
		case Fail:
			tc.Failure = &junitMessage{Message: c.Title, Type: "fail", Text: c.Detail}
		case Skip:
			tc.Skipped = &junitMessage{Message: c.Detail}
		case Warn:
			if failOn == Warn {
				tc.Failure = &junitMessage{Message: c.Title, Type: "warn", Text: c.Detail}
				break
			}
			tc.SystemOut = "WARNING: " + c.Detail
		default:
			tc.SystemOut = c.Detail
		}
		suite.Cases = append(suite.Cases, tc)
	}
	doc := junitSuites{Name: "subako-runner check", Tests: suite.Tests, Failures: suite.Failures, Skipped: suite.Skipped, Time: suite.Time, Suites: []junitSuite{suite}}
	if _, err := io.WriteString(w, xml.Header); err != nil {
		return err
	}
	enc := xml.NewEncoder(w)
	enc.Indent("", "  ")
	if err := enc.Encode(doc); err != nil {
		return err
	}
	_, err := io.WriteString(w, "\n")
	return err
}

func formatCount(n uint64) string {
	switch {
	case n >= 1e9:
		return fmt.Sprintf("%.2fG", float64(n)/1e9)
	case n >= 1e6:
		return fmt.Sprintf("%.2fM", float64(n)/1e6)
	case n >= 1e3:
		return fmt.Sprintf("%.1fk", float64(n)/1e3)
	}
	return fmt.Sprint(n)
}
