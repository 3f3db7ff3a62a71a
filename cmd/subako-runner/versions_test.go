package main

import (
	"encoding/json"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// ascVersion is the AssemblyScript compiler the repository pins, from the
// one place it is kept: testdata/asc/package.json.
func ascVersion(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile("../../testdata/asc/package.json")
	if err != nil {
		t.Fatal(err)
	}
	var pkg struct {
		Dependencies map[string]string `json:"dependencies"`
	}
	if err := json.Unmarshal(b, &pkg); err != nil {
		t.Fatal(err)
	}
	v := pkg.Dependencies["assemblyscript"]
	if v == "" {
		t.Fatal("testdata/asc/package.json pins no assemblyscript")
	}
	return v
}

// TestAssemblyScriptVersionIsOneFact: every file that names the
// AssemblyScript compiler's version names testdata/asc/package.json's,
// so a bump there that misses one of them fails here.
func TestAssemblyScriptVersionIsOneFact(t *testing.T) {
	want := ascVersion(t)
	version := regexp.MustCompile(`(?i)(?:assemblyscript["@: ]+"?|ASC_VERSION \?= |subako-asc-)(\d+\.\d+\.\d+)`)
	for _, name := range []string{
		"README.md", "docs/cli.md", "docs/authoring.md", ".ci/run",
		"cmd/subako-runner/internal/scaffold/templates/as/package.json.tmpl",
		"cmd/subako-runner/initcmd_test.go",
		"testdata/asc/package-lock.json",
		"testdata/guests/as/Makefile", "testdata/guests/as/README.md",
		"testdata/wasi/as/Makefile", "testdata/wasi/as/README.md",
	} {
		b, err := os.ReadFile("../../" + name)
		if err != nil {
			t.Fatal(err)
		}
		found := version.FindAllStringSubmatch(string(b), -1)
		if len(found) == 0 {
			t.Errorf("%s names no AssemblyScript version; take it off this list or say which", name)
		}
		for _, m := range found {
			if m[1] != want {
				t.Errorf("%s: %q, but testdata/asc/package.json pins %s", name, m[0], want)
			}
		}
	}
}

// TestCompletionShellsAreDocumented: the shells the completion command
// offers are the ones the README, the package doc and docs/cli.md name.
func TestCompletionShellsAreDocumented(t *testing.T) {
	root := newRootCmd(t.Context(), &env{getenv: func(string) string { return "" }})
	var shells []string
	for _, c := range root.Commands() {
		if c.Name() == "completion" {
			for _, s := range c.Commands() {
				shells = append(shells, s.Name())
			}
		}
	}
	if len(shells) < 4 {
		t.Fatalf("completion offers %v", shells)
	}
	slices.SortFunc(shells, func(a, b string) int { return slices.Index(shellOrder, a) - slices.Index(shellOrder, b) })
	joined := strings.Join(shells, "|")
	for _, f := range []struct{ name, want string }{
		{"cmd/subako-runner/doc.go", "subako-runner completion " + joined + "\n"},
		{"docs/cli.md", "subako-runner completion " + joined + "`"},
		{"README.md", "(also " + strings.Join(shells[1:], ", ") + ")"},
	} {
		b, err := os.ReadFile("../../" + f.name)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(b), f.want) {
			t.Errorf("%s does not say %q", f.name, f.want)
		}
	}
}

// shellOrder is the order the docs list the shells in.
var shellOrder = []string{"bash", "zsh", "fish", "powershell"}
