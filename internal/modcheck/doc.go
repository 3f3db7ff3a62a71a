// Package modcheck runs the upload-time module checks of ABI 1
// (docs/abi.md §2): it decodes a module with wasmbin and reports every
// problem it finds, each with a stable code and a sentence that names the
// offending import, export, section or instruction.
//
// It exists separately from compilation because wazero's own errors are
// not acceptable for package authors ("invalid version header" for a
// component, "invalid instruction 0x6" for legacy exceptions, silence for a
// reactor), and because authors should see all their problems at once, not
// the first one. It does not type-check: the caller still compiles with
// wazero. It also checks the module's shape against limits.Structure
// (module_too_complex) and its tables against the memory limit
// (table_too_large), in the same linear walk, so that what it passes
// compiles and instantiates in bounded time and memory; CheckStructure runs
// only those, for paths that compile without the full checks. Imports are
// checked against internal/abi, the table the host modules are defined
// from.
package modcheck
