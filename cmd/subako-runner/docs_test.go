package main

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/subako/subako-runner/cmd/subako-runner/internal/scaffold"
	"github.com/subako/subako-runner/internal/devtools/testguest"
)

// The docs' examples are part of the contract: every command shown in
// docs/cli.md, docs/abi.md and docs/authoring.md runs here, and every Go block of
// docs/embedding.md is code from runtime/embedding_example_test.go, so an
// example cannot drift from what the runner does.
//
// The convention (repeated in an HTML comment at the top of each doc):
//
//   - A fenced block with the info string "sh" whose first line starts with
//     "$ subako-runner " is an example. It is run from the repository root;
//     testdata/packages/greet is the example package (make demo builds its
//     module.wasm) and testdata/packages/sdkgreet the Go SDK's: the test
//     builds both modules from their Go source.
//   - The command line is split into words as sh does for quotes ('…',
//     "…" with \" and \\, and \ outside quotes). A trailing "# exit N"
//     comment is the expected exit status (0 when absent); a trailing
//     "2>&1" appends stderr to the output that is compared.
//   - The lines after it are the expected output, compared line by line
//     from the first to the last. A line "..." stands for any number of
//     lines (none included); "..." inside a line stands for any text within
//     the line. Trailing spaces do not count.

const docsDir = "../../docs/"

// docExample is one runnable block of a doc.
type docExample struct {
	file string
	line int // of the command, 1-based
	cmd  string
	want []string
}

// docBlocks returns the fenced blocks of a Markdown file whose info string
// is lang, with the line number of each block's first line.
func docBlocks(t *testing.T, path, lang string) (blocks [][]string, lines []int) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	var cur []string
	in, n, start := false, 0, 0
	for sc.Scan() {
		n++
		l := sc.Text()
		trimmed := strings.TrimSpace(l)
		switch {
		case !in && strings.HasPrefix(trimmed, "```"):
			in, cur, start = true, nil, n+1
			if strings.TrimSpace(strings.TrimPrefix(trimmed, "```")) != lang {
				cur = nil
				start = -1
			}
		case in && trimmed == "```":
			in = false
			if start > 0 {
				blocks, lines = append(blocks, cur), append(lines, start)
			}
		case in && start > 0:
			cur = append(cur, l)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if in {
		t.Fatalf("%s: a fenced block is not closed", path)
	}
	return blocks, lines
}

func docExamples(t *testing.T, name string) []docExample {
	blocks, lines := docBlocks(t, docsDir+name, "sh")
	var out []docExample
	for i, b := range blocks {
		if len(b) == 0 || !strings.HasPrefix(b[0], "$ subako-runner ") {
			continue
		}
		want := b[1:]
		for len(want) > 0 && strings.TrimSpace(want[len(want)-1]) == "" {
			want = want[:len(want)-1]
		}
		out = append(out, docExample{file: name, line: lines[i], cmd: strings.TrimPrefix(b[0], "$ "), want: want})
	}
	return out
}

var exitComment = regexp.MustCompile(`\s+#\s*exit\s+(\d+)\s*$`)

// parseCommand splits an example's command line into its words, the
// expected exit status and whether stderr is shown.
func parseCommand(line string) (words []string, exit int, withStderr bool, err error) {
	if m := exitComment.FindStringSubmatch(line); m != nil {
		exit, _ = strconv.Atoi(m[1])
		line = line[:len(line)-len(m[0])]
	}
	line = strings.TrimSpace(line)
	if s, ok := strings.CutSuffix(line, " 2>&1"); ok {
		line, withStderr = s, true
	}
	var w strings.Builder
	inWord := false
	for i := 0; i < len(line); i++ {
		c := line[i]
		switch {
		case c == ' ' || c == '\t':
			if inWord {
				words, inWord = append(words, w.String()), false
				w.Reset()
			}
		case c == '\'':
			j := strings.IndexByte(line[i+1:], '\'')
			if j < 0 {
				return nil, 0, false, fmt.Errorf("unclosed ' in %q", line)
			}
			w.WriteString(line[i+1 : i+1+j])
			i += j + 1
			inWord = true
		case c == '"':
			i++
			for ; i < len(line) && line[i] != '"'; i++ {
				if line[i] == '\\' && i+1 < len(line) && (line[i+1] == '"' || line[i+1] == '\\') {
					i++
				}
				w.WriteByte(line[i])
			}
			if i == len(line) {
				return nil, 0, false, fmt.Errorf("unclosed \" in %q", line)
			}
			inWord = true
		case c == '\\' && i+1 < len(line):
			i++
			w.WriteByte(line[i])
			inWord = true
		case c == '|' || c == '<' || c == '>' || c == ';' || c == '&' || c == '$' || c == '`':
			return nil, 0, false, fmt.Errorf("unsupported shell syntax %q in %q", c, line)
		default:
			w.WriteByte(c)
			inWord = true
		}
	}
	if inWord {
		words = append(words, w.String())
	}
	return words, exit, withStderr, nil
}

// lineMatches compares one output line with one expected line, in which
// "..." stands for any text.
func lineMatches(want, got string) bool {
	parts := strings.Split(want, "...")
	if len(parts) == 1 {
		return want == got
	}
	var re strings.Builder
	re.WriteString("^")
	for i, p := range parts {
		if i > 0 {
			re.WriteString(".*")
		}
		re.WriteString(regexp.QuoteMeta(p))
	}
	re.WriteString("$")
	return regexp.MustCompile(re.String()).MatchString(got)
}

// outputMatches matches the whole output against the expected lines, a
// "..." line standing for any number of lines.
func outputMatches(want, got []string) bool {
	if len(want) == 0 {
		return len(got) == 0
	}
	if strings.TrimSpace(want[0]) == "..." {
		for skip := 0; skip <= len(got); skip++ {
			if outputMatches(want[1:], got[skip:]) {
				return true
			}
		}
		return false
	}
	return len(got) > 0 && lineMatches(want[0], got[0]) && outputMatches(want[1:], got[1:])
}

func splitOutput(s string) []string {
	s = strings.TrimRight(s, "\n")
	if s == "" {
		return nil
	}
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = strings.TrimRight(l, " \t")
	}
	return lines
}

