package wasmbin

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

const checksDir = "../../testdata/checks"

func readFixture(t testing.TB, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestParseHeaderClassifiesBinaries(t *testing.T) {
	tests := []struct {
		name    string
		in      []byte
		want    error
		wantErr bool
	}{
		{"core module", []byte("\x00asm\x01\x00\x00\x00"), nil, false},
		{"empty", nil, ErrNotWasm, true},
		{"text", []byte("hello world"), ErrNotWasm, true},
		{"magic prefix only", []byte("\x00as"), ErrNotWasm, true},
		{"truncated version", []byte("\x00asm\x01\x00"), ErrNotWasm, true},
		{"component", []byte("\x00asm\x0d\x00\x01\x00"), ErrComponent, true},
		{"future component version", []byte("\x00asm\x0e\x00\x01\x00"), ErrComponent, true},
		{"core version 2", []byte("\x00asm\x02\x00\x00\x00"), nil, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseHeader(tt.in)
			if (err != nil) != tt.wantErr || (tt.want != nil && !errors.Is(err, tt.want)) {
				t.Fatalf("ParseHeader = %v, want %v (error: %v)", err, tt.want, tt.wantErr)
			}
			if tt.want == nil && tt.wantErr && (errors.Is(err, ErrNotWasm) || errors.Is(err, ErrComponent)) {
				t.Fatalf("unsupported version classified as %v", err)
			}
		})
	}
}

func TestReadSectionsGivesOffsetsAndCustomNames(t *testing.T) {
	b := readFixture(t, filepath.Join(checksDir, "threads_c.wasm"))
	secs, err := ReadSections(b)
	if err != nil {
		t.Fatal(err)
	}
	// wasm-objdump -h: Type start=0xa (content), Code start=0x6e, customs last.
	if secs[0].ID != SectionType || secs[0].Offset != 8 || secs[0].ContentOffset != 0xa {
		t.Errorf("first section = %v at %#x content %#x", secs[0].ID, secs[0].Offset, secs[0].ContentOffset)
	}
	var names []string
	for _, s := range secs {
		if !bytes.Equal(b[s.ContentOffset:s.End], s.Content) {
			t.Errorf("%v: Content does not match b[ContentOffset:End]", s.ID)
		}
		if s.ID == SectionCode && s.ContentOffset != 0x6e {
			t.Errorf("code content at %#x, want 0x6e", s.ContentOffset)
		}
		if s.ID == SectionCustom {
			names = append(names, s.Name)
		}
	}
	if got := strings.Join(names, ","); got != "producers,target_features" {
		t.Errorf("custom sections %q", got)
	}
	if last := secs[len(secs)-1]; last.End != len(b) {
		t.Errorf("last section ends at %d of %d", last.End, len(b))
	}
}

func TestDecodeRealModules(t *testing.T) {
	b := readFixture(t, filepath.Join(checksDir, "threads_c.wasm"))
	m, err := Decode(b)
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Imports) != 1 || m.Imports[0].Module != "wasi_snapshot_preview1" || m.Imports[0].Name != "fd_write" {
		t.Fatalf("imports %+v", m.Imports)
	}
	if ft, _ := m.FuncType(0); ft.String() != "(i32, i32, i32, i32) -> i32" {
		t.Errorf("fd_write type %s", ft)
	}
	if len(m.Memories) != 1 || !m.Memories[0].Shared || m.Memories[0].Min != 2 || !m.Memories[0].HasMax {
		t.Errorf("memory %+v", m.Memories)
	}
	if !m.HasStart || m.Start != 1 || !m.HasDataCount || m.DataCount != 1 || len(m.Data) != 1 || m.Data[0].Mode != SegmentPassive {
		t.Errorf("start %v/%d, data count %v/%d, data %+v", m.HasStart, m.Start, m.HasDataCount, m.DataCount, m.Data)
	}
	if ft, _ := m.FuncType(2); ft.String() != "() -> ()" {
		t.Errorf("_start type %s", ft)
	}

	legacy, err := Decode(readFixture(t, filepath.Join(checksDir, "exceptions_legacy.wasm")))
	if err != nil {
		t.Fatal(err)
	}
	if len(legacy.Tags) != 1 || legacy.Tags[0].TypeIndex != 0 {
		t.Errorf("tags %+v", legacy.Tags)
	}

	c, err := Decode(readFixture(t, filepath.Join(checksDir, "reactor_c.wasm")))
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Elements) != 1 || c.Elements[0].Mode != SegmentActive || len(c.Elements[0].Funcs) != 4 {
		t.Errorf("elements %+v", c.Elements)
	}
	if len(c.Globals) == 0 || !c.Globals[0].Type.Mutable {
		t.Errorf("globals %+v", c.Globals)
	}
}

