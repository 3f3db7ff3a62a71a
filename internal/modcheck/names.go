package modcheck

import (
	"github.com/subako/subako-runner/internal/wasmbin"
)

// nameProblems reports a name section that is not well formed
// (wasmbin.CheckNameSection) as invalid_module, alone, as a module that
// does not decode is: every path that compiles a module runs it (through
// Check or CheckStructure) before any wazero call. wazero's decoder
// refused such a section too, but only after making a slice of whatever
// count it declared: a 64-byte module asked for 103 GB and ended the
// process. A module's other custom sections are never given to wazero
// (internal/compile), so they are not looked into.
func nameProblems(m *wasmbin.Module) []Problem {
	for _, s := range m.Sections {
		if s.ID != wasmbin.SectionCustom || s.Name != "name" {
			continue
		}
		if err := wasmbin.CheckNameSection(s.Content, s.ContentOffset); err != nil {
			return []Problem{{CodeInvalidModule, "the name section is malformed " + errWhere(err) + " (it names functions for stack traces; fix or strip it: wasm-opt --strip-debug)"}}
		}
	}
	return nil
}
