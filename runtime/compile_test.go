package runtime

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	goruntime "runtime"
	"sync"
	"testing"
	"time"

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

// holdCompilations makes every compilation of rt wait until the returned
// release is called (at the latest when the test ends); onHold, when not
// nil, runs as each compilation starts waiting.
func holdCompilations(t *testing.T, rt *Runtime, onHold func()) (release func()) {
	ch := make(chan struct{})
	var once sync.Once
	release = func() { once.Do(func() { close(ch) }) }
	rt.compiler.SetBeforeCompile(func() {
		if onHold != nil {
			onHold()
		}
		<-ch
	})
	t.Cleanup(release)
	return release
}

// TestCompileTimeoutIsARejection: a compilation past the compile timeout is
// the rejection compile_timeout, for validate and run alike. The
// compilations are held until both answered, so no timing decides it.
func TestCompileTimeoutIsARejection(t *testing.T) {
	lim := limits.Default()
	lim.CompileTimeout = time.Millisecond
	rt, err := New(context.Background(), Config{Limits: &lim})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close(context.Background())
	release := holdCompilations(t, rt, nil)
	path := writeModule(t, wasmtest.Module{}.Bytes())
	_, err = rt.Validate(context.Background(), path)
	if codes := rejectionCodes(err); len(codes) != 1 || codes[0] != CodeCompileTimeout {
		t.Fatalf("Validate: %v, want one %s rejection", err, CodeCompileTimeout)
	}
	_, err = rt.RunCommand(context.Background(), path, Command{})
	if codes := rejectionCodes(err); len(codes) != 1 || codes[0] != CodeCompileTimeout {
		t.Fatalf("RunCommand: %v, want one %s rejection", err, CodeCompileTimeout)
	}
	release()
}

// TestCompileReturnsOnCancellation: a caller whose context ends while its
// module compiles gets ctx.Err() back from Validate, Load and RunCommand at
// once, not a verdict on the module, and does not wait for the compilation
// (issue 11, item 1: Load with a 300 ms deadline returned after 6 s). The
// compilations are held until every caller has returned; then Close waits
// for them.
func TestCompileReturnsOnCancellation(t *testing.T) {
	rt, err := New(context.Background(), Config{})
	if err != nil {
		t.Fatal(err)
	}
	var cancelHeld context.CancelFunc // the running call's: cancelled once its compilation is held
	release := holdCompilations(t, rt, func() { cancelHeld() })
	path := writeModule(t, wasmtest.Module{}.Bytes())
	calls := map[string]func(ctx context.Context) error{
		"Validate":   func(ctx context.Context) error { _, err := rt.Validate(ctx, path); return err },
		"Load":       func(ctx context.Context) error { _, err := rt.Load(ctx, path); return err },
		"RunCommand": func(ctx context.Context) error { _, err := rt.RunCommand(ctx, path, Command{}); return err },
	}
	for name, call := range calls {
		ctx, cancel := context.WithCancel(context.Background())
		cancelHeld = cancel
		if err := call(ctx); !errors.Is(err, context.Canceled) {
			t.Errorf("%s cancelled while compiling: %v, want context.Canceled", name, err)
		}
		dctx, stop := context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
		if err := call(dctx); !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("%s past its deadline: %v, want context.DeadlineExceeded", name, err)
		}
		stop()
	}
	release()
	if err := rt.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// TestTableGrowAttackGetsMinusOne: the table.grow of 2^32-2 elements that
// killed the host process gets -1 in a real run, in this process; growth
// that fits beside linear memory runs, growth of the tables or of memory
// past their shared limit gets -1 (testdata/fuel/tables.wat checks each
// answer and exits 0 when all are right); the host's heap stays bounded.
func TestTableGrowAttackGetsMinusOne(t *testing.T) {
	rt := newRuntime(t, nil)
	lim := limits.Default()
	lim.Memory = limits.MiB
	goruntime.GC()
	var before, after goruntime.MemStats
	goruntime.ReadMemStats(&before)
	res, err := rt.RunCommand(context.Background(), filepath.Join("..", "testdata", "fuel", "tables.wasm"), Command{Limits: &lim})
	goruntime.ReadMemStats(&after)
	if err != nil {
		t.Fatal(err)
	}
	if res.Crash != nil || res.ExitCode != 0 {
		t.Fatalf("crash %+v, exit code %d: want exit 0 (a non-zero code numbers the wrong answer)", res.Crash, res.ExitCode)
	}
	// An unchecked grow asks for 32 GiB; the run itself allocates a few MiB.
	if grew := after.TotalAlloc - before.TotalAlloc; grew > 256<<20 {
		t.Fatalf("the host allocated %d bytes", grew)
	}
}
