package fuel

import (
	"context"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/subako/subako-runner/internal/wasmbin/wasmtest"
	"github.com/tetratelabs/wazero"
)

func TestZZCompileTimes(t *testing.T) {
	n, _ := strconv.Atoi(os.Getenv("ZZN"))
	if n == 0 {
		t.Skip()
	}
	ctx := context.Background()
	shapes := map[string][]byte{
		"blocks":    wasmtest.Repeat([]byte{0x02, 0x40}, []byte{0x0b}, n),
		"loops":     wasmtest.Repeat([]byte{0x03, 0x40}, []byte{0x0b}, n),
		"loopsbrif": wasmtest.Repeat([]byte{0x03, 0x40, 0x41, 0x00, 0x0d, 0x00}, []byte{0x0b}, n),
		"ifs":       wasmtest.Repeat([]byte{0x41, 0x00, 0x04, 0x40, 0x0b}, nil, n),
	}
	for _, name := range []string{"blocks", "loops", "loopsbrif", "ifs"} {
		if s := os.Getenv("ZZS"); s != "" && s != name {
			continue
		}
		wasm := wasmtest.Module{Bodies: [][]byte{shapes[name]}}.Bytes()
		for _, metered := range []bool{false, true} {
			b := wasm
			if metered {
				var err error
				if b, err = Instrument(wasm); err != nil {
					t.Fatal(err)
				}
			}
			r := wazero.NewRuntime(ctx)
			if metered {
				Instantiate(ctx, r)
			}
			start := time.Now()
			_, err := r.CompileModule(ctx, b)
			t.Logf("%s n=%d metered=%v: %v (%d bytes) err=%v", name, n, metered, time.Since(start), len(b), err)
			r.Close(ctx)
		}
	}
}
