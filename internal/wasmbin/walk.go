package wasmbin

import (
	"errors"
	"io"
)

// BlockType is a block's type as its s33 encoding: BlockEmpty (0x40), a
// negative value whose low 7 bits are a value type (a single result), or a
// non-negative type index (multi-value).
type BlockType int64

// BlockEmpty is the type of a block with no parameters and no results.
const BlockEmpty BlockType = -64

// MemArg is a load/store immediate. Memory is non-zero only with
// multi-memory (alignment flag bit 6).
type MemArg struct {
	Align  uint32
	Memory uint32
	Offset uint64
}

// CatchKind is the kind of a try_table catch clause.
type CatchKind byte

// Catch clause kinds of try_table.
const (
	CatchTag    CatchKind = 0 // catch tag label
	CatchTagRef CatchKind = 1 // catch_ref tag label
	CatchAll    CatchKind = 2 // catch_all label
	CatchAllRef CatchKind = 3 // catch_all_ref label
)

// Catch is one catch clause of try_table. Tag is unused for the catch_all
// kinds.
type Catch struct {
	Kind  CatchKind
	Tag   uint32
	Label uint32
}

// Instr is one decoded instruction. Op, Offset, Start and End are always
// set; which immediate fields are set depends on Op, and the others keep
// whatever the previous instruction left in them:
//
//   - Block: block, loop, if, try, try_table.
//   - Index: the single index immediate (label of br/br_if/rethrow/delegate/
//     br_on_null/br_on_non_null, function of call/return_call/ref.func, type
//     of call_ref/return_call_ref, local, global, table, tag of throw/catch,
//     data of data.drop, element of elem.drop, memory of memory.size/grow/
//     fill); the default label of br_table; the type of call_indirect; the
//     data segment of memory.init; the element segment of table.init; the
//     destination of memory.copy and table.copy.
//   - Index2: the table of call_indirect and table.init, the memory of
//     memory.init, the source of memory.copy and table.copy.
//   - Mem: loads, stores, SIMD memory and lane memory instructions, atomics.
//   - Lane: SIMD lane instructions.
//   - Const: i32.const (sign-extended to 64 bits), i64.const, the IEEE bits
//     of f32.const and f64.const. v128.const and i8x16.shuffle keep their 16
//     bytes in the body at [End-16, End).
//   - HeapType: ref.null.
//   - Labels (br_table targets, without the default), Catches (try_table),
//     Types (typed select): these slices are reused by the next call to
//     Next; copy them to keep them.
type Instr struct {
	Op Opcode
	// Offset is the absolute module offset of the first opcode byte.
	Offset int
	// Start and End delimit the whole encoded instruction (opcode and
	// immediates) within the walked expression: expr[Start:End].
	Start, End int

	Block    BlockType
	Index    uint32
	Index2   uint32
	Mem      MemArg
	Lane     byte
	Const    uint64
	HeapType int64
	Labels   []uint32
	Catches  []Catch
	Types    []ValType
}

// Walker decodes the instructions of an expression (a function body after
// its locals, or a constant expression) one at a time. It tracks block
// nesting so it knows which end is the final one: Next returns the final
// end like any instruction, then io.EOF; bytes after it are an error.
type Walker struct {
	r       reader
	depth   int
	done    bool
	labels  []uint32
	catches []Catch
	types   []ValType
}

// NewWalker walks expr, whose first byte is at absolute module offset base.
func NewWalker(expr []byte, base int) *Walker {
	w := &Walker{}
	w.Reset(expr, base)
	return w
}

// Reset starts walking a new expression, keeping the walker's buffers.
func (w *Walker) Reset(expr []byte, base int) {
	w.r = reader{b: expr, base: base}
	w.depth = 0
	w.done = false
}

// Next decodes the next instruction into in. It returns io.EOF after the
// final end, and an *Error for anything undecodable.
func (w *Walker) Next(in *Instr) error {
	r := &w.r
	if r.pos >= len(r.b) {
		if w.done {
			return io.EOF
		}
		return errAt(r.off(), ErrUnexpectedEnd, "the code ends without its final end instruction")
	}
	if w.done {
		return errAt(r.off(), nil, "%d bytes follow the final end instruction", r.remaining())
	}
	start := r.pos
	c := r.b[start]
	r.pos++
	// Only the fields of this opcode's shape are written (see Instr); not
	// zeroing the whole struct keeps a walk over a 15 MB module cheap.
	in.Op, in.Offset, in.Start = Opcode(c), r.base+start, start
	switch kind := singleImms[c]; kind {
	case immNone:
	case immIndex:
		if r.pos < len(r.b) && r.b[r.pos] < 0x80 {
			in.Index = uint32(r.b[r.pos])
			r.pos++
			break
		}
		fallthrough
	default:
		if c >= PrefixGC && c <= PrefixThreads {
			sub, err := r.u32("opcode")
			if err != nil {
				return err
			}
			if c == PrefixGC {
				return errAt(r.base+start, ErrUnknownOpcode, "unsupported GC-proposal instruction 0xfb 0x%x", sub)
			}
			if sub > 0xffff {
				return errAt(r.base+start, ErrUnknownOpcode, "unknown opcode 0x%02x 0x%x", c, sub)
			}
			in.Op = Opcode(c)<<16 | Opcode(sub)
			info, _ := lookupOp(in.Op)
			kind = info.imm
		}
		if err := w.immediates(in, kind); err != nil {
			if e, ok := err.(*Error); ok && !errors.Is(e, ErrUnknownOpcode) {
				e.Msg = in.Op.String() + ": " + e.Msg
			}
			return err
		}
	}
	if c <= byte(OpTryTable) {
		switch in.Op {
		case OpBlock, OpLoop, OpIf, OpTry, OpTryTable:
			w.depth++
		case OpEnd:
			if w.depth == 0 {
				w.done = true
			} else {
				w.depth--
			}
		case OpDelegate:
			// delegate closes its try block the way end does.
			if w.depth == 0 {
				return errAt(in.Offset, nil, "delegate outside a try block")
			}
			w.depth--
		}
	}
	in.End = r.pos
	return nil
}

