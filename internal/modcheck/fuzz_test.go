package modcheck

import (
	"os"
	"path/filepath"
	"testing"
)

var knownCodes = map[string]bool{
	CodeNotWasm: true, CodeComponent: true, CodeModuleTooLarge: true, CodeInvalidModule: true,
	CodeThreads: true, CodeExceptions: true, CodeMissingStart: true, CodeBadStartSignature: true,
	CodeReactor: true, CodeMissingMemory: true, CodeUnknownImport: true, CodeImportSignature: true,
	CodeNonFunctionImport: true, CodeMemoryTooLarge: true,
}

// FuzzCheck: random bytes and mutated fixtures never panic or hang, and
// every problem carries a known code and a sentence.
func FuzzCheck(f *testing.F) {
	paths, _ := filepath.Glob(filepath.Join(checksDir, "*.wasm"))
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		if len(b) <= 64<<10 {
			f.Add(b)
		}
	}
	f.Add([]byte("not wasm"))
	f.Add([]byte("\x00asm\x01\x00\x00\x00\x0a\x05\xff\xff\xff\xff\x0f"))
	f.Fuzz(func(t *testing.T, b []byte) {
		for _, p := range Check(b, defaultOpts) {
			if !knownCodes[p.Code] || p.Message == "" {
				t.Fatalf("problem %+v", p)
			}
		}
	})
}
