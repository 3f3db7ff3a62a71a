package wasmbin

// MaxFunctionLocals is the most locals one function may declare, as in V8
// and SpiderMonkey. Compilers allocate per declared local, so an
// unbounded count in a few bytes of LEB128 would let a module make the
// host allocate gigabytes before any check of the body.
const MaxFunctionLocals = 50_000

// Implementation limits of the decoder, the embedder limits of the
// WebAssembly JS API (which V8 and SpiderMonkey enforce) where it has one.
// Each bounds a vector whose entries the decoder (and later the compiler
// and every instance) expands to many times their encoded size: a 64 MiB
// module of 2-byte data segments would otherwise cost gigabytes of host
// memory before any check could look at it. Real toolchains stay orders of
// magnitude below them; the upload checks (internal/modcheck) apply the
// tighter, configurable limits of package limits on top.
const (
	MaxTypes           = 1_000_000
	MaxImports         = 100_000
	MaxExports         = 100_000
	MaxFunctions       = 1_000_000
	MaxTables          = 100_000
	MaxMemories        = 100
	MaxTags            = 1_000_000
	MaxGlobals         = 1_000_000
	MaxElementSegments = 100_000
	// MaxElementEntries bounds the entries of all element segments together.
	MaxElementEntries = 10_000_000
	MaxDataSegments   = 100_000
)

// Module is a decoded module. Function bodies are split into locals and
// expression but their instructions are not decoded: walk them with a
// Walker.
type Module struct {
	Header   Header
	Sections []Section

	Types     []FuncType
	Imports   []Import
	Functions []uint32 // type index of each defined function
	Tables    []Table
	Memories  []Limits
	Tags      []Tag
	Globals   []Global
	Exports   []Export
	Start     uint32
	HasStart  bool
	Elements  []Element
	DataCount uint32
	// HasDataCount reports whether a data count section is present.
	HasDataCount bool
	Codes        []Code
	Data         []Data
}

// NumImported counts the imports of one kind; in each index space the
// imported items come first.
func (m *Module) NumImported(kind ExternKind) int {
	n := 0
	for i := range m.Imports {
		if m.Imports[i].Kind == kind {
			n++
		}
	}
	return n
}

// FuncTypeIndex returns the type index of function idx in the function index
// space (imports first, then defined functions).
func (m *Module) FuncTypeIndex(idx uint32) (uint32, bool) {
	for i := range m.Imports {
		if m.Imports[i].Kind != KindFunc {
			continue
		}
		if idx == 0 {
			return m.Imports[i].TypeIndex, true
		}
		idx--
	}
	if uint64(idx) < uint64(len(m.Functions)) {
		return m.Functions[idx], true
	}
	return 0, false
}

// FuncType returns the signature of function idx in the function index
// space.
func (m *Module) FuncType(idx uint32) (FuncType, bool) {
	t, ok := m.FuncTypeIndex(idx)
	if !ok || uint64(t) >= uint64(len(m.Types)) {
		return FuncType{}, false
	}
	return m.Types[t], true
}

// CustomSection returns the first custom section with the given name.
func (m *Module) CustomSection(name string) (Section, bool) {
	for _, s := range m.Sections {
		if s.ID == SectionCustom && s.Name == name {
			return s, true
		}
	}
	return Section{}, false
}

// Decode decodes the header and every section of b. It checks the
// structure (sizes, section order, vector lengths, counts of functions and
// bodies, constant-expression shape) but not types. The returned module
// aliases b.
func Decode(b []byte) (*Module, error) {
	h, err := ParseHeader(b)
	if err != nil {
		return nil, err
	}
	secs, err := ReadSections(b)
	if err != nil {
		return nil, err
	}
	m := &Module{Header: h, Sections: secs}
	last := 0
	for i := range secs {
		s := &secs[i]
		if s.ID == SectionCustom {
			continue
		}
		if o := s.ID.order(); o <= last {
			return nil, errAt(s.Offset, nil, "%s section is out of order or repeated", s.ID)
		} else {
			last = o
		}
		r := &reader{b: s.Content, base: s.ContentOffset}
		if err := m.decodeSection(s.ID, r); err != nil {
			return nil, err
		}
		if r.remaining() != 0 {
			return nil, errAt(r.off(), nil, "%s section has %d bytes after its last entry", s.ID, r.remaining())
		}
	}
	if len(m.Functions) != len(m.Codes) {
		return nil, errAt(len(b), nil, "the function section declares %d functions but the code section has %d bodies", len(m.Functions), len(m.Codes))
	}
	if m.HasDataCount && uint64(m.DataCount) != uint64(len(m.Data)) {
		return nil, errAt(len(b), nil, "the data count section says %d segments but the module has %d", m.DataCount, len(m.Data))
	}
	return m, nil
}

