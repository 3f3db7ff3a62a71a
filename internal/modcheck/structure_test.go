package modcheck

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/subako/subako-runner/internal/devtools/testguest"
	"github.com/subako/subako-runner/internal/wasmbin"
	"github.com/subako/subako-runner/internal/wasmbin/wasmtest"
	"github.com/subako/subako-runner/limits"
)

// Pieces of function bodies.
var (
	blockOpen = []byte{0x02, 0x40} // block
	loopOpen  = []byte{0x03, 0x40} // loop
	end       = []byte{0x0b}
	seqIf     = []byte{0x41, 0x00, 0x04, 0x40, 0x0b} // i32.const 0; if; end
)

// brTable is i32.const 0; br_table with n labels, all 0, default 0.
func brTable(n int) []byte {
	b := append([]byte{0x02, 0x40, 0x41, 0x00, 0x0e}, wasmbin.AppendU32(nil, uint32(n))...)
	b = append(b, make([]byte, n+1)...)
	return append(b, 0x0b)
}

// passiveElements is one passive element segment of n entries of
// function 0.
func passiveElements(n int) []byte {
	b := []byte{0x01, 0x01, 0x00} // one segment; flags 1 (passive); elemkind funcref
	b = wasmbin.AppendU32(b, uint32(n))
	return append(b, make([]byte, n)...)
}

// dataSegments is n passive one-byte data segments.
func dataSegments(n int) []byte {
	b := wasmbin.AppendU32(nil, uint32(n))
	for range n {
		b = append(b, 0x01, 0x01, 0x2a)
	}
	return b
}

// TestCheckRejectsCompileAndInstanceBombs: each shape issue 17 used to make
// the host spend minutes of CPU or gigabytes of memory is rejected at
// upload, before anything compiles it, as module_too_complex (or
// table_too_large) with a message naming the function and the limit.
func TestCheckRejectsCompileAndInstanceBombs(t *testing.T) {
	// tablesByMemory checks tables against the memory limit alone, the
	// check behind the table elements limit.
	tablesByMemory := defaultOpts
	tablesByMemory.Structure.TableElements = 0
	nested := func(piece []byte, n int) []byte {
		return wasmtest.Module{Bodies: [][]byte{wasmtest.Repeat(piece, end, n)}}.Bytes()
	}
	tests := []struct {
		name   string
		wasm   []byte
		opts   *Options
		code   string
		phrase []string
	}{
		{"100k nested blocks (300 KB, 43 s to compile)", nested(blockOpen, 100_000), nil, CodeModuleTooComplex,
			[]string{`function 0 (export "_start")`, "nesting limit of 10000"}},
		{"1M nested blocks (3 MB, over 14 min)", nested(blockOpen, 1_000_000), nil, CodeModuleTooComplex,
			[]string{`function 0 (export "_start")`, "nesting limit of 10000"}},
		{"20k nested loops", nested(loopOpen, 20_000), nil, CodeModuleTooComplex,
			[]string{"nesting limit of 10000"}},
		{"10k nested loops with a br_if each (91 s of CPU metered)", nested([]byte{0x03, 0x40, 0x41, 0x00, 0x0d, 0x00}, 10_000), nil, CodeModuleTooComplex,
			[]string{`function 0 (export "_start")`, "nests loops more than 1000 deep", "loop nesting limit of 1000"}},
		{"1M sequential ifs", wasmtest.Module{Bodies: [][]byte{wasmtest.Repeat(seqIf, nil, 1_000_000)}}.Bytes(), nil, CodeModuleTooComplex,
			[]string{`function 0 (export "_start")`, "function size limit of 2 MiB"}},
		{"30k sequential ifs", wasmtest.Module{Bodies: [][]byte{wasmtest.Repeat(seqIf, nil, 30_000)}}.Bytes(), nil, CodeModuleTooComplex,
			[]string{`function 0 (export "_start")`, "more than 20000 blocks"}},
		{"sequential ifs over many functions (31 s of CPU metered)", wasmtest.Module{Bodies: repeatBodies(wasmtest.Repeat(seqIf, nil, 15_800), 4)}.Bytes(), nil, CodeModuleTooComplex,
			[]string{"cost", "is 998560000, above the limit of 250000000", "contributes 249640000"}},
		{"1M-label br_table", wasmtest.Module{Bodies: [][]byte{brTable(1_000_000)}}.Bytes(), nil, CodeModuleTooComplex,
			[]string{`function 0 (export "_start")`, "br_table of 1000000 labels", "limit of 65536"}},
		{"3 MiB flat function", wasmtest.Module{Bodies: [][]byte{make([]byte, 3<<20)}}.Bytes(), nil, CodeModuleTooComplex, // nops
			[]string{`function 0 (export "_start")`, "3.00 MiB", "function size limit of 2 MiB"}},
		{"code over the total", wasmtest.Module{Bodies: repeatBodies(make([]byte, 600<<10), 2)}.Bytes(),
			&Options{Structure: limits.Structure{CodeSize: limits.MiB}}, CodeModuleTooComplex,
			[]string{"1.17 MiB of code", "limit of 1 MiB"}},
		{"16M-entry passive element segment (1.78 GB an instance)", wasmtest.Module{Elements: passiveElements(16 << 20)}.Bytes(), nil, CodeModuleTooComplex,
			[]string{"element function index count 16777216 is above the limit of 10000000"}},
		{"2M-entry passive element segment", wasmtest.Module{Elements: passiveElements(2 << 20)}.Bytes(), nil, CodeModuleTooComplex,
			[]string{"2097152 entries", "limit of 1000000"}},
		{"4M one-byte data segments (643 MB an instance)", wasmtest.Module{Data: dataSegments(4 << 20), DataCount: 4 << 20, HasDataCount: true}.Bytes(), nil, CodeModuleTooComplex,
			[]string{"data segment count 4194304 is above the limit of 100000"}},
		{"data segments over the configured limit", wasmtest.Module{Data: dataSegments(1001)}.Bytes(),
			&Options{Structure: limits.Structure{DataSegments: 1000}}, CodeModuleTooComplex,
			[]string{"1001 data segments", "limit of 1000"}},
		{"table of 2^30 elements", wasmtest.Module{Tables: [][]byte{append([]byte{0x70, 0x00}, wasmbin.AppendU32(nil, 1<<30)...)}}.Bytes(), &tablesByMemory, CodeTableTooLarge,
			[]string{"table 0 starts at 1073741824 elements", "8 GiB at 8 bytes each", "memory limit of 256 MiB"}},
		{"tables over the limit together", wasmtest.Module{Tables: [][]byte{
			append([]byte{0x70, 0x00}, wasmbin.AppendU32(nil, 20<<20)...), append([]byte{0x70, 0x00}, wasmbin.AppendU32(nil, 20<<20)...)}}.Bytes(), &tablesByMemory, CodeTableTooLarge,
			[]string{"2 tables start at 41943040 elements in all", "320 MiB"}},
		{"a table beside the initial memory", wasmtest.Module{MemoryPages: 2048, Tables: [][]byte{append([]byte{0x70, 0x00}, wasmbin.AppendU32(nil, 17<<20)...)}}.Bytes(), &tablesByMemory, CodeTableTooLarge,
			[]string{"tables start at 17825792 elements (136 MiB at 8 bytes each)", "initial memory of 128 MiB", "memory limit of 256 MiB"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			opts := defaultOpts
			if tt.opts != nil {
				opts = *tt.opts
			}
			for name, check := range map[string]func([]byte, Options) []Problem{"Check": Check, "CheckStructure": CheckStructure} {
				ps := check(tt.wasm, opts)
				var found *Problem
				for i := range ps {
					if ps[i].Code == tt.code && containsAll(ps[i].Message, tt.phrase) {
						found = &ps[i]
					}
				}
				if found == nil {
					t.Fatalf("%s: no %s problem naming %q:\n%s", name, tt.code, tt.phrase, list(ps))
				}
			}
		})
	}
}

