package wasmbin

import (
	"bytes"
	"unicode/utf8"
)

// The name section's subsections the engine (wazero 1.12) decodes; it
// skips the others by their size.
const (
	nameModule    = 0
	nameFunctions = 1
	nameLocals    = 2
)

// CheckNameSection checks the content of a "name" custom section
// (Section.Content; base is Section.ContentOffset) the way an engine that
// decodes it needs it to be: every subsection inside the section, and in
// the module name (0), function names (1) and local names (2) every
// count no larger than the bytes left can hold, every name inside its
// length and valid UTF-8, and each subsection read to its last byte.
//
// wazero decodes these three subsections trusting their counts: it makes
// a slice of the count as written before reading one entry, so a count of
// 0xFFFFFFFF in a 64-byte module asks for 103 GB and the Go runtime ends
// the process (not a panic: nothing recovers it). What the engine is
// given is reduced by EngineNames as well; this check is what turns a
// malformed name section into an invalid_module rejection, as wazero's
// own decoder did for one whose counts were small.
func CheckNameSection(content []byte, base int) error {
	r := &reader{b: content, base: base}
	for r.remaining() > 0 {
		id, _ := r.byte("name subsection id")
		size, err := r.u32("name subsection size")
		if err != nil {
			return err
		}
		at := r.off()
		body, err := r.bytes(int(size), "name subsection")
		if int(size) < 0 || err != nil {
			return errAt(at, ErrUnexpectedEnd, "name subsection %d of %d bytes runs past the end of the name section (%d bytes left)", id, size, r.remaining())
		}
		sr := &reader{b: body, base: at}
		switch id {
		case nameModule:
			err = skipNameBytes(sr, "module name")
		case nameFunctions:
			err = skipNameMap(sr, "function name")
		case nameLocals:
			err = skipIndirectNameMap(sr)
		default:
			continue // the engine skips it by its size, as the spec says
		}
		if err != nil {
			return err
		}
		if sr.remaining() != 0 {
			return errAt(sr.off(), nil, "name subsection %d has %d bytes after its last entry", id, sr.remaining())
		}
	}
	return nil
}

// skipNameBytes reads a name (its length, then its bytes) without copying
// it.
func skipNameBytes(r *reader, what string) error {
	at := r.off()
	n, err := r.u32(what + " length")
	if err != nil {
		return err
	}
	b, err := r.bytes(int(n), what)
	if int(n) < 0 || err != nil {
		return errAt(at, ErrUnexpectedEnd, "%s length %d runs past the end of its subsection", what, n)
	}
	if !utf8.Valid(b) {
		return errAt(at, nil, "%s is not valid UTF-8", what)
	}
	return nil
}

// skipNameMap reads a name map: a count, then (index, name) pairs of at
// least two bytes each.
func skipNameMap(r *reader, what string) error {
	n, err := r.count(what, 2)
	if err != nil {
		return err
	}
	for range n {
		if _, err := r.u32(what + " index"); err != nil {
			return err
		}
		if err := skipNameBytes(r, what); err != nil {
			return err
		}
	}
	return nil
}

// skipIndirectNameMap reads the local names: a count, then (function
// index, name map) pairs of at least two bytes each.
func skipIndirectNameMap(r *reader) error {
	n, err := r.count("local names function", 2)
	if err != nil {
		return err
	}
	for range n {
		if _, err := r.u32("local names function index"); err != nil {
			return err
		}
		if err := skipNameMap(r, "local name"); err != nil {
			return err
		}
	}
	return nil
}