func (m *Module) decodeSection(id SectionID, r *reader) error {
	switch id {
	case SectionType:
		return m.decodeTypes(r)
	case SectionImport:
		return m.decodeImports(r)
	case SectionFunction:
		n, err := r.countMax("function", 1, MaxFunctions)
		if err != nil {
			return err
		}
		m.Functions = make([]uint32, n)
		for i := range m.Functions {
			if m.Functions[i], err = r.u32("function type index"); err != nil {
				return err
			}
		}
	case SectionTable:
		n, err := r.countMax("table", 3, MaxTables)
		if err != nil {
			return err
		}
		m.Tables = make([]Table, n)
		for i := range m.Tables {
			if m.Tables[i], err = readTable(r); err != nil {
				return err
			}
		}
	case SectionMemory:
		n, err := r.countMax("memory", 2, MaxMemories)
		if err != nil {
			return err
		}
		m.Memories = make([]Limits, n)
		for i := range m.Memories {
			if m.Memories[i], err = readLimits(r, "memory"); err != nil {
				return err
			}
		}
	case SectionTag:
		n, err := r.countMax("tag", 2, MaxTags)
		if err != nil {
			return err
		}
		m.Tags = make([]Tag, n)
		for i := range m.Tags {
			if m.Tags[i], err = readTag(r); err != nil {
				return err
			}
		}
	case SectionGlobal:
		n, err := r.countMax("global", 3, MaxGlobals)
		if err != nil {
			return err
		}
		m.Globals = make([]Global, n)
		for i := range m.Globals {
			g := &m.Globals[i]
			if g.Type, err = readGlobalType(r); err != nil {
				return err
			}
			if g.Init, err = readExpr(r); err != nil {
				return err
			}
		}
	case SectionExport:
		return m.decodeExports(r)
	case SectionStart:
		var err error
		m.Start, err = r.u32("start function index")
		m.HasStart = err == nil
		return err
	case SectionElement:
		return m.decodeElements(r)
	case SectionDataCount:
		var err error
		m.DataCount, err = r.u32("data count")
		m.HasDataCount = err == nil
		return err
	case SectionCode:
		return m.decodeCodes(r)
	case SectionData:
		return m.decodeData(r)
	}
	return nil
}

func (m *Module) decodeTypes(r *reader) error {
	n, err := r.countMax("type", 3, MaxTypes)
	if err != nil {
		return err
	}
	m.Types = make([]FuncType, n)
	for i := range m.Types {
		at := r.off()
		form, err := r.byte("type form")
		if err != nil {
			return err
		}
		switch form {
		case 0x60:
		case 0x4e, 0x4f, 0x50, 0x5e, 0x5f:
			return errAt(at, nil, "GC-proposal type definition 0x%02x is not supported", form)
		default:
			return errAt(at, nil, "type %d: expected a function type (0x60), found 0x%02x", i, form)
		}
		t := &m.Types[i]
		if t.Params, err = readValTypes(r, "parameter"); err != nil {
			return err
		}
		if t.Results, err = readValTypes(r, "result"); err != nil {
			return err
		}
	}
	return nil
}

func readValTypes(r *reader, what string) ([]ValType, error) {
	n, err := r.count(what, 1)
	if err != nil || n == 0 {
		return nil, err
	}
	ts := make([]ValType, n)
	for i := range ts {
		if ts[i], err = readValType(r); err != nil {
			return nil, err
		}
	}
	return ts, nil
}

func readTable(r *reader) (Table, error) {
	at := r.off()
	if r.remaining() > 0 && r.b[r.pos] == 0x40 {
		return Table{}, errAt(at, nil, "tables with initialiser expressions (0x40) are not supported")
	}
	t, err := readRefType(r)
	if err != nil {
		return Table{}, err
	}
	l, err := readLimits(r, "table")
	return Table{ElemType: t, Limits: l}, err
}

