package runtime

import (
	"context"
	"encoding/json"
	"slices"
	"sync"
	"testing"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"
)

// The module's stderr lines reach Config.Logger ("module stderr", debug)
// in-process; a runtime of IsolationWorkers relays its workers' lines, and progress events, every time.
func TestWorkerModuleStderrReachesTheLogger(t *testing.T) {
	for _, workers := range []bool{false, true} {
		core, logs := observer.New(zap.DebugLevel)
		var rt *Runtime
		if workers {
			rt = newWorkerRT(t, nil, Config{Logger: zap.New(core)})
		} else {
			var err error
			if rt, err = New(context.Background(), Config{Logger: zap.New(core), CompilationCacheDir: compiledCache}); err != nil {
				t.Fatal(err)
			}
			defer rt.Close(context.Background())
		}
		pkg := load(t, rt, "../testdata/packages/cgreet")
		args, _ := json.Marshal(map[string]string{"name": "Ada"})
		call(t, pkg, CallRequest{Tool: "greet", Arguments: args})
		if n := logs.FilterMessage("module stderr").Len(); n == 0 {
			t.Errorf("workers %v: no \"module stderr\" line logged", workers)
		}
	}
}

// Every fresh worker's first operation reports its progress: the events
// of the work it starts are never sent before the worker knows its events
// stream (the ack of wireEvents).
func TestWorkerProgressOfAFreshWorker(t *testing.T) {
	t.Parallel()
	for i := range 5 {
		var mu sync.Mutex
		var steps []ProgressStep
		rt := newWorkerRT(t, nil, Config{Progress: func(e ProgressEvent) {
			mu.Lock()
			steps = append(steps, e.Step)
			mu.Unlock()
		}})
		load(t, rt, "../testdata/packages/cgreet")
		mu.Lock()
		if !slices.Contains(steps, StepCompile) || !slices.Contains(steps, StepDiscover) {
			t.Fatalf("runtime %d: progress %v; want the compile and the discovery", i, steps)
		}
		mu.Unlock()
	}
}
