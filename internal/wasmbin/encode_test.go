package wasmbin

import (
	"reflect"
	"testing"
)

// TestEncodersRoundTrip: what the encoders write, Decode reads back the
// same, for every element segment encoding and the other entry kinds.
func TestEncodersRoundTrip(t *testing.T) {
	offset := Expr{Bytes: []byte{0x41, 0x02, 0x0b}}  // i32.const 2 end
	refFunc := Expr{Bytes: []byte{0xd2, 0x01, 0x0b}} // ref.func 1 end
	refNull := Expr{Bytes: []byte{0xd0, 0x70, 0x0b}} // ref.null func end
	elems := []Element{
		{Flags: 0, Mode: SegmentActive, Offset: offset, Type: FuncRef, Funcs: []uint32{0, 1}},
		{Flags: 1, Mode: SegmentPassive, Type: FuncRef, Funcs: []uint32{1}},
		{Flags: 2, Mode: SegmentActive, Table: 0, Offset: offset, Type: FuncRef, Funcs: []uint32{0}},
		{Flags: 3, Mode: SegmentDeclarative, Type: FuncRef, Funcs: []uint32{1, 0}},
		{Flags: 4, Mode: SegmentActive, Offset: offset, Type: FuncRef, Exprs: []Expr{refFunc, refNull}},
		{Flags: 5, Mode: SegmentPassive, Type: FuncRef, Exprs: []Expr{refFunc}},
		{Flags: 6, Mode: SegmentActive, Offset: offset, Type: FuncRef, Exprs: []Expr{refNull}},
		{Flags: 7, Mode: SegmentDeclarative, Type: FuncRef, Exprs: []Expr{refFunc}},
	}
	ft := FuncType{Params: []ValType{I64, I32}, Results: []ValType{I64}}

	b := []byte(Magic + "\x01\x00\x00\x00")
	b = AppendSection(b, SectionType, AppendFuncType(AppendU32(nil, 1), ft))
	b = AppendSection(b, SectionImport, AppendFuncImport(AppendU32(nil, 1), "mod", "name", 0))
	b = AppendSection(b, SectionFunction, []byte{1, 0})
	b = AppendSection(b, SectionTable, []byte{1, 0x70, 0x00, 0x08})
	b = AppendSection(b, SectionGlobal, append(AppendGlobalType(AppendU32(nil, 1), GlobalType{Type: I64, Mutable: true}), 0x42, 0x00, 0x0b))
	b = AppendSection(b, SectionExport, AppendExport(AppendU32(nil, 1), Export{Name: "g", Kind: KindGlobal, Index: 0}))
	ec := AppendU32(nil, uint32(len(elems)))
	for _, e := range elems {
		ec = AppendElement(ec, e)
	}
	b = AppendSection(b, SectionElement, ec)
	b = AppendSection(b, SectionCode, []byte{1, 4, 0, 0x42, 0x00, 0x0b})
	b = AppendCustomSection(b, "a name", []byte("payload"))

	m, err := Decode(b)
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Types) != 1 || !m.Types[0].Equal(ft) {
		t.Errorf("types: %v", m.Types)
	}
	if im := m.Imports; len(im) != 1 || im[0].Module != "mod" || im[0].Name != "name" || im[0].Kind != KindFunc || im[0].TypeIndex != 0 {
		t.Errorf("imports: %+v", im)
	}
	if g := m.Globals; len(g) != 1 || g[0].Type != (GlobalType{Type: I64, Mutable: true}) {
		t.Errorf("globals: %+v", g)
	}
	if e := m.Exports; len(e) != 1 || e[0].Name != "g" || e[0].Kind != KindGlobal {
		t.Errorf("exports: %+v", e)
	}
	if s, ok := m.CustomSection("a name"); !ok || string(s.Content) != "payload" {
		t.Errorf("custom section: %q, %v", s.Content, ok)
	}
	if len(m.Elements) != len(elems) {
		t.Fatalf("%d element segments, want %d", len(m.Elements), len(elems))
	}
	for i, got := range m.Elements {
		want := elems[i]
		got.At, got.Offset.Offset = 0, 0
		for j := range got.Exprs {
			got.Exprs[j].Offset = 0
		}
		if got.Offset.Bytes == nil {
			got.Offset.Bytes = want.Offset.Bytes
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("element %d (flags %d): got %+v, want %+v", i, want.Flags, got, want)
		}
	}
}

func TestSectionOrderIsExported(t *testing.T) {
	ids := []SectionID{SectionType, SectionImport, SectionFunction, SectionTable, SectionMemory, SectionTag,
		SectionGlobal, SectionExport, SectionStart, SectionElement, SectionDataCount, SectionCode, SectionData}
	for i := 1; i < len(ids); i++ {
		if ids[i-1].Order() >= ids[i].Order() {
			t.Errorf("%s ranks %d, not before %s (%d)", ids[i-1], ids[i-1].Order(), ids[i], ids[i].Order())
		}
	}
	if SectionCustom.Order() != 0 {
		t.Errorf("custom ranks %d", SectionCustom.Order())
	}
}
