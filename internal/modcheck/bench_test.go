package modcheck

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/subako/subako-runner/internal/devtools/testguest"
)

// BenchmarkCheck measures a whole Check on real Go modules (it runs at every
// upload): b.SetBytes makes the MB/s column the figure to compare with the
// target of a 15 MB module in tens of milliseconds.
func BenchmarkCheck(b *testing.B) {
	for _, name := range []string{"hello", "big"} {
		path, err := testguest.BuildGo(filepath.Join(checksDir, "go", name))
		if err != nil {
			b.Fatal(err)
		}
		wasm, err := os.ReadFile(path)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(name, func(b *testing.B) {
			b.SetBytes(int64(len(wasm)))
			b.ReportAllocs()
			for b.Loop() {
				if ps := Check(wasm, defaultOpts); len(ps) != 0 {
					b.Fatal(ps)
				}
			}
		})
	}
}
