package fuel

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/subako/subako-runner/internal/wasmbin"
	"github.com/subako/subako-runner/internal/wasmbin/wasmtest"
	"github.com/tetratelabs/wazero"
)

// FuzzInstrument feeds the rewriter mutated modules: it must never panic,
// whatever wazero compiles before the rewrite it must compile after, and
// (the differential half) whatever wazero refuses before the rewrite it
// must refuse after: metering never makes an invalid module valid.
func FuzzInstrument(f *testing.F) {
	for _, glob := range []string{filepath.Join(fixtures, "*.wasm"), filepath.Join(fixtures, "c", "*.wasm"),
		"../../testdata/checks/*.wasm", "../wasmbin/testdata/*.wasm"} {
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
	f.Add(tableBomb(-2)) // a checked table.grow
	// The 77-byte module: local.set of the index the counter local takes.
	f.Add(wasmtest.Module{Locals: oneI64Local, Bodies: [][]byte{cat([]byte{0x03, 0x40}, maxI64, []byte{0x21, 0x01, 0x0c, 0x00, 0x0b})}}.Bytes())
	// Data segments to join, with an overlap, a passive one and a gap too
	// long (joinData).
	f.Add(wasmtest.Module{Data: dataSection(seg{16, "ab", false}, seg{20, "cdef", false}, seg{22, "g", false},
		seg{0, "p", true}, seg{30, "h", false}, seg{30 + 2*maxDataGap, "i", false})}.Bytes())
	ctx := context.Background()
	r := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfig().WithCoreFeatures(allFeatures))
	f.Cleanup(func() { r.Close(ctx) })
	f.Fuzz(func(t *testing.T, wasm []byte) {
		out, err := Instrument(wasm)
		// wazero's decoder trusts vector counts (a forged data segment
		// count makes it allocate gigabytes: the seed 5e71b1d705fc2964), so
		// like the runtime, which runs modcheck first, only modules our
		// decoder accepts reach it.
		// It also allocates a slice as long as a function's declared
		// locals (up to 2^32), so modules declaring many are skipped too.
		m, derr := wasmbin.Decode(wasm)
		if derr != nil || manyLocals(m) {
			return
		}
		if compiles(ctx, r, wasm) != nil {
			// Custom sections aside: the rewriter drops a name section that
			// does not parse (wazero refuses the module for it), and that
			// is no code made valid.
			if err == nil && compiles(ctx, r, out) == nil && compiles(ctx, r, withoutCustom(wasm, m)) != nil {
				t.Fatalf("wazero refuses the input but compiles its metered output")
			}
			return
		}
		if err != nil {
			t.Fatalf("wazero compiles the input but Instrument fails: %v", err)
		}
		if err := compiles(ctx, r, out); err != nil {
			t.Fatalf("wazero compiles the input but not the output: %v", err)
		}
	})
}

// withoutCustom returns wasm without its custom sections.
func withoutCustom(wasm []byte, m *wasmbin.Module) []byte {
	out := append([]byte(nil), wasm[:wasmbin.HeaderSize]...)
	for _, s := range m.Sections {
		if s.ID != wasmbin.SectionCustom {
			out = append(out, wasm[s.Offset:s.End]...)
		}
	}
	return out
}

func manyLocals(m *wasmbin.Module) bool {
	for _, c := range m.Codes {
		n := uint64(0)
		for _, l := range c.Locals {
			n += uint64(l.Count)
		}
		if n > 1<<16 {
			return true
		}
	}
	return false
}