// EngineNames returns module as an engine should be given it: its name
// section without its local names, and with its module name and function
// names only when they are well formed (the function names also only
// when they name functions the module has in increasing order of function
// index, as the spec requires); a second name section dropped;
// everything else as it is. The result is
// module itself when nothing needs changing (a toolchain's name section
// of function names: the Go SDK module's 436 KB one), so the compilation
// cache's key for it stays the module's. A module whose sections do not
// split is an error.
//
// Why keep no more: wazero 1.12 decodes the module name, function names
// and local names, trusting each count (CheckNameSection), and holds what
// it decoded for the compiled module's life (24 bytes and more an entry);
// the local names are never used by the runtime, and a well-formed local
// names subsection of 16.7 million empty entries (32 MiB) cost 1.2 GB
// and 4.7 s to decode. Function names are bounded by the function count
// (limits.Structure.Functions) and name the functions of a trap's stack
// trace. wazero skips other custom sections, reading nothing into memory,
// when its DWARF reader is off, as the runtime's configurations have it.
func EngineNames(module []byte) ([]byte, error) {
	secs, err := ReadSections(module)
	if err != nil {
		return nil, err
	}
	first := -1
	var names []byte
	for i, s := range secs {
		if s.ID != SectionCustom || s.Name != "name" {
			continue
		}
		if first >= 0 {
			return rebuild(module, secs, first, names), nil // a second name section
		}
		first = i
		names = engineNameContent(s.Content, s.ContentOffset, functionCount(secs))
	}
	if first < 0 || bytes.Equal(names, secs[first].Content) && names != nil {
		return module, nil
	}
	return rebuild(module, secs, first, names), nil
}

// rebuild copies module with the content of its name section secs[first]
// replaced by names (the section dropped when names is nil) and every
// later name section dropped.
func rebuild(module []byte, secs []Section, first int, names []byte) []byte {
	out := make([]byte, 0, len(module))
	out = append(out, module[:HeaderSize]...)
	for i, s := range secs {
		switch {
		case i == first:
			if names != nil {
				out = AppendCustomSection(out, "name", names)
			}
		case s.ID == SectionCustom && s.Name == "name":
		default:
			out = append(out, module[s.Offset:s.End]...)
		}
	}
	return out
}

// functionCount is the size of the function index space: the imported
// functions and the function section's count. A section that does not
// read counts as empty (the module is refused elsewhere).
func functionCount(secs []Section) uint64 {
	var n uint64
	for _, s := range secs {
		r := &reader{b: s.Content, base: s.ContentOffset}
		switch s.ID {
		case SectionImport:
			m := &Module{}
			if m.decodeImports(r) == nil {
				n += uint64(m.NumImported(KindFunc))
			}
		case SectionFunction:
			if c, err := r.u32("function count"); err == nil {
				n += uint64(c)
			}
		}
	}
	return n
}

// engineNameContent is EngineNames' name section content: the
// subsections of content in their order, but the local names (dropped),
// and the module name and function names only when well formed (the
// function names also only in increasing index order below functions;
// of each, the first). Subsections the engine skips by their size are
// kept, so that a toolchain's section (Rust's names its globals and data
// too) comes back whole. It is nil when nothing is kept.
func engineNameContent(content []byte, base int, functions uint64) []byte {
	out := make([]byte, 0, len(content))
	var haveModule, haveFuncs bool
	r := &reader{b: content, base: base}
	for r.remaining() > 0 {
		start := r.pos
		id, _ := r.byte("name subsection id")
		size, err := r.u32("name subsection size")
		if err != nil {
			break
		}
		body, err := r.bytes(int(size), "name subsection")
		if int(size) < 0 || err != nil {
			break
		}
		sr := &reader{b: body}
		keep := false
		switch id {
		case nameModule:
			keep = !haveModule && skipNameBytes(sr, "module name") == nil && sr.remaining() == 0
			haveModule = haveModule || keep
		case nameFunctions:
			keep = !haveFuncs && ascendingNames(sr, functions) && sr.remaining() == 0
			haveFuncs = haveFuncs || keep
		case nameLocals:
			// Nothing in the runtime reads them.
		default:
			keep = true // the engine skips it by its size
		}
		if keep {
			out = append(out, content[start:r.pos]...)
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// ascendingNames reads a name map and reports whether it is well formed
// with indices strictly increasing and below limit.
func ascendingNames(r *reader, limit uint64) bool {
	n, err := r.count("function name", 2)
	if err != nil || uint64(n) > limit {
		return false
	}
	next := uint64(0) // the least index the next entry may have
	for range n {
		idx, err := r.u32("function name index")
		if err != nil || uint64(idx) < next || uint64(idx) >= limit {
			return false
		}
		next = uint64(idx) + 1
		if skipNameBytes(r, "function name") != nil {
			return false
		}
	}
	return true
}
