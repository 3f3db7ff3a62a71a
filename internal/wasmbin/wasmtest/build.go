// Package wasmtest builds small WebAssembly command modules from bytes, for
// tests that need a module of a given shape (a compile bomb, a table
// grower) without a toolchain. Nothing outside tests imports it.
package wasmtest

import "github.com/subako/subako-runner/internal/wasmbin"

// Module describes a WASI-command-shaped module: one memory exported as
// "memory", and defined functions of type () -> () whose first is exported
// as "_start".
type Module struct {
	// Bodies are the functions' instructions, without locals and without
	// the final end (both are added).
	Bodies [][]byte
	// Locals, when set, is the encoded locals vector of every body
	// (default: no locals, the single byte 0).
	Locals []byte
	// Tables are the defined tables' encoded entries (element type and
	// limits), e.g. []byte{0x70, 0x00, 0x01} for (table 1 funcref).
	Tables [][]byte
	// Elements and Data are raw section contents (count included), or nil.
	Elements, Data []byte
	// DataCount, when true, adds a data count section for Data.
	DataCount    uint32
	HasDataCount bool
	// MemoryPages is the memory's minimum (default 1 when zero).
	MemoryPages uint32
	// Types are more function types, after the functions' () -> () (type
	// 0); nothing uses them.
	Types []wasmbin.FuncType
}

// Bytes encodes the module.
func (m Module) Bytes() []byte {
	out := []byte{0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00}
	types := wasmbin.AppendFuncType(wasmbin.AppendU32(nil, uint32(1+len(m.Types))), wasmbin.FuncType{})
	for _, t := range m.Types {
		types = wasmbin.AppendFuncType(types, t)
	}
	out = wasmbin.AppendSection(out, wasmbin.SectionType, types)
	n := max(len(m.Bodies), 1)
	funcs := wasmbin.AppendU32(nil, uint32(n))
	for range n {
		funcs = append(funcs, 0)
	}
	out = wasmbin.AppendSection(out, wasmbin.SectionFunction, funcs)
	if len(m.Tables) > 0 {
		t := wasmbin.AppendU32(nil, uint32(len(m.Tables)))
		for _, e := range m.Tables {
			t = append(t, e...)
		}
		out = wasmbin.AppendSection(out, wasmbin.SectionTable, t)
	}
	pages := m.MemoryPages
	if pages == 0 {
		pages = 1
	}
	out = wasmbin.AppendSection(out, wasmbin.SectionMemory, wasmbin.AppendU32([]byte{1, 0}, pages))
	exports := []byte{2}
	exports = wasmbin.AppendExport(exports, wasmbin.Export{Name: "memory", Kind: wasmbin.KindMemory})
	exports = wasmbin.AppendExport(exports, wasmbin.Export{Name: "_start", Kind: wasmbin.KindFunc})
	out = wasmbin.AppendSection(out, wasmbin.SectionExport, exports)
	if m.Elements != nil {
		out = wasmbin.AppendSection(out, wasmbin.SectionElement, m.Elements)
	}
	if m.HasDataCount {
		out = wasmbin.AppendSection(out, wasmbin.SectionDataCount, wasmbin.AppendU32(nil, m.DataCount))
	}
	locals := m.Locals
	if locals == nil {
		locals = []byte{0}
	}
	code := wasmbin.AppendU32(nil, uint32(n))
	for i := range n {
		var body []byte
		if i < len(m.Bodies) {
			body = m.Bodies[i]
		}
		code = wasmbin.AppendU32(code, uint32(len(locals)+len(body)+1))
		code = append(code, locals...)
		code = append(code, body...)
		code = append(code, 0x0b)
	}
	out = wasmbin.AppendSection(out, wasmbin.SectionCode, code)
	if m.Data != nil {
		out = wasmbin.AppendSection(out, wasmbin.SectionData, m.Data)
	}
	return out
}

// Repeat returns n copies of piece followed by n copies of closer: nested
// blocks are Repeat([]byte{0x02, 0x40}, []byte{0x0b}, n).
func Repeat(piece, closer []byte, n int) []byte {
	out := make([]byte, 0, n*(len(piece)+len(closer)))
	for range n {
		out = append(out, piece...)
	}
	for range n {
		out = append(out, closer...)
	}
	return out
}
