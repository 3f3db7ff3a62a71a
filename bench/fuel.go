package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/subako/subako-runner/internal/devtools/testguest"
)

// benchFuel runs the CPU-bound guests of internal/fuel's BenchmarkGuest
// to completion unmetered and metered (fuel.Instrument + a Meter with no
// budget), in pairs run one right after the other, in alternating order.
// The ratio is the median of the pairs' ratios: the two runs of a pair
// share the machine's speed of the moment, which drifts by a fifth from
// one second to the next, where the two medians of all runs need not.
// Both must print the same digest.
func benchFuel(ctx context.Context, o options, t *table) error {
	goCPU, err := testguest.BuildGo(filepath.Join("testdata", "fuel", "go", "cpu"))
	if err != nil {
		return fmt.Errorf("building the Go cpu guest: %w", err)
	}
	for _, g := range []struct{ name, path string }{
		{"Go", goCPU},
		{"C", filepath.Join("testdata", "fuel", "c", "cpu.wasm")},
	} {
		wasm, err := os.ReadFile(g.path)
		if err != nil {
			return err
		}
		plain, err := newFloor(ctx, wasm, false)
		if err != nil {
			return err
		}
		metered, err := newFloor(ctx, wasm, true)
		if err != nil {
			plain.close(ctx)
			return err
		}
		var times [2][]time.Duration
		var ratios []float64
		var digest [2][]byte
		deadline := time.Now().Add(60 * time.Second)
		for i := 0; i < o.fuelRuns && time.Now().Before(deadline); i++ {
			order := []*floor{plain, metered}
			if i%2 == 1 {
				order[0], order[1] = metered, plain
			}
			for _, f := range order {
				start := time.Now()
				out, err := f.run(ctx, nil)
				d := time.Since(start)
				if err != nil {
					plain.close(ctx)
					metered.close(ctx)
					return fmt.Errorf("%s cpu guest (metered %v): %w", g.name, f.metered, err)
				}
				m := 0
				if f.metered {
					m = 1
				}
				times[m] = append(times[m], d)
				digest[m] = out
			}
			ratios = append(ratios, float64(times[1][i])/float64(times[0][i]))
		}
		plain.close(ctx)
		metered.close(ctx)
		if !bytes.Equal(digest[0], digest[1]) {
			return fmt.Errorf("%s cpu guest: metered output %q differs from unmetered %q", g.name, digest[1], digest[0])
		}
		u, m := quantile(times[0], .5), quantile(times[1], .5)
		ratio := median(ratios)
		t.add(fmt.Sprintf("%s CPU-bound guest metered vs unmetered (n=%d, median of the pairs' ratios)", g.name, len(times[0])),
			dur(m), dur(u), ratio, "≤ 1.10×", ratio <= 1.10)
	}
	return nil
}
