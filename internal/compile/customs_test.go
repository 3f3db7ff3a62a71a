package compile

import (
	"context"
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
