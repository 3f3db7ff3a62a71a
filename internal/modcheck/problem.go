package modcheck

import (
	"fmt"

	"github.com/subako/subako-runner/limits"
)

// Problem codes (docs/abi.md §2). They are stable: callers, the CLI's
// JSON output and package authors' tooling match on them.
const (
	CodeNotWasm           = "not_wasm"
	CodeComponent         = "component"
	CodeModuleTooLarge    = "module_too_large"
	CodeInvalidModule     = "invalid_module"
	CodeThreads           = "threads"
	CodeExceptions        = "exceptions"
	CodeMissingStart      = "missing_start"
	CodeBadStartSignature = "bad_start_signature"
	CodeReactor           = "reactor"
	CodeMissingMemory     = "missing_memory"
	CodeUnknownImport     = "unknown_import"
	CodeImportSignature   = "import_signature"
	CodeNonFunctionImport = "non_function_import"
	CodeMemoryTooLarge    = "memory_too_large"
	// CodeTableTooLarge: a table's initial size (8 bytes an element) is
	// above the memory limit. Decided here; docs/abi.md §2 has no table
	// code because the seed never mentions tables.
	CodeTableTooLarge = "table_too_large"
	// CodeModuleTooComplex: the module is over a structural bound
	// (limits.Structure) that keeps compiling and instantiating it bounded.
	CodeModuleTooComplex = "module_too_complex"
)

// Problem is one failed check: a stable code and a sentence for the package
// author.
type Problem struct {
	Code, Message string
}

// String renders "code: message", the CLI's one-line form.
func (p Problem) String() string { return p.Code + ": " + p.Message }

// Options configures Check.
type Options struct {
	// MaxMemoryBytes is the memory limit; a memory whose initial size is
	// above it is reported as memory_too_large. Zero or negative disables
	// the check.
	MaxMemoryBytes int64
	// Structure bounds the module's shape (module_too_complex); a zero
	// field is not checked.
	Structure limits.Structure
}

// ModuleTooLarge is the module_too_large problem for a module of size bytes
// over a limit of limit bytes. The size check belongs to the caller, which
// must refuse an oversized module before reading it; this keeps the
// sentence the same everywhere.
func ModuleTooLarge(size, limit int64) Problem {
	return Problem{CodeModuleTooLarge, fmt.Sprintf("the module is %d bytes (%s), above the module size limit of %s: strip debug sections (wasm-opt --strip-debug) or build with optimisation", size, limits.HumanSize(size), limits.HumanSize(limit))}
}
