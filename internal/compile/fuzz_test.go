package compile

import (
	"context"
	"os"
	"path/filepath"
	goruntime "runtime"
	"testing"
	"time"

	"github.com/subako/subako-runner/internal/modcheck"
	"github.com/subako/subako-runner/internal/wasmbin"
	"github.com/subako/subako-runner/internal/wasmbin/wasmtest"
	"github.com/subako/subako-runner/limits"
)

// fuzzModuleMax is the largest module FuzzUploadPath tries.
const fuzzModuleMax = 64 << 10

// fuzzAllocMax bounds what one module of at most fuzzModuleMax bytes may
// make the upload path allocate in all: a count taken on trust costs
// gigabytes (the 64-byte name section asked for 103 GB; 2^24 local names
// in 32 MiB, 666 MiB), what a module's own bytes cost is a small multiple
// of them.
const fuzzAllocMax = 256 << 20

// FuzzUploadPath: any module of at most 64 KiB goes through the path every
// module takes to wazero — the structural checks that `run` and Open apply
// (modcheck.CheckStructure, the least any path checks), the validation of
// the module as uploaded and its metering (Meter), and the compilation of
// the metered module (Compile) — in bounded memory, and the process
// survives it (a fatal error of the Go runtime ends the fuzzing with the
// input). The seeds are the red team's name-section modules, the checks'
// fixtures and the corpus in testdata/fuzz/FuzzUploadPath.
func FuzzUploadPath(f *testing.F) {
	f.Add(wasmtest.NameCountBomb())
	f.Add(wasmtest.LocalNamesFlood(1000))
	f.Add(wasmtest.WithNameSubsection(wasmtest.Module{Bodies: [][]byte{{0x00}}}.Bytes(), 1, append([]byte{1, 0}, wasmbin.AppendName(nil, "f")...)))
	paths, _ := filepath.Glob(filepath.Join("..", "..", "testdata", "checks", "*.wasm"))
	for _, p := range paths {
		if b, err := os.ReadFile(p); err == nil && len(b) <= fuzzModuleMax {
			f.Add(b)
		}
	}
	c := newTestCompiler(f)
	lim := limits.Default()
	opts := modcheck.Options{MaxMemoryBytes: lim.Memory, Structure: lim.Structure}
	ctx := context.Background()
	f.Fuzz(func(t *testing.T, module []byte) {
		if len(module) > fuzzModuleMax {
			return
		}
		var before, after goruntime.MemStats
		goruntime.ReadMemStats(&before)
		if len(modcheck.CheckStructure(module, opts)) == 0 {
			if metered, err := c.Meter(ctx, module, time.Minute); err == nil {
				if compiled, err := c.Compile(ctx, metered, time.Minute); err == nil {
					compiled.Close(ctx)
				}
			}
		}
		goruntime.ReadMemStats(&after)
		if got := after.TotalAlloc - before.TotalAlloc; got > fuzzAllocMax {
			t.Fatalf("a module of %d bytes made the upload path allocate %d MiB, above %d MiB", len(module), got>>20, fuzzAllocMax>>20)
		}
	})
}
