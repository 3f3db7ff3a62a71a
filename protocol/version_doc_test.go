package protocol

import (
	"os"
	"path/filepath"
	"regexp"
	"testing"
)

// otherRevisions are the dates the docs may name besides Version: the
// older MCP revisions `subako-runner mcp` serves to clients that ask for
// them, and the made-up revision of its unknown-revision example.
var otherRevisions = map[string]bool{"2025-06-18": true, "2025-11-25": true, "2099-01-01": true}

// TestDocsNameTheRevisionOfVersion keeps the MCP revision one fact: every
// date the docs name is Version or one of otherRevisions, so a change of
// Version fails here until the docs follow.
func TestDocsNameTheRevisionOfVersion(t *testing.T) {
	names, err := filepath.Glob("../docs/*.md")
	if err != nil {
		t.Fatal(err)
	}
	names = append(names, "../README.md")
	date := regexp.MustCompile(`\b20\d\d-\d\d-\d\d\b`)
	seen := 0
	for _, name := range names {
		b, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range date.FindAllString(string(b), -1) {
			switch {
			case d == Version:
				seen++
			case !otherRevisions[d]:
				t.Errorf("%s names %s, but protocol.Version is %s", name, d, Version)
			}
		}
	}
	if seen == 0 {
		t.Errorf("no doc names protocol.Version %s", Version)
	}
}
