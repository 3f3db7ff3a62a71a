package wasmbin

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"
)

func addFixtureSeeds(f *testing.F) {
	for _, glob := range []string{filepath.Join(checksDir, "*.wasm"), filepath.Join("testdata", "*.wasm")} {
		paths, _ := filepath.Glob(glob)
		for _, p := range paths {
			b, err := os.ReadFile(p)
			if err != nil {
				f.Fatal(err)
			}
			if len(b) <= 64<<10 {
				f.Add(b)
			}
		}
	}
	f.Add([]byte(Magic + "\x01\x00\x00\x00\x01\x05\xff\xff\xff\xff\x0f"))
}

// FuzzDecode: no input panics, hangs, or yields an error without an offset
// inside the input.
func FuzzDecode(f *testing.F) {
	addFixtureSeeds(f)
	f.Fuzz(func(t *testing.T, b []byte) {
		checkErr := func(err error) {
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("error %v is not an *Error", err)
			}
			if e.Offset < 0 || e.Offset > len(b) {
				t.Fatalf("error offset %d outside the %d-byte input", e.Offset, len(b))
			}
		}
		secs, err := ReadSections(b)
		if err != nil {
			checkErr(err)
		}
		for _, s := range secs {
			if s.Offset < 0 || s.End > len(b) || s.ContentOffset+len(s.Content) != s.End {
				t.Fatalf("section %v spans [%d,%d) content %d+%d", s.ID, s.Offset, s.End, s.ContentOffset, len(s.Content))
			}
		}
		m, err := Decode(b)
		if err != nil {
			checkErr(err)
			return
		}
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
					checkErr(err)
					break
				}
				if in.End <= in.Start {
					t.Fatalf("instruction %s made no progress", in.Op)
				}
			}
		}
		for i := range m.Imports {
			m.FuncType(uint32(i))
		}
		if s, ok := m.CustomSection("name"); ok {
			FuncName(s.Content, 0)
		}
	})
}
