package wasmbin

import (
	"errors"
	"strings"
	"testing"
)

// moduleWith is a header and one section.
func moduleWith(id SectionID, content []byte) []byte {
	return AppendSection([]byte("\x00asm\x01\x00\x00\x00"), id, content)
}

// TestDecodeRefusesCountsOverTheLimits: a vector over an implementation
// limit is refused with ErrLimit before anything is allocated for it, even
// when its entries are all there (4M data segments of 2 bytes, 8 MB of
// module, would be 320 MB of decoded segments; 16M element entries 512 MB).
func TestDecodeRefusesCountsOverTheLimits(t *testing.T) {
	passiveData := func(n int) []byte {
		b := AppendU32(nil, uint32(n))
		for range n {
			b = append(b, 0x01, 0x00) // passive, empty
		}
		return b
	}
	elements := func(segs ...int) []byte {
		b := AppendU32(nil, uint32(len(segs)))
		for _, n := range segs {
			b = append(b, 0x01, 0x00) // passive, funcref indices
			b = AppendU32(b, uint32(n))
			b = append(b, make([]byte, n)...)
		}
		return b
	}
	tests := []struct {
		name string
		wasm []byte
		want string
	}{
		{"data segments", moduleWith(SectionData, passiveData(MaxDataSegments+1)), "data segment count 100001 is above the limit of 100000"},
		{"element entries in one segment", moduleWith(SectionElement, elements(MaxElementEntries+1)), "element function index count 10000001 is above the limit of 10000000"},
		{"element entries across segments", moduleWith(SectionElement, elements(6_000_000, 6_000_000)), "element function index count 6000000 is above the limit of 4000000"},
		{"exports", moduleWith(SectionExport, append(AppendU32(nil, MaxExports+1), make([]byte, 3*(MaxExports+1))...)), "export count 100001 is above the limit of 100000"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Decode(tt.wasm)
			if !errors.Is(err, ErrLimit) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Decode: %v, want ErrLimit with %q", err, tt.want)
			}
		})
	}
	// At the limit, decoding works.
	if _, err := Decode(moduleWith(SectionData, passiveData(MaxDataSegments))); err != nil {
		t.Fatalf("%d data segments: %v", MaxDataSegments, err)
	}
}
