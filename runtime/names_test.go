package runtime

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	goruntime "runtime"
	"strings"
	"testing"

	"github.com/subako/subako-runner/internal/wasmbin/wasmtest"
)

// TestNameSectionCountBomb: the red team's 64-byte module, whose name
// section declares 0xFFFFFFFF function names, made wazero's decoder ask
// for 103 GB, and the Go runtime ended the process (validate, call, run,
// an embedding backend). It is an invalid_module rejection on every path
// that checks a module, and each line holds alone: wazero, given the
// module directly through the compiler, never sees the section.
func TestNameSectionCountBomb(t *testing.T) {
	ctx := context.Background()
	bomb := wasmtest.NameCountBomb()
	rt := newRuntime(t, nil)
	isNameRejection := func(t *testing.T, err error) {
		t.Helper()
		var rej *RejectedError
		if !errors.As(err, &rej) || len(rej.Rejections) != 1 || rej.Rejections[0].Code != CodeInvalidModule ||
			!strings.Contains(rej.Rejections[0].Message, "name section") {
			t.Fatalf("%v; want one invalid_module rejection naming the name section", err)
		}
	}
	t.Run("Load", func(t *testing.T) {
		_, err := rt.Load(ctx, makePackage(t, writeModule(t, bomb), nil))
		isNameRejection(t, err)
	})
	t.Run("Validate", func(t *testing.T) {
		_, err := rt.Validate(ctx, writeModule(t, bomb))
		isNameRejection(t, err)
	})
	t.Run("RunCommand", func(t *testing.T) {
		_, err := rt.RunCommand(ctx, writeModule(t, bomb), Command{})
		isNameRejection(t, err)
	})
	t.Run("the compiler alone", func(t *testing.T) {
		if err := rt.compiler.Validate(ctx, bomb, rt.limits.CompileTimeout); err != nil {
			t.Fatalf("Validate: %v; the module without its custom sections is valid", err)
		}
		compiled, err := rt.compiler.Compile(ctx, bomb, rt.limits.CompileTimeout)
		if err != nil {
			t.Fatalf("Compile: %v; the module without its names compiles", err)
		}
		compiled.Close(ctx)
	})
}

// TestLocalNamesFlood: a well-formed name section of 16.7 million empty
// local-name entries (a 32 MiB module) took wazero 4.7 s and 1.2 GB to
// decode, at validation and again at compilation. wazero never sees local
// names now; the module is accepted (nothing is wrong with it), and what
// the upload allocates in all stays under a third of that.
func TestLocalNamesFlood(t *testing.T) {
	if testing.Short() {
		t.Skip("a 32 MiB module")
	}
	ctx := context.Background()
	rt := newRuntime(t, nil)
	path := writeModule(t, wasmtest.LocalNamesFlood(1<<24))
	goruntime.GC()
	var before, after goruntime.MemStats
	goruntime.ReadMemStats(&before)
	c, err := rt.Validate(ctx, path)
	goruntime.ReadMemStats(&after)
	if err != nil {
		t.Fatalf("Validate: %v; want it accepted", err)
	}
	c.Close(ctx)
	const bound = 400 << 20
	if got := after.TotalAlloc - before.TotalAlloc; got > bound {
		t.Fatalf("validating the local-names flood allocated %d MiB; want at most %d MiB", got>>20, bound>>20)
	} else {
		t.Logf("validating the local-names flood allocated %d MiB", got>>20)
	}
}

// BenchmarkValidateNameCountBomb: what refusing the 64-byte module costs
// (the report's bound: under 100 ms and 20 MB).
func BenchmarkValidateNameCountBomb(b *testing.B) {
	rt := newRuntime(b, nil)
	path := filepath.Join(b.TempDir(), "module.wasm")
	if err := os.WriteFile(path, wasmtest.NameCountBomb(), 0o644); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := rt.Validate(context.Background(), path); err == nil {
			b.Fatal("the count bomb passed")
		}
	}
}

// An artifact store changed to name the 64-byte module (its hash in
// artifact.json, the module in the package) is opened as one this host
// does not vouch for: metered again after the structural checks, which
// refuse its name section before wazero sees it.
func TestOpenRefusesAStoreNamingTheCountBomb(t *testing.T) {
	ctx := context.Background()
	rt := newRuntime(t, nil)
	pkg := load(t, rt, makePackage(t, "../testdata/packages/cgreet/module.wasm", nil))
	store := t.TempDir()
	if err := pkg.Artifact().Save(store); err != nil {
		t.Fatal(err)
	}
	bomb := wasmtest.NameCountBomb()
	sum := sha256.Sum256(bomb)
	editArtifact(t, store, "moduleSha256", hex.EncodeToString(sum[:]))
	a, err := ReadArtifact(store)
	if err != nil {
		t.Fatal(err)
	}
	p, err := rt.Open(ctx, a, makePackage(t, writeModule(t, bomb), nil))
	if err == nil {
		p.Close(ctx)
	}
	if err == nil || !strings.Contains(err.Error(), "name section is malformed") {
		t.Fatalf("Open: %v; want the name section refused", err)
	}
}