// walkAll lists "offset name" for every instruction of every body, the
// format of the golden files (wasm-objdump -d).
func walkAll(t testing.TB, b []byte) []string {
	m, err := Decode(b)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	var in Instr
	w := NewWalker(nil, 0)
	for _, c := range m.Codes {
		w.Reset(c.Expr, c.ExprOffset)
		for {
			err := w.Next(&in)
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(c.Expr[in.Start:in.End], b[in.Offset:in.Offset+in.End-in.Start]) {
				t.Fatalf("%s at %#x: Start/End disagree with Offset", in.Op, in.Offset)
			}
			out = append(out, fmt.Sprintf("%06x %s", in.Offset, in.Op))
		}
		if w.Depth() != 0 {
			t.Fatalf("depth %d after a body", w.Depth())
		}
	}
	return out
}

func TestWalkerMatchesWabtListing(t *testing.T) {
	for _, name := range []string{"walk_all", "walk_simd"} {
		t.Run(name, func(t *testing.T) {
			got := walkAll(t, readFixture(t, filepath.Join("testdata", name+".wasm")))
			f, err := os.Open(filepath.Join("testdata", name+".golden"))
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			var want []string
			for s := bufio.NewScanner(f); s.Scan(); {
				want = append(want, s.Text())
			}
			if len(got) != len(want) {
				t.Fatalf("%d instructions, golden has %d", len(got), len(want))
			}
			for i := range want {
				if got[i] != want[i] {
					t.Fatalf("instruction %d: got %q, want %q", i, got[i], want[i])
				}
			}
		})
	}
}

