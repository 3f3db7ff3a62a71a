package wasmtest

import "github.com/subako/subako-runner/internal/wasmbin"

// WithNameSubsection appends to module a "name" custom section holding
// one subsection, id with content.
func WithNameSubsection(module []byte, id byte, content []byte) []byte {
	sub := append([]byte{id}, wasmbin.AppendU32(nil, uint32(len(content)))...)
	return wasmbin.AppendCustomSection(module, "name", append(sub, content...))
}

// NameCountBomb is the 64-byte module of the red team's report: a valid
// WASI command whose name section's function names (subsection 1) declare
// 0xFFFFFFFF entries and hold none. wazero 1.12's decoder makes a slice of
// the count as written (103 GB), and the Go runtime ends the process.
func NameCountBomb() []byte {
	return WithNameSubsection(Module{}.Bytes(), 1, wasmbin.AppendU32(nil, 0xFFFFFFFF))
}

// LocalNamesFlood is a valid WASI command whose name section's local
// names (subsection 2) are n entries, each "function 0: no local names"
// (2 bytes): well formed, but wazero 1.12 decodes every entry into a
// struct of its own (n = 1<<24: a 32 MiB module, 4.7 s and 1.2 GB to
// validate).
func LocalNamesFlood(n int) []byte {
	content := wasmbin.AppendU32(make([]byte, 0, 5+2*n), uint32(n))
	for range n {
		content = append(content, 0, 0)
	}
	return WithNameSubsection(Module{}.Bytes(), 2, content)
}