func repeatBodies(body []byte, n int) [][]byte {
	out := make([][]byte, n)
	for i := range out {
		out[i] = body
	}
	return out
}

func containsAll(s string, parts []string) bool {
	for _, p := range parts {
		if !strings.Contains(s, p) {
			return false
		}
	}
	return true
}

// TestCheckStructureAcceptsRealModules: the default bounds pass the
// largest real guest, the official Go MCP SDK's 14 MB module, every real
// toolchain module the repository commits (C, Rust, Zig, AssemblyScript)
// and a shape just inside every bound.
func TestCheckStructureAcceptsRealModules(t *testing.T) {
	sdk, err := os.ReadFile(testguest.Go(t, filepath.Join("..", "..", "testdata", "guests", "sdkgreet")))
	if err != nil {
		t.Fatal(err)
	}
	// Every committed module: none may be over a structural bound (the
	// fixtures of testdata/checks are over other checks on purpose).
	modules := 0
	err = filepath.WalkDir(filepath.Join("..", "..", "testdata"), func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".wasm") {
			return err
		}
		wasm, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		modules++
		for _, p := range CheckStructure(wasm, defaultOpts) {
			if p.Code == CodeModuleTooComplex || p.Code == CodeTableTooLarge {
				t.Errorf("%s: %s", path, p)
			}
		}
		return nil
	})
	if err != nil || modules < 20 {
		t.Fatalf("walked %d committed modules: %v", modules, err)
	}
	st := limits.DefaultStructure()
	inside := wasmtest.Module{Bodies: [][]byte{
		wasmtest.Repeat(blockOpen, end, st.Nesting),
		wasmtest.Repeat(loopOpen, end, st.LoopNesting),
		brTable(st.BrTableTargets),
	}, Elements: passiveElements(st.ElementEntries), Data: dataSegments(st.DataSegments)}.Bytes()
	for name, wasm := range map[string][]byte{"sdkgreet": sdk, "just inside": inside} {
		if ps := Check(wasm, defaultOpts); len(ps) > 0 {
			t.Errorf("%s (%d bytes) rejected:\n%s", name, len(wasm), list(ps))
		}
	}
}

// BenchmarkCheckBombs shows the structural check is linear: the MB/s of
// nested blocks is the same at 100k and 1M levels, and of sequential ifs.
func BenchmarkCheckBombs(b *testing.B) {
	for _, n := range []int{100_000, 1_000_000} {
		for name, wasm := range map[string][]byte{
			"nested_blocks": wasmtest.Module{Bodies: [][]byte{wasmtest.Repeat(blockOpen, end, n)}}.Bytes(),
			"seq_ifs":       wasmtest.Module{Bodies: [][]byte{wasmtest.Repeat(seqIf, nil, n)}}.Bytes(),
		} {
			b.Run(fmt.Sprintf("%s/%d", name, n), func(b *testing.B) {
				b.SetBytes(int64(len(wasm)))
				for b.Loop() {
					if len(Check(wasm, defaultOpts)) == 0 {
						b.Fatal("accepted")
					}
				}
			})
		}
	}
}