func TestWalkerDecodesImmediates(t *testing.T) {
	tests := []struct {
		name  string
		expr  []byte
		check func(in Instr) bool
	}{
		{"call", []byte{0x10, 0xe5, 0x8e, 0x26}, func(in Instr) bool { return in.Op == OpCall && in.Index == 624485 }},
		{"return_call", []byte{0x12, 0x05}, func(in Instr) bool { return in.Op == OpReturnCall && in.Index == 5 }},
		{"call_indirect", []byte{0x11, 0x02, 0x01}, func(in Instr) bool { return in.Index == 2 && in.Index2 == 1 }},
		{"i32.const -1", []byte{0x41, 0x7f}, func(in Instr) bool { return int64(in.Const) == -1 }},
		{"i64.const", []byte{0x42, 0x80, 0x01}, func(in Instr) bool { return in.Const == 128 }},
		{"f64.const 1.5", []byte{0x44, 0, 0, 0, 0, 0, 0, 0xf8, 0x3f}, func(in Instr) bool { return in.Const == 0x3ff8000000000000 }},
		{"block i32", []byte{0x02, 0x7f}, func(in Instr) bool { v, ok := in.Block.ValType(); return ok && v == I32 }},
		{"block type index", []byte{0x02, 0x03}, func(in Instr) bool { i, ok := in.Block.TypeIndex(); return ok && i == 3 }},
		{"block empty", []byte{0x03, 0x40}, func(in Instr) bool { return in.Op == OpLoop && in.Block == BlockEmpty }},
		{"br_table", []byte{0x0e, 0x02, 0x00, 0x01, 0x02}, func(in Instr) bool {
			return len(in.Labels) == 2 && in.Labels[1] == 1 && in.Index == 2
		}},
		{"typed select", []byte{0x1c, 0x01, 0x7e}, func(in Instr) bool { return len(in.Types) == 1 && in.Types[0] == I64 }},
		{"memarg multi-memory", []byte{0x28, 0x42, 0x01, 0x10}, func(in Instr) bool {
			return in.Mem == MemArg{Align: 2, Memory: 1, Offset: 16}
		}},
		{"memory.grow", []byte{0x40, 0x00}, func(in Instr) bool { return in.Op == OpMemoryGrow && in.Index == 0 }},
		{"memory.init", []byte{0xfc, 0x08, 0x03, 0x00}, func(in Instr) bool { return in.Op == OpMemoryInit && in.Index == 3 }},
		{"memory.fill", []byte{0xfc, 0x0b, 0x00}, func(in Instr) bool { return in.Op == OpMemoryFill }},
		{"ref.func", []byte{0xd2, 0x07}, func(in Instr) bool { return in.Op == OpRefFunc && in.Index == 7 }},
		{"ref.null extern", []byte{0xd0, 0x6f}, func(in Instr) bool { return in.HeapType == -17 }},
		{"v128.load16_lane", []byte{0xfd, 0x55, 0x01, 0x04, 0x07}, func(in Instr) bool {
			return in.Mem.Offset == 4 && in.Lane == 7 && in.End == 5
		}},
		{"i8x16.shuffle", append([]byte{0xfd, 0x0d}, make([]byte, 16)...), func(in Instr) bool { return in.End == 18 }},
		{"relaxed simd", []byte{0xfd, 0x80, 0x02}, func(in Instr) bool { return in.Op.String() == "i8x16.relaxed_swizzle" }},
		{"atomic.fence", []byte{0xfe, 0x03, 0x00}, func(in Instr) bool { return in.Op == OpAtomicFence && in.Op.IsAtomic() }},
		{"try_table", []byte{0x1f, 0x40, 0x02, 0x00, 0x05, 0x01, 0x03, 0x01}, func(in Instr) bool {
			return in.Op == OpTryTable && len(in.Catches) == 2 &&
				in.Catches[0] == Catch{Kind: CatchTag, Tag: 5, Label: 1} && in.Catches[1] == Catch{Kind: CatchAllRef, Label: 1}
		}},
		{"try is exception handling", []byte{0x06, 0x40}, func(in Instr) bool {
			return in.Op.String() == "try" && in.Op.IsLegacyExceptionHandling() && in.Op.IsExceptionHandling()
		}},
		{"throw_ref", []byte{0x0a}, func(in Instr) bool { return in.Op == OpThrowRef && !in.Op.IsLegacyExceptionHandling() }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := NewWalker(tt.expr, 100)
			var in Instr
			if err := w.Next(&in); err != nil {
				t.Fatal(err)
			}
			if in.Offset != 100 || in.Start != 0 || in.End != len(tt.expr) || !tt.check(in) {
				t.Fatalf("decoded %+v from % x", in, tt.expr)
			}
		})
	}
}

