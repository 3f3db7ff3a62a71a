package compile

import (
	"context"
	goruntime "runtime"
	"testing"
	"time"

	"github.com/tetratelabs/wazero"

	"github.com/subako/subako-runner/internal/wasmbin"
	"github.com/subako/subako-runner/internal/wasmbin/wasmtest"
)

// newTestCompiler is a Compiler on a wazero runtime of the runtime's
// configuration, without a cache, closed with the test.
func newTestCompiler(t testing.TB) *Compiler {
	ctx := context.Background()
	wz := wazero.NewRuntimeWithConfig(ctx, RuntimeConfig())
	t.Cleanup(func() { wz.Close(ctx) })
	return New(Config{Runtime: wz, Workers: 1, IsClosed: func() bool { return false },
		Phase: func(context.Context, string) func() { return func() {} }})
}

// The function names of a well-formed name section survive metering and
// reach wazero (its stack traces name the guest's functions); the count
// bomb's do not, and its module compiles without them.
func TestCompileKeepsOnlyWellFormedFunctionNames(t *testing.T) {
	ctx := context.Background()
	c := newTestCompiler(t)
	named := wasmtest.WithNameSubsection(wasmtest.Module{}.Bytes(), 1, append([]byte{1, 0}, wasmbin.AppendName(nil, "entry_point")...))
	for _, tt := range []struct {
		name, module string
		wasm         []byte
	}{
		{"well formed", "entry_point", named},
		{"count bomb", "", wasmtest.NameCountBomb()},
	} {
		t.Run(tt.name, func(t *testing.T) {
			metered, err := c.Meter(ctx, tt.wasm, time.Minute)
			if err != nil {
				t.Fatal(err)
			}
			for _, wasm := range [][]byte{tt.wasm, metered} {
				compiled, err := c.Compile(ctx, wasm, time.Minute)
				if err != nil {
					t.Fatal(err)
				}
				got := compiled.ExportedFunctions()["_start"].Name()
				compiled.Close(ctx)
				if got != tt.module {
					t.Fatalf("_start is named %q in wazero, want %q", got, tt.module)
				}
			}
		})
	}
}

// wazero reads no custom section but the name section into memory: with
// its DWARF reader on (its default) it copied each one and kept it for
// the compiled module's life.
func TestCompileReadsNoOtherCustomSection(t *testing.T) {
	ctx := context.Background()
	c := newTestCompiler(t)
	const size = 32 << 20
	module := wasmbin.AppendCustomSection(wasmtest.Module{}.Bytes(), ".debug_info", make([]byte, size))
	for name, run := range map[string]func() error{
		"Validate": func() error { return c.Validate(ctx, module, time.Minute) },
		"Compile": func() error {
			compiled, err := c.Compile(ctx, module, time.Minute)
			if err == nil {
				compiled.Close(ctx)
			}
			return err
		},
	} {
		var before, after goruntime.MemStats
		goruntime.ReadMemStats(&before)
		err := run()
		goruntime.ReadMemStats(&after)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if got := after.TotalAlloc - before.TotalAlloc; got >= size {
			t.Errorf("%s allocated %d MiB for a module of a 32 MiB custom section: wazero read it", name, got>>20)
		}
	}
}
