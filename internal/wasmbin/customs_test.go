package wasmbin_test

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/subako/subako-runner/internal/wasmbin"
	"github.com/subako/subako-runner/internal/wasmbin/wasmtest"
)

// nameContent returns the content of module's name section.
func nameContent(t *testing.T, module []byte) (content []byte, base int) {
	t.Helper()
	secs, err := wasmbin.ReadSections(module)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range secs {
		if s.ID == wasmbin.SectionCustom && s.Name == "name" {
			return s.Content, s.ContentOffset
		}
	}
	t.Fatal("no name section")
	return nil, 0
}

// sub encodes one name subsection.
func sub(id byte, content ...byte) []byte {
	return append(append([]byte{id}, wasmbin.AppendU32(nil, uint32(len(content)))...), content...)
}

// names builds a name section's content from subsections.
func names(subs ...[]byte) []byte { return bytes.Join(subs, nil) }

func TestNameCountBombIs64Bytes(t *testing.T) {
	if n := len(wasmtest.NameCountBomb()); n != 64 {
		t.Fatalf("the count bomb is %d bytes, want the report's 64", n)
	}
}

// Every count, length and size of the subsections wazero decodes is held
// against the bytes present; each refusal names the offset of what is
// wrong.
func TestCheckNameSection(t *testing.T) {
	u32 := func(v uint32) []byte { return wasmbin.AppendU32(nil, v) }
	cat := func(parts ...[]byte) []byte { return bytes.Join(parts, nil) }
	tests := []struct {
		name    string
		content []byte
		refuse  string // a fragment of the error; "" when accepted
	}{
		{"empty", nil, ""},
		{"module name", names(sub(0, 2, 'm', 'n')), ""},
		{"function names", names(sub(1, cat(u32(2), []byte{0, 1, 'a', 1, 0})...)), ""},
		{"local names", names(sub(2, cat(u32(1), []byte{0}, u32(2), []byte{0, 1, 'x', 1, 0})...)), ""},
		{"unknown subsection, any bytes", names(sub(7, 0xff, 0xff, 0xff)), ""},
		{"all three and one more", names(sub(0, 0), sub(1, 0), sub(2, 0), sub(9, 1, 2)), ""},
		{"function names count bomb", names(sub(1, u32(0xFFFFFFFF)...)), "function name count 4294967295 is larger than"},
		{"function names count one past", names(sub(1, cat(u32(2), []byte{0, 0})...)), "function name count 2 is larger than"},
		{"local names count bomb", names(sub(2, u32(0xFFFFFFFF)...)), "local names function count 4294967295"},
		{"locals of one function count bomb", names(sub(2, cat(u32(1), []byte{0}, u32(0xFFFFFFFF))...)), "local name count 4294967295"},
		{"function name past its subsection", names(sub(1, 1, 0, 5, 'a')), "function name length 5 runs past"},
		{"module name past its subsection", names(sub(0, 9, 'a')), "module name length 9 runs past"},
		{"function name not UTF-8", names(sub(1, 1, 0, 1, 0xff)), "not valid UTF-8"},
		{"bytes after the last entry", names(sub(1, 0, 0)), "1 bytes after its last entry"},
		{"subsection past the section", []byte{1, 9, 0}, "runs past the end of the name section"},
		{"subsection size truncated", []byte{1, 0x80}, "unexpected end"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := wasmbin.CheckNameSection(tt.content, 100)
			if tt.refuse == "" {
				if err != nil {
					t.Fatalf("CheckNameSection: %v; want it accepted", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.refuse) {
				t.Fatalf("CheckNameSection: %v; want an error with %q", err, tt.refuse)
			}
			var e *wasmbin.Error
			if !errors.As(err, &e) || e.Offset < 100 || e.Offset > 100+len(tt.content) {
				t.Fatalf("CheckNameSection: %v; want a *wasmbin.Error at an offset inside the section (100..%d)", err, 100+len(tt.content))
			}
		})
	}
}

func TestCheckNameSectionOnTheFixtures(t *testing.T) {
	if err := wasmbin.CheckNameSection(nameContent(t, wasmtest.NameCountBomb())); err == nil {
		t.Fatal("the 64-byte count bomb's name section passed")
	}
	if err := wasmbin.CheckNameSection(nameContent(t, wasmtest.LocalNamesFlood(1000))); err != nil {
		t.Fatalf("a flood of well-formed local names: %v; it is well formed", err)
	}
}

// EngineNames drops the name section's local names, and keeps its module
// name and function names only when they are well formed (increasing and
// naming functions that exist); every other subsection and section is the
// module's own bytes, in order.
func TestEngineNames(t *testing.T) {
	base := wasmtest.Module{Bodies: [][]byte{nil, nil}}.Bytes() // 2 functions
	u32 := func(v uint32) []byte { return wasmbin.AppendU32(nil, v) }
	cat := func(parts ...[]byte) []byte { return bytes.Join(parts, nil) }
	modName := sub(0, 1, 'm')
	funcNames := sub(1, cat(u32(2), []byte{0, 1, 'a', 1, 1, 'b'})...)
	withCustom := func(module []byte, name string, content []byte) []byte {
		return wasmbin.AppendCustomSection(append([]byte(nil), module...), name, content)
	}
	producers := withCustom(base, "producers", []byte{0})
	tests := []struct {
		name       string
		module     []byte
		want       []byte // the name section's content; nil: none
		wantOthers []byte // the module without its name sections
	}{
		{"no custom sections", base, nil, base},
		{"module and function names kept", withCustom(base, "name", names(modName, funcNames)), names(modName, funcNames), base},
		{"local names dropped", withCustom(base, "name", names(modName, funcNames, sub(2, 0))), names(modName, funcNames), base},
		{"subsections wazero skips kept", withCustom(base, "name", names(sub(4, 0), funcNames, sub(7, 1, 2))), names(sub(4, 0), funcNames, sub(7, 1, 2)), base},
		{"the first module name and function names", withCustom(base, "name", names(funcNames, modName, sub(1, 0), sub(0, 1, 'n'))), names(funcNames, modName), base},
		{"function names not increasing", withCustom(base, "name", names(modName, sub(1, cat(u32(2), []byte{1, 1, 'b', 0, 1, 'a'})...))), modName, base},
		{"function name repeated", withCustom(base, "name", names(sub(1, cat(u32(2), []byte{0, 1, 'b', 0, 1, 'a'})...))), nil, base},
		{"function index past the functions", withCustom(base, "name", names(modName, sub(1, cat(u32(1), []byte{2, 1, 'c'})...))), modName, base},
		{"count bomb", withCustom(base, "name", names(modName, sub(1, u32(0xFFFFFFFF)...))), modName, base},
		// wazero reads a subsection by its entries, not its size: bytes
		// after the last entry would be read as the next subsection, here a
		// local-names count bomb.
		{"function names with bytes after their last entry", withCustom(base, "name", names(modName, sub(1, cat(u32(1), []byte{0, 1, 'a'}, []byte{2, 5}, u32(0xFFFFFFFF))...))), modName, base},
		{"module name with bytes after it", withCustom(base, "name", names(sub(0, cat([]byte{1, 'm'}, []byte{2, 5}, u32(0xFFFFFFFF))...), funcNames)), funcNames, base},
		{"module name malformed", withCustom(base, "name", names(sub(0, 5, 'm'), funcNames)), funcNames, base},
		{"other custom sections kept", withCustom(withCustom(producers, "name", names(sub(2, 0))), ".debug_info", []byte{1, 2, 3}), nil, withCustom(producers, ".debug_info", []byte{1, 2, 3})},
		{"only the first name section", withCustom(withCustom(base, "name", names(modName)), "name", names(funcNames)), names(modName), base},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := wasmbin.EngineNames(tt.module)
			if err != nil {
				t.Fatal(err)
			}
			secs, err := wasmbin.ReadSections(got)
			if err != nil {
				t.Fatal(err)
			}
			var kept []byte
			rest := append([]byte(nil), got[:wasmbin.HeaderSize]...)
			for _, s := range secs {
				if s.ID == wasmbin.SectionCustom && s.Name == "name" {
					if kept != nil {
						t.Fatal("two name sections kept")
					}
					kept = s.Content
					continue
				}
				rest = append(rest, got[s.Offset:s.End]...)
			}
			if !bytes.Equal(kept, tt.want) {
				t.Fatalf("name section % x, want % x", kept, tt.want)
			}
			if !bytes.Equal(rest, tt.wantOthers) {
				t.Fatal("the other sections changed")
			}
		})
	}
}

// A module that needs nothing changed comes back as it is, not copied:
// the validation and compilation of every package go through
// EngineNames, and the compilation cache's key is the bytes' hash.
func TestEngineNamesCopiesOnlyWhenItMust(t *testing.T) {
	base := wasmtest.Module{}.Bytes()
	named := wasmbin.AppendCustomSection(append([]byte(nil), base...), "name", names(sub(1, 1, 0, 1, 'a'), sub(7, 0)))
	other := wasmbin.AppendCustomSection(append([]byte(nil), named...), "producers", []byte{0})
	for _, m := range [][]byte{base, named, other} {
		got, err := wasmbin.EngineNames(m)
		if err != nil || &got[0] != &m[0] || len(got) != len(m) {
			t.Fatalf("EngineNames copied a module it had nothing to change in (err %v)", err)
		}
	}
	if _, err := wasmbin.EngineNames(append(base, 1, 9)); err == nil {
		t.Fatal("EngineNames took a module whose last section runs past its end")
	}
}