// Every opcode in the tables, encoded with immediates of its shape, must be
// consumed exactly: a wrong shape in a table shows up as a length mismatch.
func TestWalkerConsumesEveryKnownOpcode(t *testing.T) {
	imms := map[imm][]byte{
		immNone: nil, immBlock: {0x40}, immIndex: {0x81, 0x01}, immIndex2: {0x01, 0x82, 0x01},
		immBrTable: {0x02, 0x00, 0x01, 0x00}, immMemArg: {0x02, 0x80, 0x08}, immMemLane: {0x00, 0x00, 0x01},
		immLane: {0x03}, immI32: {0x80, 0x7f}, immI64: {0x7f}, immF32: make([]byte, 4), immF64: make([]byte, 8),
		immV128: make([]byte, 16), immSelectT: {0x01, 0x7f}, immTryTable: {0x40, 0x01, 0x02, 0x00},
		immHeapType: {0x70}, immZeroByte: {0x00},
	}
	count := 0
	for p, table := range map[byte][]opInfo{0: singleOps[:], PrefixMisc: miscOps[:], PrefixSIMD: simdOps[:], PrefixThreads: threadOps[:]} {
		for sub, info := range table {
			if info.imm == immInvalid {
				continue
			}
			var expr []byte
			if p != 0 {
				expr = AppendU32([]byte{p}, uint32(sub))
			} else {
				expr = []byte{byte(sub)}
			}
			expr = append(expr, imms[info.imm]...)
			want := len(expr)
			w := NewWalker(expr, 0)
			var in Instr
			if info.name == "delegate" {
				// delegate needs an open try; walk one first.
				w.Reset(append([]byte{0x06, 0x40}, expr...), 0)
				want += 2
				_ = w.Next(&in)
			}
			if err := w.Next(&in); err != nil {
				t.Errorf("%s: %v", info.name, err)
				continue
			}
			if in.End != want || in.Op.String() != info.name {
				t.Errorf("%s: consumed %d of %d bytes, named %s", info.name, in.End, want, in.Op)
			}
			count++
		}
	}
	if count < 500 {
		t.Errorf("only %d opcodes known", count)
	}
}

func TestWalkerBodyStructure(t *testing.T) {
	tests := []struct {
		name    string
		expr    []byte
		wantErr string
		wantOff int
	}{
		{"just end", []byte{0x0b}, "", 0},
		{"nested blocks", []byte{0x02, 0x40, 0x03, 0x40, 0x0b, 0x0b, 0x0b}, "", 0},
		{"legacy try delegate", []byte{0x06, 0x40, 0x06, 0x40, 0x18, 0x00, 0x19, 0x0b, 0x0b}, "", 0},
		{"missing final end", []byte{0x02, 0x40, 0x0b}, "without its final end", 0x13},
		{"bytes after final end", []byte{0x0b, 0x01}, "1 bytes follow the final end", 0x11},
		{"unknown single opcode", []byte{0x27, 0x0b}, "unknown opcode 0x27", 0x10},
		{"unknown simd opcode", []byte{0xfd, 0x9a, 0x01, 0x0b}, "unknown opcode 0xfd 0x9a", 0x10},
		{"gc prefix", []byte{0xfb, 0x00, 0x0b}, "GC-proposal", 0x10},
		{"truncated immediate", []byte{0x10, 0x80}, "call: unexpected end", 0x12},
		{"bad fence byte", []byte{0xfe, 0x03, 0x01, 0x0b}, "must be 0x00", 0x12},
		{"huge br_table count", []byte{0x0e, 0xff, 0xff, 0xff, 0xff, 0x0f}, "larger than the", 0x11},
		{"delegate outside try", []byte{0x18, 0x00, 0x0b}, "delegate outside", 0x10},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := NewWalker(tt.expr, 0x10)
			var in Instr
			var err error
			for err == nil {
				err = w.Next(&in)
			}
			if tt.wantErr == "" {
				if err != io.EOF {
					t.Fatalf("got %v, want a clean walk", err)
				}
				return
			}
			var e *Error
			if !errors.As(err, &e) || !strings.Contains(e.Msg, tt.wantErr) || e.Offset != tt.wantOff {
				t.Fatalf("got %v, want %q at %#x", err, tt.wantErr, tt.wantOff)
			}
		})
	}
}

func hexModule(sections ...string) []byte {
	b := []byte(Magic + "\x01\x00\x00\x00")
	for _, s := range sections {
		b = append(b, s...)
	}
	return b
}

