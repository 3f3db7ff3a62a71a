package runtime

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/subako/subako-runner/limits"
)

// notRejectionDocs begin the doc comments of the blocks of Code constants
// that are not rejection codes: CallError's codes, and the codes of the
// event of a set's call that never reached its package.
var notRejectionDocs = []string{"Call refusal codes", "Codes of the CallEvent"}

// TestRejectionCodesAreComplete fails when a Code constant of this package
// (other than the call refusals) is missing from RejectionCodes, or the
// table lists a code twice or one no constant has.
func TestRejectionCodesAreComplete(t *testing.T) {
	consts := constantsNamed(t, "Code", notRejectionDocs...)
	if len(consts) < 20 {
		t.Fatalf("found only %d Code constants: %v", len(consts), consts)
	}
	inTable := map[string]bool{}
	for _, c := range RejectionCodes(limits.Default()) {
		if inTable[c.Code] {
			t.Errorf("RejectionCodes lists %q twice", c.Code)
		}
		inTable[c.Code] = true
	}
	values := map[string]bool{}
	for name, value := range consts {
		values[value] = true
		if !inTable[value] {
			t.Errorf("%s (%q) is missing from RejectionCodes: add its row (stage, title) in rejections.go", name, value)
		}
	}
	for code := range inTable {
		if !values[code] {
			t.Errorf("RejectionCodes lists %q, which no Code constant has", code)
		}
	}
}

// constantsNamed reads this package's sources for every constant whose
// name begins with prefix, outside a block whose doc begins with one of skipDocs,
// and resolves its value: a string literal, or a constant of another
// package of this module (modcheck.CodeX).
func constantsNamed(t *testing.T, prefix string, skipDocs ...string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, f := range parseDir(t, ".") {
		imports := map[string]string{}
		for _, im := range f.Imports {
			path, _ := strconv.Unquote(im.Path.Value)
			name := filepath.Base(path)
			if im.Name != nil {
				name = im.Name.Name
			}
			imports[name] = path
		}
		for _, d := range f.Decls {
			g, ok := d.(*ast.GenDecl)
			if !ok || g.Tok != token.CONST || slices.ContainsFunc(skipDocs, func(d string) bool { return strings.HasPrefix(g.Doc.Text(), d) }) {
				continue
			}
			for _, spec := range g.Specs {
				vs := spec.(*ast.ValueSpec)
				for i, n := range vs.Names {
					if !strings.HasPrefix(n.Name, prefix) || i >= len(vs.Values) {
						continue
					}
					out[n.Name] = constValue(t, vs.Values[i], imports)
				}
			}
		}
	}
	return out
}

func constValue(t *testing.T, e ast.Expr, imports map[string]string) string {
	t.Helper()
	switch v := e.(type) {
	case *ast.BasicLit:
		s, err := strconv.Unquote(v.Value)
		if err != nil {
			t.Fatal(err)
		}
		return s
	case *ast.SelectorExpr:
		pkg := imports[v.X.(*ast.Ident).Name]
		dir, ok := strings.CutPrefix(pkg, "github.com/subako/subako-runner/")
		if !ok {
			t.Fatalf("%s.%s: not a package of this module", pkg, v.Sel.Name)
		}
		for _, f := range parseDir(t, filepath.Join("..", dir)) {
			for _, d := range f.Decls {
				g, ok := d.(*ast.GenDecl)
				if !ok || g.Tok != token.CONST {
					continue
				}
				for _, spec := range g.Specs {
					vs := spec.(*ast.ValueSpec)
					for i, n := range vs.Names {
						if n.Name == v.Sel.Name && i < len(vs.Values) {
							return constValue(t, vs.Values[i], nil)
						}
					}
				}
			}
		}
		t.Fatalf("%s.%s: no such constant", pkg, v.Sel.Name)
	}
	t.Fatalf("a Code constant of an unexpected form: %T", e)
	return ""
}

func parseDir(t *testing.T, dir string) []*ast.File {
	t.Helper()
	names, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	var files []*ast.File
	fset := token.NewFileSet()
	for _, name := range names {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, parser.ParseComments)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}
	return files
}

