package wasi

import (
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// TestDocumentedDescriptorCap keeps docs/abi.md §9 and the code one fact:
// the open-descriptors row gives DefaultMaxFiles, and the text says the cap
// is fixed, not a field of limits.Limits.
func TestDocumentedDescriptorCap(t *testing.T) {
	doc, err := os.ReadFile("../docs/abi.md")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^\| open descriptors \| ([\d,]+) \|`).FindSubmatch(doc)
	if m == nil {
		t.Fatal("docs/abi.md §9 has no open-descriptors row")
	}
	n, err := strconv.Atoi(strings.ReplaceAll(string(m[1]), ",", ""))
	if err != nil || n != DefaultMaxFiles {
		t.Errorf("docs/abi.md gives %s open descriptors, the code %d", m[1], DefaultMaxFiles)
	}
	if !strings.Contains(string(doc), "`wasi.DefaultMaxFiles`") {
		t.Error("docs/abi.md does not say the descriptor cap is wasi.DefaultMaxFiles")
	}
}
