package wasmbin

// Encoders for the fuel rewriter: it copies most of a module verbatim and
// re-encodes only the entries that carry function indices or that it adds.
// Each encoder appends the canonical (shortest-LEB) form the decoder reads.

// Order ranks the non-custom sections in the order the spec requires (type
// first, data last; tag between memory and global; data count between
// element and code). Custom sections rank 0.
func (id SectionID) Order() int { return id.order() }

// AppendSection appends a section: id, size, content.
func AppendSection(dst []byte, id SectionID, content []byte) []byte {
	dst = append(dst, byte(id))
	dst = AppendU32(dst, uint32(len(content)))
	return append(dst, content...)
}

// AppendCustomSection appends a custom section named name whose payload
// after the name is content.
func AppendCustomSection(dst []byte, name string, content []byte) []byte {
	nameLen := len(AppendU32(nil, uint32(len(name)))) + len(name)
	dst = append(dst, byte(SectionCustom))
	dst = AppendU32(dst, uint32(nameLen+len(content)))
	dst = AppendName(dst, name)
	return append(dst, content...)
}

// AppendName appends a name: its byte length, then its bytes.
func AppendName(dst []byte, s string) []byte {
	dst = AppendU32(dst, uint32(len(s)))
	return append(dst, s...)
}

// AppendFuncType appends a function type (0x60, parameters, results).
func AppendFuncType(dst []byte, t FuncType) []byte {
	dst = append(dst, 0x60)
	dst = AppendU32(dst, uint32(len(t.Params)))
	for _, v := range t.Params {
		dst = append(dst, byte(v))
	}
	dst = AppendU32(dst, uint32(len(t.Results)))
	for _, v := range t.Results {
		dst = append(dst, byte(v))
	}
	return dst
}

// AppendGlobalType appends a global type (value type, mutability).
func AppendGlobalType(dst []byte, g GlobalType) []byte {
	mut := byte(0)
	if g.Mutable {
		mut = 1
	}
	return append(dst, byte(g.Type), mut)
}

// AppendFuncImport appends an import entry of a function of type typeIdx.
func AppendFuncImport(dst []byte, module, name string, typeIdx uint32) []byte {
	dst = AppendName(dst, module)
	dst = AppendName(dst, name)
	dst = append(dst, byte(KindFunc))
	return AppendU32(dst, typeIdx)
}

// AppendExport appends an export entry.
func AppendExport(dst []byte, e Export) []byte {
	dst = AppendName(dst, e.Name)
	dst = append(dst, byte(e.Kind))
	return AppendU32(dst, e.Index)
}

// AppendElement appends an element segment in the encoding its Flags name:
// Funcs for flags 0-3, Exprs for flags 4-7 (each Expr's Bytes verbatim,
// final end included).
func AppendElement(dst []byte, e Element) []byte {
	dst = AppendU32(dst, e.Flags)
	if e.Flags&1 == 0 { // active
		if e.Flags&2 != 0 {
			dst = AppendU32(dst, e.Table)
		}
		dst = append(dst, e.Offset.Bytes...)
	}
	hasKind := e.Flags&3 != 0
	if e.Flags&4 == 0 {
		if hasKind {
			dst = append(dst, 0x00) // elemkind funcref
		}
		dst = AppendU32(dst, uint32(len(e.Funcs)))
		for _, f := range e.Funcs {
			dst = AppendU32(dst, f)
		}
		return dst
	}
	if hasKind {
		dst = append(dst, byte(e.Type))
	}
	dst = AppendU32(dst, uint32(len(e.Exprs)))
	for _, x := range e.Exprs {
		dst = append(dst, x.Bytes...)
	}
	return dst
}
