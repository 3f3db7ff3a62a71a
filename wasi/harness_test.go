package wasi_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"sync"
	"testing"

	"github.com/subako/subako-runner/wasi"
	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/sys"
)

// cache shares compiled guests between the tests of this package.
var cache = newTestCache()

// newTestCache shares compiled code between the tests of this binary, and
// with the other passes of make test through SUBAKO_TEST_COMPILATION_CACHE
// (compiling a Go guest under -race takes seconds).
func newTestCache() wazero.CompilationCache {
	if dir := os.Getenv("SUBAKO_TEST_COMPILATION_CACHE"); dir != "" {
		if c, err := wazero.NewCompilationCacheWithDir(dir); err == nil {
			return c
		}
	}
	return wazero.NewCompilationCache()
}

// syncBuffer is an io.Writer safe to read while the guest writes.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// run instantiates the module at wasmPath with cfg and returns its exit code
// (0 when _start returned) and any error that is not an exit.
func run(t *testing.T, ctx context.Context, wasmPath string, cfg wasi.Config) (uint32, error) {
	t.Helper()
	bin, err := os.ReadFile(wasmPath)
	if err != nil {
		t.Fatal(err)
	}
	r := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfig().WithCompilationCache(cache))
	defer r.Close(ctx)
	if _, err := wasi.Instantiate(ctx, r); err != nil {
		t.Fatal(err)
	}
	compiled, err := r.CompileModule(ctx, bin)
	if err != nil {
		t.Fatal(err)
	}
	in := wasi.NewInstance(cfg)
	defer in.Close()
	mod, err := r.InstantiateModule(wasi.WithInstance(ctx, in), compiled, wazero.NewModuleConfig().WithName(""))
	if mod != nil {
		defer mod.Close(ctx)
	}
	var exit *sys.ExitError
	if errors.As(err, &exit) {
		return exit.ExitCode(), nil
	}
	return 0, err
}

func runWithoutInstance(t *testing.T, ctx context.Context, wasmPath string) (uint32, error) {
	bin, err := os.ReadFile(wasmPath)
	if err != nil {
		t.Fatal(err)
	}
	r := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfig().WithCompilationCache(cache))
	defer r.Close(ctx)
	wasi.Instantiate(ctx, r)
	_, err = r.Instantiate(ctx, bin)
	return 0, err
}
