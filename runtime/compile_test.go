package runtime

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/subako/subako-runner/internal/wasmbin/wasmtest"
	"github.com/subako/subako-runner/limits"
)

// writeModule writes a bare .wasm file and returns its path.
func writeModule(t *testing.T, wasm []byte) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "module.wasm")
	if err := os.WriteFile(path, wasm, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// slowToCompile is a module inside every structural bound that still
// takes wazero a good part of a second to compile: 5,000 sequential ifs.
func slowToCompile() []byte {
	return wasmtest.Module{Bodies: [][]byte{wasmtest.Repeat([]byte{0x41, 0x00, 0x04, 0x40, 0x0b}, nil, 5000)}}.Bytes()
}

func rejectionCodes(err error) []string {
	var rej *RejectedError
	if !errors.As(err, &rej) {
		return nil
	}
	var codes []string
	for _, r := range rej.Rejections {
		codes = append(codes, r.Code)
	}
	return codes
}

// TestCompileBombsAreRejectedBeforeCompiling: validate and run refuse
// 100k nested blocks (43 s of compilation before) from the structural
// bounds, without compiling.
func TestCompileBombsAreRejectedBeforeCompiling(t *testing.T) {
	bomb := writeModule(t, wasmtest.Module{Bodies: [][]byte{wasmtest.Repeat([]byte{0x02, 0x40}, []byte{0x0b}, 100_000)}}.Bytes())
	rt := newRuntime(t, nil)
	_, err := rt.Validate(context.Background(), bomb)
	if codes := rejectionCodes(err); len(codes) == 0 || codes[0] != CodeModuleTooComplex {
		t.Fatalf("Validate: %v, want a %s rejection", err, CodeModuleTooComplex)
	}
	_, err = rt.RunCommand(context.Background(), bomb, Command{})
	codes := rejectionCodes(err)
	if len(codes) == 0 {
		t.Fatalf("RunCommand: %v, want %s rejections", err, CodeModuleTooComplex)
	}
	for _, c := range codes {
		if c != CodeModuleTooComplex {
			t.Fatalf("RunCommand: %v, want only %s rejections", err, CodeModuleTooComplex)
		}
	}
}

// TestCompileTimeoutIsARejection: a compilation past the compile timeout is
// the rejection compile_timeout, for validate and run alike.
func TestCompileTimeoutIsARejection(t *testing.T) {
	lim := limits.Default()
	lim.CompileTimeout = 1                                     // a nanosecond: no compilation fits
	rt, err := New(context.Background(), Config{Limits: &lim}) // no cache: it would compile instantly
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close(context.Background())
	path := writeModule(t, slowToCompile())
	_, err = rt.Validate(context.Background(), path)
	if codes := rejectionCodes(err); len(codes) != 1 || codes[0] != CodeCompileTimeout {
		t.Fatalf("Validate: %v, want one %s rejection", err, CodeCompileTimeout)
	}
	_, err = rt.RunCommand(context.Background(), path, Command{})
	if codes := rejectionCodes(err); len(codes) != 1 || codes[0] != CodeCompileTimeout {
		t.Fatalf("RunCommand: %v, want one %s rejection", err, CodeCompileTimeout)
	}
}

// TestCompileReturnsOnCancellation: a caller whose context is done gets
// ctx.Err() back from Validate and Load, not a verdict on the module, and
// does not wait for the compilation (issue 11, item 1; issue 17, item 5).
func TestCompileReturnsOnCancellation(t *testing.T) {
	rt, err := New(context.Background(), Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close(context.Background())
	path := writeModule(t, slowToCompile())
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := rt.Validate(ctx, path); !errors.Is(err, context.Canceled) {
		t.Fatalf("Validate: %v, want context.Canceled", err)
	}
	if _, err := rt.Load(ctx, path); !errors.Is(err, context.Canceled) {
		t.Fatalf("Load: %v, want context.Canceled", err)
	}
}

// TestTablesShareTheMemoryLimit: table growth and linear memory draw from
// one account, 8 bytes an element; a refusal marks the instance out of
// memory.
func TestTablesShareTheMemoryLimit(t *testing.T) {
	m := newMemoryLimit(1 << 20)
	mem := m.Allocate(0, 1<<20)
	if mem.Reallocate(512<<10) == nil {
		t.Fatal("512 KiB of memory refused under a 1 MiB limit")
	}
	if !m.GrowTable(0, 0, 64<<10) { // 512 KiB of table
		t.Fatal("a 64Ki-element table refused beside 512 KiB of memory")
	}
	if m.refused() {
		t.Fatal("refused before anything was refused")
	}
	if m.GrowTable(1, 0, 1) {
		t.Fatal("a second table grew past the shared limit")
	}
	if !m.refused() {
		t.Fatal("a refused table growth is not recorded as out of memory")
	}
	if mem.Reallocate(512<<10+64<<10) != nil {
		t.Fatal("memory grew into the tables' share")
	}
	if !m.GrowTable(0, 64<<10, 0) || m.GrowTable(0, 0, 1<<32-1) {
		t.Fatal("a zero growth must pass and a 2^32-1 one fail")
	}
}
