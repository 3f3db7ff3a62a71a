package runtime

import (
	"go/ast"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// experimentalNote begins the paragraph of a doc comment that puts a knob
// outside the compatibility promise.
const experimentalNote = "Experimental:"

// TestExperimentalKnobsMarked keeps docs/embedding.md's table of
// experimental knobs ("What may change") one fact with the code: every
// knob it lists carries an "Experimental:" note in its doc comment, and
// every exported name whose doc has one is in the table.
func TestExperimentalKnobsMarked(t *testing.T) {
	b, err := os.ReadFile("../docs/embedding.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	_, section, ok := strings.Cut(doc, "\n## What may change\n")
	if !ok {
		t.Fatal(`docs/embedding.md has no "## What may change"`)
	}
	section, _, _ = strings.Cut(section, "\n## ")
	_, table, ok := strings.Cut(section, "| knob | why it may change |")
	if !ok {
		t.Fatal(`docs/embedding.md's "What may change" has no "| knob | why it may change |" table`)
	}
	var listed []string
	for line := range strings.Lines(strings.TrimPrefix(table, "\n")) {
		if !strings.HasPrefix(line, "| `") {
			if strings.TrimSpace(line) == "" {
				break
			}
			continue
		}
		knobs, _, _ := strings.Cut(strings.TrimPrefix(line, "|"), "|")
		for _, m := range regexp.MustCompile("`([^`]+)`").FindAllStringSubmatch(knobs, -1) {
			listed = append(listed, strings.TrimPrefix(m[1], "runtime."))
		}
	}
	if len(listed) == 0 {
		t.Fatal("docs/embedding.md's table of experimental knobs lists none")
	}

	marked := map[string]bool{} // exported name (Type.Field for a field) → its doc has the note
	for _, f := range parseDir(t, ".") {
		for _, d := range f.Decls {
			gd, ok := d.(*ast.GenDecl)
			if !ok {
				continue
			}
			for _, spec := range gd.Specs {
				switch s := spec.(type) {
				case *ast.ValueSpec:
					for _, n := range s.Names {
						if n.IsExported() {
							marked[n.Name] = hasNote(s.Doc) || len(gd.Specs) == 1 && hasNote(gd.Doc)
						}
					}
				case *ast.TypeSpec:
					st, ok := s.Type.(*ast.StructType)
					if !ok || !s.Name.IsExported() {
						continue
					}
					for _, field := range st.Fields.List {
						for _, n := range field.Names {
							if n.IsExported() {
								marked[s.Name.Name+"."+n.Name] = hasNote(field.Doc)
							}
						}
					}
				}
			}
		}
	}
	for _, name := range listed {
		note, ok := marked[name]
		switch {
		case !ok:
			t.Errorf("docs/embedding.md lists %s as experimental; runtime has no such exported constant, variable or field", name)
		case !note:
			t.Errorf("docs/embedding.md lists %s as experimental; its doc comment has no %q note", name, experimentalNote)
		}
	}
	for name, note := range marked {
		if note && !slices.Contains(listed, name) {
			t.Errorf("%s's doc comment says %q; docs/embedding.md's table of experimental knobs does not list it", name, experimentalNote)
		}
	}
}

// hasNote reports whether a doc comment has a paragraph that begins with
// experimentalNote.
func hasNote(doc *ast.CommentGroup) bool {
	if doc == nil {
		return false
	}
	for line := range strings.Lines(doc.Text()) {
		if strings.HasPrefix(line, experimentalNote) {
			return true
		}
	}
	return false
}