func TestDocConventionMatcher(t *testing.T) {
	tests := []struct {
		want, got string
		ok        bool
	}{
		{"a\nb", "a\nb\n", true},
		{"a", "a\nb", false},
		{"a\n...", "a\nb\nc", true},
		{"...\nc", "a\nb\nc", true},
		{"a\n...\nc", "a\nc", true},
		{"x ... z", "x yyy z", true},
		{"x ... z", "x yyy", false},
		{"a\nb", "a\nc", false},
	}
	for _, tt := range tests {
		if got := outputMatches(splitOutput(tt.want), splitOutput(tt.got)); got != tt.ok {
			t.Errorf("want %q vs output %q: %v, expected %v", tt.want, tt.got, got, tt.ok)
		}
	}
	words, exit, withStderr, err := parseCommand(`subako-runner call 'a b' "c \"d\"" e\ f 2>&1   # exit 3`)
	if err != nil || exit != 3 || !withStderr || strings.Join(words, "|") != `subako-runner|call|a b|c "d"|e f` {
		t.Errorf("parseCommand: %q %d %v %v", words, exit, withStderr, err)
	}
	if _, _, _, err := parseCommand(`subako-runner call x | jq`); err == nil {
		t.Error("a pipe was accepted")
	}
}

// builtPackage copies testdata/packages/NAME with a module freshly built
// from the Go guest testdata/guests/GUEST.
func builtPackage(t *testing.T, name, guest string) string {
	t.Helper()
	src := "../../testdata/packages/" + name
	dir := filepath.Join(t.TempDir(), name)
	err := filepath.WalkDir(src, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(dir, rel), 0o755)
		}
		if rel == "module.wasm" {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dir, rel), b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(testguest.Go(t, guests+guest))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "module.wasm"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// initPackage is the package directory of what `init --lang go hello`
// writes, its module built from the project's Go source.
func initPackage(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "hello")
	if _, err := scaffold.Write(dir, "go", "hello"); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(testguest.Go(t, dir))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "package", "module.wasm"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	return filepath.Join(dir, "package")
}

func TestDocExamplesRun(t *testing.T) {
	// The packages whose module is built from Go source rather than
	// committed, each swapped for a copy with a fresh module.
	built := map[string]string{
		"testdata/packages/greet": builtPackage(t, "greet", "greet"),
		// authoring.md's project: what `init --lang go hello` writes, built.
		"hello/package": initPackage(t),
	}
	// -short (the race pass) leaves out, as the other packages' tests do,
	// the largest guest: sdkgreet, the official Go SDK's 14 MB module,
	// whose metering under -race alone takes seconds per command. Its
	// examples run in the full pass.
	const sdkgreet = "testdata/packages/sdkgreet"
	if !testing.Short() {
		built[sdkgreet] = builtPackage(t, "sdkgreet", "sdkgreet")
	}
	var examples []docExample
	for _, name := range []string{"cli.md", "abi.md", "authoring.md"} {
		examples = append(examples, docExamples(t, name)...)
	}
	if len(examples) < 10 {
		t.Fatalf("found %d examples in the docs; the convention's parser is broken", len(examples))
	}
	// The examples run from the repository root, as a reader types them;
	// only the example package is swapped for one with a fresh module.
	t.Chdir("../..")
	toHere := func(w string) string {
		for doc, dir := range built {
			if w == doc || strings.HasPrefix(w, doc+"/") {
				return dir + w[len(doc):]
			}
		}
		return w
	}
	fromHere := func(s string) string {
		for doc, dir := range built {
			s = strings.ReplaceAll(s, dir, doc)
		}
		return s
	}
	for _, ex := range examples {
		t.Run(fmt.Sprintf("%s:%d", ex.file, ex.line), func(t *testing.T) {
			words, wantExit, withStderr, err := parseCommand(ex.cmd)
			if err != nil {
				t.Fatal(err)
			}
			if testing.Short() && slices.ContainsFunc(words, func(w string) bool { return w == sdkgreet || strings.HasPrefix(w, sdkgreet+"/") }) {
				t.Skip("-short (the race pass): runs the 14 MB official-SDK guest (sdkgreet), the largest; the full pass runs this example")
			}
			args := make([]string, 0, len(words)-1)
			for _, w := range words[1:] {
				args = append(args, toHere(w))
			}
			code, stdout, stderr := cli(t, "", args...)
			out := stdout
			if withStderr {
				out += stderr
			}
			out = fromHere(out)
			if code != wantExit {
				t.Errorf("%s\nexit %d, the doc says %d\nstdout:\n%s\nstderr:\n%s", ex.cmd, code, wantExit, stdout, stderr)
			}
			if !outputMatches(ex.want, splitOutput(out)) {
				t.Errorf("%s\noutput does not match the doc.\nthe doc shows:\n%s\nthe command wrote:\n%s\nstderr:\n%s",
					ex.cmd, strings.Join(ex.want, "\n"), out, stderr)
			}
		})
	}
}