func readGlobalType(r *reader) (GlobalType, error) {
	t, err := readValType(r)
	if err != nil {
		return GlobalType{}, err
	}
	at := r.off()
	mut, err := r.byte("global mutability")
	if err != nil {
		return GlobalType{}, err
	}
	if mut > 1 {
		return GlobalType{}, errAt(at, nil, "bad global mutability 0x%02x", mut)
	}
	return GlobalType{Type: t, Mutable: mut == 1}, nil
}

func readTag(r *reader) (Tag, error) {
	at := r.off()
	a, err := r.byte("tag attribute")
	if err != nil {
		return Tag{}, err
	}
	if a != 0 {
		return Tag{}, errAt(at, nil, "bad tag attribute 0x%02x", a)
	}
	t, err := r.u32("tag type index")
	return Tag{Attribute: a, TypeIndex: t}, err
}

// readExpr reads a constant expression through its final end.
func readExpr(r *reader) (Expr, error) {
	start := r.pos
	// Fast path for the usual segment offset, `i32.const n end`: Go modules
	// have tens of thousands of data segments.
	if b := r.b[start:]; len(b) >= 3 && b[0] == byte(OpI32Const) {
		if _, n, err := readSigned(b[1:], 32); err == nil && 1+n < len(b) && b[1+n] == byte(OpEnd) {
			r.pos += n + 2
			return Expr{Offset: r.base + start, Bytes: r.b[start:r.pos:r.pos]}, nil
		}
	}
	w := Walker{r: reader{b: r.b[:len(r.b):len(r.b)], pos: r.pos, base: r.base}}
	var in Instr
	for {
		err := w.Next(&in)
		if err != nil {
			return Expr{}, err
		}
		if w.done {
			break
		}
	}
	r.pos = w.r.pos
	return Expr{Offset: r.base + start, Bytes: r.b[start:r.pos:r.pos]}, nil
}

