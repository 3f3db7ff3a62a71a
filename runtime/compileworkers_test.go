package runtime

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCompilationWorkers compiles the same module (not from a cache) with
// one worker, several, and the default: each compiles and runs.
func TestCompilationWorkers(t *testing.T) {
	t.Parallel()
	module, err := os.ReadFile(filepath.Join(cgreetDir, ModuleFile))
	if err != nil {
		t.Fatal(err)
	}
	for _, workers := range []int{1, 3, 0} {
		rt, err := New(context.Background(), Config{CompilationWorkers: workers})
		if err != nil {
			t.Fatal(err)
		}
		if want := workers; want > 0 && rt.compiler.Workers() != want {
			t.Errorf("workers %d resolved to %d", workers, rt.compiler.Workers())
		} else if workers == 0 && rt.compiler.Workers() < 1 {
			t.Errorf("the default resolved to %d", rt.compiler.Workers())
		}
		// A module no cache has seen: this Load compiles.
		dir := makePackage(t, writeTemp(t, withCustomSection(module, "workers")), nil)
		p, err := rt.Load(context.Background(), dir)
		if err != nil {
			t.Fatalf("workers %d: %v", workers, err)
		}
		res, err := p.Call(context.Background(), CallRequest{Tool: "greet", Arguments: json.RawMessage(`{"name":"Ada"}`)})
		if err != nil || !strings.Contains(viewText(res), "Hello, Ada!") {
			t.Fatalf("workers %d: %v %+v", workers, err, res)
		}
		res.Release()
		p.Close(context.Background())
		rt.Close(context.Background())
	}
}

func writeTemp(t *testing.T, b []byte) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "module.wasm")
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}
