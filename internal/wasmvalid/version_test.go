package wasmvalid

import (
	"os"
	"slices"
	"strings"
	"testing"
)

// checkedWazero is the wazero version this package's reliance on wazero's
// internal order was last checked against.
const checkedWazero = "v1.12.0"

// TestWazeroVersionIsTheOneValidated fails when the build links another
// wazero than the one checked: Validate relies on wazero validating the
// whole module before it asks the function listener factory for
// listeners, and on nothing of the module staying in the runtime after
// Close. A new wazero may reorder either without any other test noticing
// at once, so re-read wazero's compileModule (internal/engine) and
// CompileModule (runtime.go), run this package's tests and
// internal/modcheck's sweep, then set checkedWazero.
func TestWazeroVersionIsTheOneValidated(t *testing.T) {
	// A test binary carries no module dependencies in its build
	// information, so the version is go.mod's (a replace directive wins).
	b, err := os.ReadFile("../../go.mod")
	if err != nil {
		t.Fatal(err)
	}
	var v string
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(strings.TrimPrefix(strings.TrimSpace(line), "replace"))
		switch {
		case len(f) >= 2 && f[0] == wazeroPath && !strings.Contains(line, "=>") && v == "":
			v = f[1]
		case len(f) >= 4 && f[0] == wazeroPath && slices.Contains(f, "=>"):
			v = f[len(f)-1] // replaced: the replacement's version, or its path
		}
	}
	if v == "" {
		t.Fatal("go.mod does not require " + wazeroPath)
	}
	if v != checkedWazero {
		t.Fatalf("the build uses wazero %s, internal/wasmvalid was checked against %s: re-check internal/wasmvalid (see this test's comment), then set checkedWazero", v, checkedWazero)
	}
}

const wazeroPath = "github.com/tetratelabs/wazero"
