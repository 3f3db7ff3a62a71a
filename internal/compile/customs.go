package compile

import (
	"fmt"

	"github.com/subako/subako-runner/internal/modcheck"
	"github.com/subako/subako-runner/internal/wasmbin"
)

// engineBytes is module as wazero is given it (wasmbin.EngineNames): its
// name section reduced to what wazero can decode in bounded memory, the
// module itself when that is all it has. With DWARF off
// (RuntimeConfig) wazero reads no other custom section. A module whose
// sections do not split is an invalid_module rejection; wazero would
// refuse it too.
//
// Every path to wazero passes through here, whatever checks ran before:
// the upload's validation (Validate), and the compilation of a metered
// module (Compile) at upload, for `run` and for Runtime.Open of a stored
// artifact, vouched for or not. internal/modcheck refuses a malformed name
// section earlier on the paths that check a module; this is the line that
// holds on the others (docs/RATIONALE.md, "Why does wazero see no local
// names, and how is a bad name section refused?").
func engineBytes(module []byte) ([]byte, error) {
	out, err := wasmbin.EngineNames(module)
	if err != nil {
		return nil, &Rejected{modcheck.CodeInvalidModule, fmt.Sprintf("the module is malformed: %v", err)}
	}
	return out, nil
}