// TestCheckStatuses pins the judgement of each code alone: its check
// fails, every check of a stage it stops is not run, and a code that can
// end its own stage leaves that stage's other checks unjudged unless a
// code that cannot end it shows the stage ran whole.
func TestCheckStatuses(t *testing.T) {
	codes := RejectionCodes(limits.Default())
	if got := CheckStatuses(codes, nil); slices.ContainsFunc(got, func(s CheckStatus) bool { return s != CheckPassed }) {
		t.Errorf("an accepted package: %v, want every check passed", got)
	}
	for _, code := range codes {
		got := CheckStatuses(codes, []Rejection{{Code: code.Code}})
		stops := code.Stops
		if stops == StageRead {
			stops = code.Stage + 1
		}
		for i, c := range codes {
			want := CheckPassed
			switch {
			case c.Code == code.Code:
				want = CheckFailed
			case c.Stage >= stops, c.Stage == code.Stage && code.EndsStage:
				want = CheckNotRun
			}
			if got[i] != want {
				t.Errorf("rejected with %s: %s is %s, want %s", code.Code, c.Code, got[i], want)
			}
		}
	}
	// invalid_module beside missing_start: the module decoded, so every
	// module check ran.
	got := CheckStatuses(codes, []Rejection{{Code: CodeInvalidModule}, {Code: CodeMissingStart}})
	for i, c := range codes {
		if c.Code == CodeReactor && got[i] != CheckPassed {
			t.Errorf("reactor beside a decoded module's failures: %s, want pass", got[i])
		}
	}
	// A code the table does not know says nothing of how far the upload got.
	got = CheckStatuses(codes, []Rejection{{Code: "newer_check"}})
	if slices.Contains(got, CheckPassed) {
		t.Errorf("an unknown code: %v, want nothing passed", got)
	}
}

const (
	stagesBegin = "<!-- begin: rejection stages, made from runtime.RejectionCodes (TestRejectionStagesDocumented) -->\n"
	stagesEnd   = "<!-- end: rejection stages -->\n"
)

// stagesTable is docs/abi.md's table of every rejection code with its
// stage, what passing its check means and what passed before it.
func stagesTable() string {
	var b strings.Builder
	b.WriteString("| code | stage | passing it means | passed before it |\n|---|---|---|---|\n")
	for _, c := range RejectionCodes(limits.Default()) {
		fmt.Fprintf(&b, "| `%s` | %s | %s | %s |\n", c.Code, c.Stage, c.Title, c.Stage.Passed())
	}
	return b.String()
}

// TestRejectionStagesDocumented keeps docs/abi.md's table of rejection
// stages the one RejectionCodes makes, and every code named in §1, §2 or
// §4 where its stage is described.
func TestRejectionStagesDocumented(t *testing.T) {
	b, err := os.ReadFile("../docs/abi.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	_, rest, ok := strings.Cut(doc, stagesBegin)
	table, _, ok2 := strings.Cut(rest, stagesEnd)
	if !ok || !ok2 {
		t.Fatalf("docs/abi.md has no block between\n%s%s", stagesBegin, stagesEnd)
	}
	if want := stagesTable(); table != want {
		t.Errorf("docs/abi.md's rejection stages differ from RejectionCodes; replace the block with\n%s", want)
	}
	for _, c := range RejectionCodes(limits.Default()) {
		if strings.Count(doc, "`"+c.Code+"`") < 2 {
			t.Errorf("docs/abi.md does not describe %s beside the stages table", c.Code)
		}
	}
}

// A rejection says how far the upload got: a module check failed, so the
// other module checks ran and passed, and discovery never ran.
func ExampleCheckStatuses() {
	codes := RejectionCodes(limits.Default())
	statuses := CheckStatuses(codes, []Rejection{{Code: CodeTableTooLarge, Message: "..."}})
	for i, c := range codes {
		switch c.Code {
		case CodeMissingStart, CodeTableTooLarge, CodeCompileTimeout, CodeNoTools:
			fmt.Printf("%-16s %-13s %s\n", c.Code, c.Stage, statuses[i])
		}
	}
	// Output:
	// missing_start    module checks pass
	// table_too_large  module checks fail
	// compile_timeout  compile       not_run
	// no_tools         tool list     not_run
}

// TestCrashReasonsDocumented keeps docs/abi.md §6 one fact with the Crash
// constants: its table has a row for each reason and no other, and the
// stderr tail it names is limits.StderrTail.
func TestCrashReasonsDocumented(t *testing.T) {
	b, err := os.ReadFile("../docs/abi.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(b), "\n## 6. Crash rules\n")
	if !ok {
		t.Fatal("docs/abi.md has no \"## 6. Crash rules\"")
	}
	section, _, _ = strings.Cut(section, "\n## ")
	var documented []string
	for _, line := range strings.Split(section, "\n") {
		if code, ok := strings.CutPrefix(line, "| `"); ok {
			code, _, _ = strings.Cut(code, "`")
			documented = append(documented, code)
		}
	}
	var reasons []string
	for _, v := range constantsNamed(t, "Crash") {
		reasons = append(reasons, v)
	}
	slices.Sort(documented)
	slices.Sort(reasons)
	if !slices.Equal(documented, reasons) {
		t.Errorf("docs/abi.md §6 lists %v, the Crash constants are %v", documented, reasons)
	}
	tail := "the last " + limits.HumanSize(int64(limits.Default().StderrTail)) + " of stderr"
	if !strings.Contains(section, tail) {
		t.Errorf("docs/abi.md §6 does not say %q (limits.Default().StderrTail)", tail)
	}
}
