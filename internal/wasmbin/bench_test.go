package wasmbin

import (
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/subako/subako-runner/internal/devtools/testguest"
)

// BenchmarkDecodeAndWalk decodes a large real Go module and walks every
// instruction: the work of the upload checks and the first pass of the
// fuel rewriter.
func BenchmarkDecodeAndWalk(b *testing.B) {
	path, err := testguest.BuildGo(filepath.Join(checksDir, "go", "big"))
	if err != nil {
		b.Fatal(err)
	}
	wasm, err := os.ReadFile(path)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(wasm)))
	b.ReportAllocs()
	instrs := 0
	for b.Loop() {
		m, err := Decode(wasm)
		if err != nil {
			b.Fatal(err)
		}
		instrs = 0
		var in Instr
		w := NewWalker(nil, 0)
		for _, c := range m.Codes {
			w.Reset(c.Expr, c.ExprOffset)
			for {
				if err := w.Next(&in); err != nil {
					if err != io.EOF {
						b.Fatal(err)
					}
					break
				}
				instrs++
			}
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(instrs), "ns/instr")
	b.ReportMetric(float64(instrs), "instrs")
}

func BenchmarkDecode(b *testing.B) {
	path, err := testguest.BuildGo(filepath.Join(checksDir, "go", "big"))
	if err != nil {
		b.Fatal(err)
	}
	wasm, err := os.ReadFile(path)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(wasm)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Decode(wasm); err != nil {
			b.Fatal(err)
		}
	}
}