func (m *Module) decodeImports(r *reader) error {
	n, err := r.countMax("import", 4, MaxImports)
	if err != nil {
		return err
	}
	m.Imports = make([]Import, n)
	for i := range m.Imports {
		im := &m.Imports[i]
		im.Offset = r.off()
		if im.Module, err = r.name("import module name"); err != nil {
			return err
		}
		if im.Name, err = r.name("import name"); err != nil {
			return err
		}
		at := r.off()
		k, err := r.byte("import kind")
		if err != nil {
			return err
		}
		im.Kind = ExternKind(k)
		switch im.Kind {
		case KindFunc:
			im.TypeIndex, err = r.u32("import type index")
		case KindTable:
			im.Table, err = readTable(r)
		case KindMemory:
			im.Memory, err = readLimits(r, "memory")
		case KindGlobal:
			im.Global, err = readGlobalType(r)
		case KindTag:
			var t Tag
			t, err = readTag(r)
			im.TypeIndex = t.TypeIndex
		default:
			return errAt(at, nil, "import %q.%q has unknown kind 0x%02x", im.Module, im.Name, k)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

func (m *Module) decodeExports(r *reader) error {
	n, err := r.countMax("export", 3, MaxExports)
	if err != nil {
		return err
	}
	m.Exports = make([]Export, n)
	for i := range m.Exports {
		e := &m.Exports[i]
		e.Offset = r.off()
		if e.Name, err = r.name("export name"); err != nil {
			return err
		}
		at := r.off()
		k, err := r.byte("export kind")
		if err != nil {
			return err
		}
		if k > byte(KindTag) {
			return errAt(at, nil, "export %q has unknown kind 0x%02x", e.Name, k)
		}
		e.Kind = ExternKind(k)
		if e.Index, err = r.u32("export index"); err != nil {
			return err
		}
	}
	return nil
}

func (m *Module) decodeElements(r *reader) error {
	n, err := r.countMax("element segment", 2, MaxElementSegments)
	if err != nil {
		return err
	}
	m.Elements = make([]Element, n)
	entries := 0 // in the segments before this one
	for i := range m.Elements {
		e := &m.Elements[i]
		e.At = r.off()
		if e.Flags, err = r.u32("element segment flags"); err != nil {
			return err
		}
		if e.Flags > 7 {
			return errAt(e.At, nil, "element segment %d has unknown flags %d", i, e.Flags)
		}
		e.Type = FuncRef
		switch {
		case e.Flags&1 == 0:
			e.Mode = SegmentActive
			if e.Flags&2 != 0 {
				if e.Table, err = r.u32("element table index"); err != nil {
					return err
				}
			}
			if e.Offset, err = readExpr(r); err != nil {
				return err
			}
		case e.Flags&2 == 0:
			e.Mode = SegmentPassive
		default:
			e.Mode = SegmentDeclarative
		}
		// Flags 0 and 4 have no element kind / type byte; the others do.
		hasKind := e.Flags&3 != 0
		if e.Flags&4 == 0 {
			if hasKind {
				at := r.off()
				k, err := r.byte("element kind")
				if err != nil {
					return err
				}
				if k != 0 {
					return errAt(at, nil, "unknown element kind 0x%02x", k)
				}
			}
			cnt, err := r.countMax("element function index", 1, MaxElementEntries-entries)
			if err != nil {
				return err
			}
			entries += cnt
			e.Funcs = make([]uint32, cnt)
			for j := range e.Funcs {
				if e.Funcs[j], err = r.u32("element function index"); err != nil {
					return err
				}
			}
			continue
		}
		if hasKind {
			if e.Type, err = readRefType(r); err != nil {
				return err
			}
		}
		cnt, err := r.countMax("element expression", 2, MaxElementEntries-entries)
		if err != nil {
			return err
		}
		entries += cnt
		e.Exprs = make([]Expr, cnt)
		for j := range e.Exprs {
			if e.Exprs[j], err = readExpr(r); err != nil {
				return err
			}
		}
	}
	return nil
}

func (m *Module) decodeCodes(r *reader) error {
	n, err := r.countMax("function body", 2, MaxFunctions)
	if err != nil {
		return err
	}
	m.Codes = make([]Code, n)
	for i := range m.Codes {
		c := &m.Codes[i]
		c.Offset = r.off()
		size, err := r.u32("function body size")
		if err != nil {
			return err
		}
		c.BodyOffset = r.off()
		if c.Body, err = r.bytes(int(size), "function body"); err != nil {
			return errAt(c.Offset, ErrUnexpectedEnd, "function body %d of %d bytes runs past the end of the code section", i, size)
		}
		br := &reader{b: c.Body, base: c.BodyOffset}
		groups, err := br.count("local", 2)
		if err != nil {
			return err
		}
		if groups > 0 {
			c.Locals = make([]Local, groups)
		}
		var total uint64
		for j := range c.Locals {
			if c.Locals[j].Count, err = br.u32("local count"); err != nil {
				return err
			}
			total += uint64(c.Locals[j].Count)
			if total > MaxFunctionLocals {
				return errAt(br.off(), nil, "function body %d declares %d or more locals, more than the %d a function may have", i, total, MaxFunctionLocals)
			}
			if c.Locals[j].Type, err = readValType(br); err != nil {
				return err
			}
		}
		c.ExprOffset = br.off()
		c.Expr = c.Body[br.pos:]
		if len(c.Expr) == 0 {
			return errAt(c.ExprOffset, ErrUnexpectedEnd, "function body %d has no instructions (not even end)", i)
		}
	}
	return nil
}

func (m *Module) decodeData(r *reader) error {
	n, err := r.countMax("data segment", 2, MaxDataSegments)
	if err != nil {
		return err
	}
	m.Data = make([]Data, n)
	for i := range m.Data {
		d := &m.Data[i]
		d.At = r.off()
		flags, err := r.u32("data segment flags")
		if err != nil {
			return err
		}
		switch flags {
		case 0, 2:
			if flags == 2 {
				if d.Memory, err = r.u32("data memory index"); err != nil {
					return err
				}
			}
			if d.Offset, err = readExpr(r); err != nil {
				return err
			}
		case 1:
			d.Mode = SegmentPassive
		default:
			return errAt(d.At, nil, "data segment %d has unknown flags %d", i, flags)
		}
		size, err := r.u32("data segment size")
		if err != nil {
			return err
		}
		d.InitOffset = r.off()
		if d.Init, err = r.bytes(int(size), "data segment"); err != nil {
			return errAt(d.At, ErrUnexpectedEnd, "data segment %d of %d bytes runs past the end of the data section", i, size)
		}
	}
	return nil
}