// singleImms is the immediate shape of each single-byte opcode, the table
// the walker's hot path reads; the prefixes are marked so they take the
// slow path.
var singleImms = func() (t [256]imm) {
	for i, info := range singleOps {
		t[i] = info.imm
	}
	for _, p := range []byte{PrefixGC, PrefixMisc, PrefixSIMD, PrefixThreads} {
		t[p] = immPrefixed
	}
	return t
}()

func (w *Walker) immediates(in *Instr, kind imm) error {
	r := &w.r
	var err error
	switch kind {
	case immNone, immPrefixed:
	case immIndex:
		in.Index, err = r.u32("immediate")
	case immIndex2:
		if in.Index, err = r.u32("immediate"); err == nil {
			in.Index2, err = r.u32("immediate")
		}
	case immBlock:
		var v int64
		v, err = r.s33("block type")
		in.Block = BlockType(v)
	case immMemArg:
		err = w.memArg(in)
	case immMemLane:
		if err = w.memArg(in); err == nil {
			in.Lane, err = r.byte("lane index")
		}
	case immLane:
		in.Lane, err = r.byte("lane index")
	case immI32:
		v, n, e := readSigned(r.b[r.pos:], 32)
		if e != nil {
			return r.lebErr(e, "i32.const immediate")
		}
		r.pos += n
		in.Const = uint64(v)
	case immI64:
		v, n, e := readSigned(r.b[r.pos:], 64)
		if e != nil {
			return r.lebErr(e, "i64.const immediate")
		}
		r.pos += n
		in.Const = uint64(v)
	case immF32:
		var b []byte
		if b, err = r.bytes(4, "f32.const immediate"); err == nil {
			in.Const = uint64(b[0]) | uint64(b[1])<<8 | uint64(b[2])<<16 | uint64(b[3])<<24
		}
	case immF64:
		var b []byte
		if b, err = r.bytes(8, "f64.const immediate"); err == nil {
			for i := 7; i >= 0; i-- {
				in.Const = in.Const<<8 | uint64(b[i])
			}
		}
	case immV128:
		_, err = r.bytes(16, "immediate")
	case immBrTable:
		var n int
		if n, err = r.count("br_table label", 1); err != nil {
			return err
		}
		w.labels = w.labels[:0]
		for i := 0; i < n; i++ {
			l, err := r.u32("br_table label")
			if err != nil {
				return err
			}
			w.labels = append(w.labels, l)
		}
		in.Labels = w.labels
		in.Index, err = r.u32("br_table default label")
	case immSelectT:
		var n int
		if n, err = r.count("select type", 1); err != nil {
			return err
		}
		w.types = w.types[:0]
		for i := 0; i < n; i++ {
			t, err := readValType(r)
			if err != nil {
				return err
			}
			w.types = append(w.types, t)
		}
		in.Types = w.types
	case immTryTable:
		var v int64
		if v, err = r.s33("block type"); err != nil {
			return err
		}
		in.Block = BlockType(v)
		var n int
		if n, err = r.count("try_table catch", 2); err != nil {
			return err
		}
		w.catches = w.catches[:0]
		for i := 0; i < n; i++ {
			at := r.off()
			k, err := r.byte("catch kind")
			if err != nil {
				return err
			}
			ct := Catch{Kind: CatchKind(k)}
			switch ct.Kind {
			case CatchTag, CatchTagRef:
				if ct.Tag, err = r.u32("catch tag"); err != nil {
					return err
				}
			case CatchAll, CatchAllRef:
			default:
				return errAt(at, nil, "unknown try_table catch kind 0x%02x", k)
			}
			if ct.Label, err = r.u32("catch label"); err != nil {
				return err
			}
			w.catches = append(w.catches, ct)
		}
		in.Catches = w.catches
	case immHeapType:
		in.HeapType, err = r.s33("heap type")
	case immZeroByte:
		var b byte
		at := r.off()
		if b, err = r.byte("immediate"); err == nil && b != 0 {
			return errAt(at, nil, "immediate must be 0x00, found 0x%02x", b)
		}
	default:
		if p := in.Op.Prefix(); p != 0 {
			return errAt(in.Offset, ErrUnknownOpcode, "unknown opcode 0x%02x 0x%x", p, in.Op.Sub())
		}
		return errAt(in.Offset, ErrUnknownOpcode, "unknown opcode 0x%02x", byte(in.Op))
	}
	return err
}

func (w *Walker) memArg(in *Instr) error {
	r := &w.r
	// Fast path: one-byte alignment (no memory index) and one-byte offset,
	// the shape of nearly every load and store.
	if p := r.pos; p+1 < len(r.b) && r.b[p] < 0x40 && r.b[p+1] < 0x80 {
		in.Mem = MemArg{Align: uint32(r.b[p]), Offset: uint64(r.b[p+1])}
		r.pos += 2
		return nil
	}
	in.Mem.Memory = 0
	a, err := r.u32("memory alignment")
	if err != nil {
		return err
	}
	if a&0x40 != 0 {
		a &^= 0x40
		if in.Mem.Memory, err = r.u32("memory index"); err != nil {
			return err
		}
	}
	in.Mem.Align = a
	in.Mem.Offset, err = r.u64("memory offset")
	return err
}
