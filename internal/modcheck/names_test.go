package modcheck

import (
	"strings"
	"testing"

	"github.com/subako/subako-runner/internal/wasmbin/wasmtest"
)

// A malformed name section is invalid_module, alone, from both entry
// points (every path that compiles a module runs one of them first); a
// well-formed one, however large, is nothing to report.
func TestNameSectionChecked(t *testing.T) {
	for name, check := range map[string]func([]byte, Options) []Problem{"Check": Check, "CheckStructure": CheckStructure} {
		ps := check(wasmtest.NameCountBomb(), defaultOpts)
		if len(ps) != 1 || ps[0].Code != CodeInvalidModule || !strings.Contains(ps[0].Message, "name section is malformed at byte offset 0x3b") {
			t.Errorf("%s(the 64-byte module) = %v; want one invalid_module naming the name section and the count's offset", name, ps)
		}
		if ps := check(wasmtest.LocalNamesFlood(10_000), defaultOpts); len(ps) != 0 {
			t.Errorf("%s(a well-formed flood of local names) = %v; want nothing", name, ps)
		}
	}
}
