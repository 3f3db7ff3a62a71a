package testguest

import (
	"os"
	"path/filepath"
	"testing"
)

// Package writes a package directory in a temporary directory: the module
// at module (copied), a manifest naming it name, and each asset (a path
// relative to the package, and its content).
func Package(t testing.TB, module, name string, assets map[string]string) string {
	t.Helper()
	b, err := os.ReadFile(module)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	files := map[string]string{"subako-package.json": `{"abi":1,"name":"` + name + `"}`, "module.wasm": string(b)}
	for k, v := range assets {
		files[k] = v
	}
	for rel, content := range files {
		p := filepath.Join(dir, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// RunWithCompilationCache runs a test binary's tests with *dir set to a
// directory for wazero's compilation cache, so each guest is compiled once
// per run. make test sets SUBAKO_TEST_COMPILATION_CACHE so that its -race
// pass reuses the machine code of the plain pass (the same code; compiling
// under -race is slow); otherwise a temporary directory is used and removed.
// It returns the exit code for os.Exit.
func RunWithCompilationCache(m *testing.M, dir *string) int {
	if shared := os.Getenv("SUBAKO_TEST_COMPILATION_CACHE"); shared != "" {
		*dir = shared
		return m.Run()
	}
	tmp, err := os.MkdirTemp("", "subako-test-compiled-")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(tmp)
	*dir = tmp
	return m.Run()
}
