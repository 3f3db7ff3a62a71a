package wasmbin

import (
	"fmt"
	"slices"
	"strings"
)

// ValType is a value type's one-byte encoding.
type ValType byte

// Value types.
const (
	I32       ValType = 0x7f
	I64       ValType = 0x7e
	F32       ValType = 0x7d
	F64       ValType = 0x7c
	V128      ValType = 0x7b
	FuncRef   ValType = 0x70
	ExternRef ValType = 0x6f
	ExnRef    ValType = 0x69 // exception handling (try_table)
)

// String returns the text-format name ("i32", "funcref").
func (v ValType) String() string {
	switch v {
	case I32:
		return "i32"
	case I64:
		return "i64"
	case F32:
		return "f32"
	case F64:
		return "f64"
	case V128:
		return "v128"
	case FuncRef:
		return "funcref"
	case ExternRef:
		return "externref"
	case ExnRef:
		return "exnref"
	}
	return fmt.Sprintf("valtype(0x%02x)", byte(v))
}

func readValType(r *reader) (ValType, error) {
	at := r.off()
	c, err := r.byte("value type")
	if err != nil {
		return 0, err
	}
	switch v := ValType(c); v {
	case I32, I64, F32, F64, V128, FuncRef, ExternRef, ExnRef:
		return v, nil
	case 0x63, 0x64:
		return 0, errAt(at, nil, "typed function reference types (0x%02x) are not supported", c)
	}
	return 0, errAt(at, nil, "unknown value type 0x%02x", c)
}

func readRefType(r *reader) (ValType, error) {
	at := r.off()
	v, err := readValType(r)
	if err == nil && v != FuncRef && v != ExternRef && v != ExnRef {
		return 0, errAt(at, nil, "%s is not a reference type", v)
	}
	return v, err
}

// FuncType is a function signature.
type FuncType struct {
	Params, Results []ValType
}

// String renders the type the way package authors read it:
// "(i32, i64) -> i32", "() -> ()".
func (f FuncType) String() string {
	var b strings.Builder
	list := func(ts []ValType, single bool) {
		if single && len(ts) == 1 {
			b.WriteString(ts[0].String())
			return
		}
		b.WriteByte('(')
		for i, t := range ts {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString(t.String())
		}
		b.WriteByte(')')
	}
	list(f.Params, false)
	b.WriteString(" -> ")
	list(f.Results, true)
	return b.String()
}

// Equal reports whether f and g have the same parameters and results.
func (f FuncType) Equal(g FuncType) bool {
	return slices.Equal(f.Params, g.Params) && slices.Equal(f.Results, g.Results)
}

// Limits are the size bounds of a memory (in 64 KiB pages) or a table.
type Limits struct {
	Min, Max uint64
	HasMax   bool
	// Shared marks a shared memory (threads proposal).
	Shared bool
	// Is64 marks a 64-bit memory or table (memory64 proposal).
	Is64 bool
}

func readLimits(r *reader, what string) (Limits, error) {
	at := r.off()
	flags, err := r.byte(what + " limits flags")
	if err != nil {
		return Limits{}, err
	}
	if flags > 7 {
		return Limits{}, errAt(at, nil, "unknown %s limits flags 0x%02x", what, flags)
	}
	l := Limits{HasMax: flags&1 != 0, Shared: flags&2 != 0, Is64: flags&4 != 0}
	read := func(field string) (uint64, error) {
		if l.Is64 {
			return r.u64(what + " " + field)
		}
		v, err := r.u32(what + " " + field)
		return uint64(v), err
	}
	if l.Min, err = read("minimum"); err != nil {
		return l, err
	}
	if l.HasMax {
		if l.Max, err = read("maximum"); err != nil {
			return l, err
		}
	}
	return l, nil
}

// Table is a table's element type and limits.
type Table struct {
	ElemType ValType
	Limits   Limits
}

// GlobalType is a global's value type and mutability.
type GlobalType struct {
	Type    ValType
	Mutable bool
}

// Expr is a constant expression (global initialiser, segment offset,
// element item), including its final end.
type Expr struct {
	Offset int // absolute offset of the first byte
	Bytes  []byte
}

// Global is a defined global.
type Global struct {
	Type GlobalType
	Init Expr
}

// ExternKind is the kind of an import or export.
type ExternKind byte

// Import and export kinds.
const (
	KindFunc   ExternKind = 0
	KindTable  ExternKind = 1
	KindMemory ExternKind = 2
	KindGlobal ExternKind = 3
	KindTag    ExternKind = 4
)

// String returns the kind as a package author reads it ("memory").
func (k ExternKind) String() string {
	switch k {
	case KindFunc:
		return "function"
	case KindTable:
		return "table"
	case KindMemory:
		return "memory"
	case KindGlobal:
		return "global"
	case KindTag:
		return "tag"
	}
	return fmt.Sprintf("kind(0x%02x)", byte(k))
}

// Import is one import. Which of TypeIndex, Table, Memory and Global is
// meaningful depends on Kind (TypeIndex for functions and tags).
type Import struct {
	Module, Name string
	Kind         ExternKind
	TypeIndex    uint32
	Table        Table
	Memory       Limits
	Global       GlobalType
	// Offset is the absolute offset of the import entry.
	Offset int
}

// Export is one export.
type Export struct {
	Name   string
	Kind   ExternKind
	Index  uint32
	Offset int
}

// SegmentMode is how an element or data segment is used.
type SegmentMode byte

// Segment modes.
const (
	SegmentActive      SegmentMode = 0
	SegmentPassive     SegmentMode = 1
	SegmentDeclarative SegmentMode = 2
)

// Element is an element segment. Exactly one of Funcs (the index encoding,
// flags 0-3) and Exprs (the expression encoding, flags 4-7) is used; the
// fuel rewriter remaps function indices in both.
type Element struct {
	Flags  uint32
	Mode   SegmentMode
	Table  uint32
	Offset Expr // active segments only
	Type   ValType
	Funcs  []uint32
	Exprs  []Expr
	// At is the absolute offset of the segment.
	At int
}

// Data is a data segment.
type Data struct {
	Mode   SegmentMode
	Memory uint32
	Offset Expr // active segments only
	Init   []byte
	// InitOffset is the absolute offset of Init; At of the segment.
	InitOffset int
	At         int
}

// Local is a run of Count locals of one type.
type Local struct {
	Count uint32
	Type  ValType
}

// Code is one function body of the code section.
type Code struct {
	// Offset is the absolute offset of the body's size field.
	Offset int
	// BodyOffset and Body: the body after its size (locals and expression).
	BodyOffset int
	Body       []byte
	Locals     []Local
	// ExprOffset and Expr: the instructions, ending with the final end.
	ExprOffset int
	Expr       []byte
}

// Tag is an exception tag (exception-handling proposal).
type Tag struct {
	Attribute byte
	TypeIndex uint32
}