func TestDecodeRejectsMalformedModules(t *testing.T) {
	tests := []struct {
		name    string
		in      []byte
		wantErr string
		wantOff int
	}{
		{"section past end", hexModule("\x01\x0a\x01\x60\x00"), "runs past the end", 8},
		{"unknown section", hexModule("\x0e\x00"), "unknown section id 14", 8},
		{"out of order", hexModule("\x03\x01\x00", "\x01\x01\x00"), "type section is out of order", 11},
		{"repeated", hexModule("\x01\x01\x00", "\x01\x01\x00"), "out of order or repeated", 11},
		{"functions without code", hexModule("\x01\x04\x01\x60\x00\x00", "\x03\x02\x01\x00"), "declares 1 functions but the code section has 0", 0x12},
		{"leftover bytes", hexModule("\x01\x05\x01\x60\x00\x00\x00"), "1 bytes after its last entry", 14},
		{"bad utf-8 name", hexModule("\x02\x07\x01\x01\xff\x01a\x00\x00"), "not valid UTF-8", 11},
		{"import kind", hexModule("\x02\x06\x01\x01m\x01n\x09"), "unknown kind 0x09", 15},
		{"gc type", hexModule("\x01\x05\x01\x4e\x00\x00\x00"), "GC-proposal type", 11},
		{"data count mismatch", hexModule("\x0c\x01\x02"), "data count section says 2", 11},
		{"bad leb", hexModule("\x03\x06\x01\x80\x80\x80\x80\x10"), "integer too large", 11},
		{"huge type count", hexModule("\x01\x05\xff\xff\xff\xff\x0f"), "type count 4294967295 is larger", 10},
		{"huge custom name", hexModule("\x00\x05\xff\xff\xff\xff\x0f"), "runs past the end", 10},
		{"body past end", hexModule("\x01\x04\x01\x60\x00\x00", "\x03\x02\x01\x00", "\x0a\x03\x01\x09\x00"), "runs past the end of the code section", 0x15},
		{"global init unterminated", hexModule("\x06\x04\x01\x7f\x00\x41"), "i32.const: unexpected end", 14},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Decode(tt.in)
			var e *Error
			if !errors.As(err, &e) || !strings.Contains(e.Msg, tt.wantErr) || e.Offset != tt.wantOff {
				t.Fatalf("got %v, want %q at %#x", err, tt.wantErr, tt.wantOff)
			}
		})
	}
}

// A forged vector count must cost an error, not gigabytes.
func TestDecodeForgedCountsAllocateLittle(t *testing.T) {
	inputs := [][]byte{
		hexModule("\x01\x05\xff\xff\xff\xff\x0f"),
		hexModule("\x0a\x05\xff\xff\xff\xff\x0f"),
		hexModule("\x01\x04\x01\x60\x00\x00", "\x03\x02\x01\x00", "\x0a\x09\x01\x07\x01\xff\xff\xff\xff\x0f\x7f"),
		hexModule("\x0b\x08\x01\x01\xff\xff\xff\xff\x0f"),
	}
	for i, in := range inputs {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		_, err := Decode(in)
		runtime.ReadMemStats(&after)
		if err == nil {
			t.Errorf("input %d decoded", i)
		}
		if d := after.TotalAlloc - before.TotalAlloc; d > 1<<20 {
			t.Errorf("input %d allocated %d bytes", i, d)
		}
	}
}

func TestFuncNameReadsNameSection(t *testing.T) {
	m, err := Decode(readFixture(t, filepath.Join(checksDir, "threads_atomic.wasm")))
	if err != nil {
		t.Fatal(err)
	}
	s, ok := m.CustomSection("name")
	if !ok {
		t.Skip("fixture built without a name section")
	}
	if name, ok := FuncName(s.Content, 0); !ok || name != "bump" {
		t.Errorf("FuncName(0) = %q, %v", name, ok)
	}
	if _, ok := FuncName(s.Content, 9); ok {
		t.Error("FuncName(9) found a name")
	}
	if _, ok := FuncName([]byte{0x01, 0xff}, 0); ok {
		t.Error("malformed name section yielded a name")
	}
}
