package fuel

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"runtime"
	"testing"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"

	"github.com/subako/subako-runner/internal/wasmbin"
	"github.com/subako/subako-runner/internal/wasmbin/wasmtest"
)

// TestCallDepthBoundsHostMemory: an endless recursion under a 1 MiB
// memory limit ends with ErrCallStackExhausted, and what the host
// allocated for it stays under a bound derived from the depth limit:
// the frames allowed, maxCallDepth × frameUnit bytes (8 MiB), times 2
// for wazero's stack, which doubles (it may be up to twice what it
// holds), times 2 again for the copies it leaves behind as it grows (a
// doubling series sums to twice its last term). Unmetered, each of these
// recursions allocated 169 MB before wazero's own stack overflow. The
// shapes: the smallest frame, 1,000 i64 locals, and 2,000 v128 values
// loaded before the recursive call and used after it. (wazero made each
// of these frames about 160 bytes: the locals and loads are weighed
// against frames larger than any measured here.)
func TestCallDepthBoundsHostMemory(t *testing.T) {
	ctx := context.Background()
	r := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfig().WithCoreFeatures(api.CoreFeaturesV2).WithMemoryLimitPages(16))
	t.Cleanup(func() { r.Close(ctx) })
	if _, err := Instantiate(ctx, r); err != nil {
		t.Fatal(err)
	}
	const bound = 4 * maxCallDepth * frameUnit
	// 2,000 × (i32.const 16k; v128.load), call 0, 1,999 × i32x4.add,
	// drop: each load is a value of its own, live across the call.
	var loads []byte
	for k := range 2000 {
		loads = append(wasmbin.AppendS64(append(loads, 0x41), int64(k*16)), 0xfd, 0x00, 0x04, 0x00)
	}
	spills := cat(loads, []byte{0x10, 0x00}, bytes.Repeat([]byte{0xfd, 0xae, 0x01}, 1999), []byte{0x1a})
	for _, tt := range []struct {
		name   string
		locals []byte
		body   []byte
	}{
		{"the smallest frame", nil, []byte{0x10, 0x00}},
		{"1,000 i64 locals", []byte{1, 0xe8, 0x07, byte(wasmbin.I64)}, []byte{0x10, 0x00}},
		{"2,000 v128 values live across the call", nil, spills},
	} {
		t.Run(tt.name, func(t *testing.T) {
			cm := instrumentAndCompile(t, ctx, r, wasmtest.Module{Locals: tt.locals, Bodies: [][]byte{tt.body}}.Bytes())
			cctx := WithMeter(ctx, NewMeter(0))
			mod, err := r.InstantiateModule(cctx, cm, wazero.NewModuleConfig().WithName("").WithStartFunctions())
			if err != nil {
				t.Fatal(err)
			}
			defer mod.Close(ctx)
			runtime.GC()
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			_, err = mod.ExportedFunction("_start").Call(cctx)
			runtime.ReadMemStats(&after)
			if !errors.Is(err, ErrCallStackExhausted) {
				t.Fatalf("%.200v; want ErrCallStackExhausted", err)
			}
			allocated := after.TotalAlloc - before.TotalAlloc
			if allocated > bound {
				t.Fatalf("the recursion allocated %d bytes; want at most %d", allocated, bound)
			}
			t.Logf("allocated %d bytes (bound %d)", allocated, bound)
		})
	}
}

// TestCallDepthCountsFramesNotCalls: a guest that makes many calls
// without going deep, and one that recurses by tail calls, never runs
// out of frames: each call's return, and each tail call, gives its
// frame back.
func TestCallDepthCountsFramesNotCalls(t *testing.T) {
	ctx := context.Background()
	r := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfig().WithCoreFeatures(allFeatures))
	t.Cleanup(func() { r.Close(ctx) })
	if _, err := Instantiate(ctx, r); err != nil {
		t.Fatal(err)
	}
	cm := instrumentAndCompile(t, ctx, r, readFixture(t, "counts.wasm"))
	// fib(25) makes 242,785 calls, 25 deep.
	m, err := runCommand(t, ctx, r, cm, 0, "fib", 25)
	if err != nil || m.Used() != fib(25) {
		t.Fatalf("fib(25): %v, %d fuel; want %d", err, m.Used(), fib(25))
	}
	// Memory word 0 counts the calls; under 200,000 the function tail
	// calls itself: i32.const 0; i32.const 0; i32.load; i32.const 1;
	// i32.add; i32.store; i32.const 0; i32.load; i32.const 200000;
	// i32.lt_u; if; return_call 0; end
	const calls = 200_000
	tail := cat([]byte{0x41, 0x00, 0x41, 0x00, 0x28, 0x02, 0x00, 0x41, 0x01, 0x6a, 0x36, 0x02, 0x00, 0x41, 0x00, 0x28, 0x02, 0x00, 0x41},
		wasmbin.AppendS64(nil, calls), []byte{0x49, 0x04, 0x40, 0x12, 0x00, 0x0b})
	cm = instrumentAndCompile(t, ctx, r, wasmtest.Module{Bodies: [][]byte{tail}}.Bytes())
	cctx := WithMeter(ctx, NewMeter(0))
	mod, err := r.InstantiateModule(cctx, cm, wazero.NewModuleConfig().WithName("").WithStartFunctions())
	if err != nil {
		t.Fatal(err)
	}
	defer mod.Close(ctx)
	if _, err := mod.ExportedFunction("_start").Call(cctx); err != nil {
		t.Fatalf("%d tail calls: %.200v; want them to finish", calls, err)
	}
	if b, ok := mod.Memory().Read(0, 4); !ok || binary.LittleEndian.Uint32(b) != calls {
		t.Fatalf("the guest counted % x calls; want %d", b, calls)
	}
}