// Every Go block of docs/embedding.md is quoted from the runnable examples
// in runtime/embedding_example_test.go, so the doc shows code that compiles
// and whose output `go test` checks.
func TestEmbeddingDocQuotesRunnableExamples(t *testing.T) {
	src, err := os.ReadFile("../../runtime/embedding_example_test.go")
	if err != nil {
		t.Fatal(err)
	}
	blocks, lines := docBlocks(t, docsDir+"embedding.md", "go")
	if len(blocks) < 5 {
		t.Fatalf("embedding.md has %d Go blocks; want the examples quoted", len(blocks))
	}
	for i, b := range blocks {
		code := strings.Join(b, "\n") + "\n"
		if !strings.Contains(string(src), code) {
			t.Errorf("embedding.md:%d: this Go block is not in runtime/embedding_example_test.go verbatim:\n%s", lines[i], code)
		}
	}
}

// Every code block of docs/authoring.md is quoted verbatim from the
// source it presents, so the guide shows the code the tests build and run.
func TestAuthoringDocQuotesTheSources(t *testing.T) {
	// The projects `init` writes for a package called hello, and the Go
	// SDK's example.
	project := func(lang, file string) string {
		files, err := scaffold.Files(lang, "hello")
		if err != nil {
			t.Fatal(err)
		}
		return string(files[file])
	}
	sources := map[string][]string{
		"go":   {"../../testdata/guests/sdkgreet/main.go", "init:go:main.go"},
		"c":    {"init:c:main.c"},
		"rust": {"init:rust:src/main.rs"},
		"ts":   {"init:as:main.ts"},
	}
	for lang, files := range sources {
		var all strings.Builder
		for _, f := range files {
			if parts := strings.SplitN(f, ":", 3); parts[0] == "init" {
				all.WriteString(project(parts[1], parts[2]))
				continue
			}
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			all.Write(b)
		}
		blocks, lines := docBlocks(t, docsDir+"authoring.md", lang)
		if len(blocks) == 0 {
			t.Errorf("authoring.md has no %s block", lang)
		}
		for i, b := range blocks {
			if code := strings.Join(b, "\n") + "\n"; !strings.Contains(all.String(), code) {
				t.Errorf("authoring.md:%d: this %s block is not in %v verbatim:\n%s", lines[i], lang, files, code)
			}
		}
	}
	// Each build line names the flags its fixture's Makefile uses.
	doc, err := os.ReadFile(docsDir + "authoring.md")
	if err != nil {
		t.Fatal(err)
	}
	for makefile, flags := range map[string][]string{
		"c":    {"--target=$(TARGET)", "-O2 -Wall -Wextra -Werror", "-Wl,--strip-debug", "-o $@ main.c"},
		"rust": {"--edition 2021 --target $(TARGET) -C opt-level=2 -C strip=debuginfo -o $@ src/main.rs"},
		"as":   {"-O3 --exportStart _start --use abort=main/asAbort", "npm install --no-audit --no-fund", ascVersion(t)},
		"go":   {"GOOS=wasip1 GOARCH=wasm $(GO) build -trimpath -o $@ ."},
	} {
		mk := project(makefile, "Makefile")
		if makefile == "as" {
			mk += project("as", "package.json") // the pinned compiler
		}
		// The doc shows each line as make runs it.
		target := map[string]string{"c": "wasm32-wasi", "rust": "wasm32-wasip1"}[makefile]
		asRun := strings.NewReplacer("$(TARGET)", target, "$(GO)", "go", "$(RUSTFLAGS)", "-C opt-level=2 -C strip=debuginfo", "$(CFLAGS)", "-O2 -Wall -Wextra -Werror", "$@", "package/module.wasm")
		for _, f := range flags {
			inMake := strings.Contains(mk, f) || strings.Contains(asRun.Replace(mk), asRun.Replace(f))
			f := asRun.Replace(f)
			if !inMake || !strings.Contains(string(doc), f) {
				t.Errorf("%q: in the %s Makefile %v, in authoring.md %v", f, makefile, inMake, strings.Contains(string(doc), f))
			}
		}
	}
}
