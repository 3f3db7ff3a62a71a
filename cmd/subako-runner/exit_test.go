package main

import (
	"fmt"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// exitSentence is the "Exit status: …" sentence the package doc and the
// README carry, made from exitStatuses.
func exitSentence() string {
	parts := make([]string, 0, len(exitStatuses()))
	for _, s := range exitStatuses() {
		parts = append(parts, fmt.Sprintf("%d %s", s.code, s.summary))
	}
	return "Exit status: " + strings.Join(parts, ", ")
}

// paragraph is the paragraph of text that starts with start, its
// whitespace collapsed to single spaces ("" when there is none).
func paragraph(text, start string) string {
	i := strings.Index(text, start)
	if i < 0 {
		return ""
	}
	p, _, _ := strings.Cut(text[i:], "\n\n")
	return strings.Join(strings.Fields(p), " ")
}

// TestExitStatusesAreDocumented keeps the exit statuses one fact: every
// status in exitStatuses, and no other, is a row of docs/cli.md's table;
// the package doc and the README give each in the table's words and order;
// and the package doc names every command.
func TestExitStatusesAreDocumented(t *testing.T) {
	var codes []int
	for _, s := range exitStatuses() {
		codes = append(codes, s.code)
	}

	cli, err := os.ReadFile(docsDir + "cli.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(cli), "\n## Exit status\n")
	if !ok {
		t.Fatal("docs/cli.md has no \"## Exit status\" section")
	}
	section, _, _ = strings.Cut(section, "\n## ")
	var documented []int
	for _, m := range regexp.MustCompile(`(?m)^\| (\d+) \|`).FindAllStringSubmatch(section, -1) {
		n, _ := strconv.Atoi(m[1])
		documented = append(documented, n)
	}
	slices.Sort(documented)
	sorted := slices.Sorted(slices.Values(codes))
	if !slices.Equal(documented, sorted) {
		t.Errorf("docs/cli.md's exit-status table has %v, the code %v", documented, sorted)
	}

	want := exitSentence()
	doc, err := os.ReadFile("doc.go")
	if err != nil {
		t.Fatal(err)
	}
	docText := regexp.MustCompile(`(?m)^//\t?`).ReplaceAllString(string(doc), "")
	if got := paragraph(docText, "Exit status:"); !strings.HasPrefix(got, want+".") {
		t.Errorf("the package doc says\n  %s\nwant it to begin\n  %s.", got, want)
	}
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	if got := paragraph(string(readme), "Exit status:"); !strings.HasPrefix(got, want+";") && !strings.HasPrefix(got, want+".") {
		t.Errorf("README.md says\n  %s\nwant it to begin\n  %s", got, want)
	}

	root := newRootCmd(t.Context(), &env{getenv: func(string) string { return "" }})
	for _, c := range root.Commands() {
		if c.Hidden || c.Name() == "help" {
			continue
		}
		if !strings.Contains(docText, "subako-runner "+c.Name()+" ") && !strings.Contains(docText, "subako-runner "+c.Name()+"\n") {
			t.Errorf("the package doc does not show the command %q", c.Name())
		}
	}
}

// TestHelpGivesEveryExitStatus keeps the --help text one fact with
// exitStatuses: every status is in the paragraph, each with its words.
func TestHelpGivesEveryExitStatus(t *testing.T) {
	code, out, _ := cli(t, "", "--help")
	if code != exitOK {
		t.Fatalf("--help: exit %d", code)
	}
	got := paragraph(out, "Exit status:")
	for _, s := range exitStatuses() {
		want := fmt.Sprintf("%d %s", s.code, s.help)
		if s.help == "" {
			want = fmt.Sprintf("(%d on a trap)", s.code)
		}
		if !strings.Contains(got, want) {
			t.Errorf("--help says\n  %s\nwithout %q", got, want)
		}
	}
}
