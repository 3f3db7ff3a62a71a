package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/subako/subako-runner/runtime"
)

// benchReopen uploads the Go-SDK guest package once (saving its artifact
// and filling a compilation cache), then compares, each in a fresh
// runtime as a new process would have: ReadArtifact + Open with the warm
// cache, against the engine's floor (wazero's own CompileModule of the same
// metered bytes, already in memory, from the same warm cache in a fresh
// wazero runtime) and against ReadArtifact + Open with no cache (a cold
// compile of the same metered module), on every core as configured by
// default and on one compilation worker (what the cache saves in CPU, as
// the row's target was set before compilation used every core). The runs
// alternate.
func benchReopen(ctx context.Context, o options, t *table) error {
	dir, err := goPackage(o.work, "sdkgreet")
	if err != nil {
		return err
	}
	cache := filepath.Join(o.work, "reopen-cache")
	store := filepath.Join(o.work, "reopen-artifact")

	upRT, err := runtime.New(ctx, runtime.Config{CompilationCacheDir: cache})
	if err != nil {
		return err
	}
	start := time.Now()
	pkg, err := upRT.Load(ctx, dir)
	upload := time.Since(start)
	if err != nil {
		upRT.Close(ctx)
		return err
	}
	err = pkg.Artifact().Save(store)
	upRT.Close(ctx)
	if err != nil {
		return err
	}
	info, err := os.Stat(filepath.Join(dir, runtime.ModuleFile))
	if err != nil {
		return err
	}

	// open makes a fresh runtime (no cache when cacheDir is "", workers
	// compilation workers, 0 for the default) and times reading the
	// artifact and opening the package; it then makes one call (untimed) to
	// show the opened package works.
	open := func(cacheDir string, workers int) (time.Duration, error) {
		rt, err := runtime.New(ctx, runtime.Config{CompilationCacheDir: cacheDir, CompilationWorkers: workers})
		if err != nil {
			return 0, err
		}
		defer rt.Close(ctx)
		start := time.Now()
		a, err := runtime.ReadArtifact(store)
		if err != nil {
			return 0, err
		}
		p, err := rt.Open(ctx, a, dir)
		if err != nil {
			return 0, err
		}
		d := time.Since(start)
		res, err := p.Call(ctx, runtime.CallRequest{Tool: "greet", Arguments: json.RawMessage(`{"name":"Ada"}`)})
		if err != nil {
			return 0, err
		}
		defer res.Release()
		if res.Outcome != runtime.OutcomeOK {
			return 0, fmt.Errorf("call after open: outcome %s crash %+v", res.Outcome, res.Crash)
		}
		return d, nil
	}
	metered, err := os.ReadFile(filepath.Join(store, "metered.wasm"))
	if err != nil {
		return err
	}
	floor := func() (time.Duration, error) { return warmCompileBytes(ctx, cache, metered) }
	var warm, base, cold, coldOne []time.Duration
	deadline := time.Now().Add(90 * time.Second)
	for i := 0; (i < o.reopenRuns || i < o.coldRuns) && time.Now().Before(deadline); i++ {
		if i < o.coldRuns {
			d, err := open("", 0)
			if err != nil {
				return fmt.Errorf("cold open: %w", err)
			}
			cold = append(cold, d)
			logf("   cold compile + open: %v", d.Round(time.Millisecond))
			if d, err = open("", 1); err != nil {
				return fmt.Errorf("cold open, one worker: %w", err)
			}
			coldOne = append(coldOne, d)
			logf("   cold compile + open, one compilation worker: %v", d.Round(time.Millisecond))
		}
		if i < o.reopenRuns {
			d, err := open(cache, 0)
			if err != nil {
				return fmt.Errorf("warm open: %w", err)
			}
			warm = append(warm, d)
			logf("   warm reopen: %v", d.Round(time.Millisecond))
			if d, err = floor(); err != nil {
				return fmt.Errorf("wazero warm compile: %w", err)
			}
			base = append(base, d)
			logf("   wazero CompileModule, warm cache: %v", d.Round(time.Millisecond))
		}
	}
	w, b, c, c1 := quantile(warm, .5), quantile(base, .5), quantile(cold, .5), quantile(coldOne, .5)
	size := fmt.Sprintf("%.1f MB", float64(info.Size())/1e6)
	t.add(fmt.Sprintf("SDK package (%s) reopen, warm cache vs wazero CompileModule, warm cache (n=%d)", size, len(warm)),
		dur(w), dur(b), float64(w)/float64(b), "≤ 1.25×", float64(w) <= 1.25*float64(b))
	t.add(fmt.Sprintf("SDK package (%s) reopen, warm cache (n=%d) vs cold compile (n=%d)", size, len(warm), len(cold)),
		dur(w), dur(c), float64(w)/float64(c), "≤ 0.05×", float64(w) <= 0.05*float64(c))
	t.add(fmt.Sprintf("SDK package (%s) reopen, warm cache (n=%d) vs cold compile on one compilation worker (n=%d)", size, len(warm), len(coldOne)),
		dur(w), dur(c1), float64(w)/float64(c1), "≤ 0.05×", float64(w) <= 0.05*float64(c1))
	t.add("SDK package upload (checks, metering, compile, discovery)", dur(upload), "", 0, "", false)
	return nil
}
