package compile

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tetratelabs/wazero"
	"go.uber.org/zap"

	"github.com/subako/subako-runner/internal/wasmbin/wasmtest"
)

// newTestCompiler is a Compiler on a fresh wazero runtime configured as
// the runtime's, with no cache and no records.
func newTestCompiler(t *testing.T) *Compiler {
	t.Helper()
	ctx := context.Background()
	wz := wazero.NewRuntimeWithConfig(ctx, RuntimeConfig())
	c := New(Config{Runtime: wz, Workers: 1, Log: zap.NewNop(), IsClosed: func() bool { return false }, Closed: errors.New("closed"),
		Phase: func(context.Context, string) func() { return func() {} }})
	t.Cleanup(func() {
		c.Wait()
		c.Close(ctx)
		wz.Close(ctx)
	})
	return c
}

// TestMeterCompileCompilesBesideValidation: the compile of the metered
// module begins while the module as uploaded is still being validated.
// Each compilation, the validator's and the compiler's, waits on its way
// in for the other: done one after the other, the first would wait for
// ever (the test's bound, a minute, fails it).
func TestMeterCompileCompilesBesideValidation(t *testing.T) {
	c := newTestCompiler(t)
	var mu sync.Mutex
	arrived, alone := 0, false
	both := make(chan struct{})
	c.SetBeforeCompile(func() {
		mu.Lock()
		arrived++
		if arrived == 2 {
			close(both)
		}
		mu.Unlock()
		select {
		case <-both:
		case <-time.After(time.Minute):
			mu.Lock()
			alone = true
			mu.Unlock()
		}
	})
	module := wasmtest.Module{Bodies: [][]byte{{0x03, 0x40, 0x0b}}}.Bytes()
	_, compiled, err := c.MeterCompile(context.Background(), module, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	compiled.Close(context.Background())
	mu.Lock()
	defer mu.Unlock()
	if alone || arrived != 2 {
		t.Fatal("the compile did not begin before the validation ended")
	}
}

// TestMeterCompileRefusesWhatValidationRefuses: a module invalid as
// uploaded is refused by its validation, with its message, though its
// metered module was being compiled beside it; nothing compiled is
// returned. Both a type error (which the rewrite keeps, so the compile
// fails too) and an index past the module's own (which the rewrite
// refuses itself) come back as the validation's.
func TestMeterCompileRefusesWhatValidationRefuses(t *testing.T) {
	c := newTestCompiler(t)
	for name, m := range map[string]wasmtest.Module{
		"a type error":         {Bodies: [][]byte{{0x42, 0x00, 0x41, 0x00, 0x6a, 0x1a}}}, // i64.const 0; i32.const 0; i32.add; drop
		"a local past its own": {Locals: []byte{1, 1, 0x7e}, Bodies: [][]byte{{0x03, 0x40, 0x42, 0x00, 0x21, 0x01, 0x0c, 0x00, 0x0b}}},
	} {
		t.Run(name, func(t *testing.T) {
			metered, compiled, err := c.MeterCompile(context.Background(), m.Bytes(), time.Minute)
			var rej *Rejected
			if !errors.As(err, &rej) || compiled != nil || metered != nil {
				t.Fatalf("MeterCompile: %v (compiled %v); want a rejection and nothing else", err, compiled)
			}
			if !strings.HasPrefix(rej.Message, "the module is not valid WebAssembly") {
				t.Fatalf("rejection %q; want the validation's", rej.Message)
			}
		})
	}
}
