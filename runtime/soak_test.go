package runtime

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	goruntime "runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/subako/subako-runner/internal/tmpvol"
)

// soakCalls is how many calls each phase of the soak test makes: 1,000
// (200 with -short); SUBAKO_SOAK_CALLS overrides it, e.g. 10000 for the
// long run the embedding issue asks about.
func soakCalls(t *testing.T) int {
	t.Helper()
	if s := os.Getenv("SUBAKO_SOAK_CALLS"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n <= 0 {
			t.Fatalf("SUBAKO_SOAK_CALLS=%q: want a positive integer", s)
		}
		return n
	}
	if testing.Short() {
		return 200
	}
	return 1000
}

// footprint is what a leak would make grow: live goroutines, open file
// descriptors, live heap after a collection, and call directories left in
// the runtime's temp directory (prepared ones waiting for calls included).
type footprint struct {
	goroutines int
	fds        int
	heap       uint64
	tmpDirs    int
}

func (f footprint) String() string {
	return fmt.Sprintf("%d goroutines, %d fds, heap %.1f MiB, %d call dirs",
		f.goroutines, f.fds, float64(f.heap)/(1<<20), f.tmpDirs)
}

func measureFootprint(t *testing.T, rt *Runtime) footprint {
	t.Helper()
	rt.volumes.Flush()
	goruntime.GC()
	goruntime.GC() // the second cycle frees what finalizers of the first released
	var ms goruntime.MemStats
	goruntime.ReadMemStats(&ms)
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skipf("cannot count file descriptors: %v", err)
	}
	dirs, err := os.ReadDir(rt.volumes.Dir())
	if err != nil {
		t.Fatal(err)
	}
	return footprint{goroutines: goruntime.NumGoroutine(), fds: len(fds), heap: ms.HeapAlloc, tmpDirs: len(dirs)}
}

// settledFootprint measures until goroutines and descriptors stop falling
// (a goroutine that has sent its last value may not have returned yet), for
// at most a few seconds; it is not a timing assertion.
func settledFootprint(t *testing.T, rt *Runtime, base footprint) footprint {
	t.Helper()
	f := measureFootprint(t, rt)
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); {
		if f.goroutines <= base.goroutines && f.fds <= base.fds {
			break
		}
		time.Sleep(50 * time.Millisecond)
		f = measureFootprint(t, rt)
	}
	return f
}

// soakCall makes one call of the C package: greet (checking the answer) or,
// every tenth call, trap, so the crash path is soaked as well. It returns
// the call's /volume/tmp after Release.
func soakCall(pkg *Package, i int) (string, error) {
	tool, name := "greet", fmt.Sprintf("soak-%d", i)
	if i%10 == 9 {
		tool = "trap"
	}
	args, _ := json.Marshal(map[string]string{"name": name})
	res, err := pkg.Call(context.Background(), CallRequest{Tool: tool, Arguments: args})
	if err != nil {
		return "", err
	}
	var bad string
	if _, err := os.Stat(res.TmpDir); err != nil {
		bad = fmt.Sprintf("call %d: /volume/tmp not there before Release: %v", i, err)
	}
	switch {
	case tool == "trap" && (res.Crash == nil || res.Crash.Reason != CrashTrap):
		bad = fmt.Sprintf("call %d: trap: outcome %s crash %+v", i, res.Outcome, res.Crash)
	case tool == "greet" && (res.Outcome != OutcomeOK || !strings.Contains(viewText(res), "Hello, "+name+"!")):
		bad = fmt.Sprintf("call %d: greet: outcome %s crash %+v view %q", i, res.Outcome, res.Crash, viewText(res))
	}
	if err := res.Release(); err != nil {
		return res.TmpDir, err
	}
	if bad != "" {
		return res.TmpDir, fmt.Errorf("%s", bad)
	}
	return res.TmpDir, nil
}

// TestSoakNoGrowth makes many sequential and concurrent calls on one
// runtime and checks that nothing grows: goroutines, file descriptors, live
// heap, and every call's /volume/tmp is gone (or back in the pool, empty)
// after Release.
//
// It is not parallel: the counts are process-wide, so it runs while the
// parallel tests of the package wait. TMPDIR points at a directory of the
// test, so other processes' call directories do not count.
func TestSoakNoGrowth(t *testing.T) {
	n := soakCalls(t)
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	rt := newRuntime(t, nil)
	pkg := load(t, rt, "../testdata/packages/cgreet")

	// Warm-up: the first calls fill pools and caches for good.
	for i := 0; i < 50; i++ {
		if _, err := soakCall(pkg, i); err != nil {
			t.Fatalf("warm-up: %v", err)
		}
	}
	base := measureFootprint(t, rt)
	t.Logf("after warm-up: %v", base)

	const workers = 8
	sequential := func() error {
		for i := 0; i < n; i++ {
			dir, err := soakCall(pkg, i)
			if err != nil {
				return err
			}
			if !strings.HasPrefix(dir, tmp+string(os.PathSeparator)) {
				return fmt.Errorf("call %d: /volume/tmp %s is not under TMPDIR %s", i, dir, tmp)
			}
			// After Release (and the goroutine that handles released
			// directories) it is gone, or back in the pool, empty.
			rt.volumes.Flush()
			if entries, err := os.ReadDir(dir); err == nil && len(entries) > 0 {
				return fmt.Errorf("call %d: /volume/tmp %s still has %d entries after Release", i, dir, len(entries))
			} else if err != nil && !os.IsNotExist(err) {
				return fmt.Errorf("call %d: /volume/tmp %s: %v", i, dir, err)
			}
		}
		return nil
	}
	concurrent := func() error {
		var wg sync.WaitGroup
		errs := make(chan error, workers)
		for w := 0; w < workers; w++ {
			wg.Add(1)
			go func(w int) {
				defer wg.Done()
				for i := w; i < n; i += workers {
					if _, err := soakCall(pkg, i); err != nil {
						errs <- err
						return
					}
				}
			}(w)
		}
		wg.Wait()
		close(errs)
		return <-errs
	}
	phases := []struct {
		name string
		run  func() error
	}{
		{"sequential", sequential},
		{"concurrent", concurrent},
	}
	for _, ph := range phases {
		start := time.Now()
		if err := ph.run(); err != nil {
			t.Fatalf("%s: %v", ph.name, err)
		}
		f := settledFootprint(t, rt, base)
		t.Logf("after %d %s calls (%v): %v", n, ph.name, time.Since(start).Round(time.Millisecond), f)

		// Slack: a couple of runtime goroutines or descriptors may come and
		// go; a leak per call would be n of them. The live heap moves by a
		// few hundred KiB (pools, caches); keeping every Result alive adds
		// about 3 KiB a call, so 1,000 leaked results (or a few leaked
		// instances with their memory) exceed the slack.
		const heapSlack = 1 << 20
		if f.goroutines > base.goroutines+2 {
			t.Errorf("%s: goroutines grew from %d to %d over %d calls", ph.name, base.goroutines, f.goroutines, n)
		}
		if f.fds > base.fds+2 {
			t.Errorf("%s: open file descriptors grew from %d to %d over %d calls", ph.name, base.fds, f.fds, n)
		}
		if f.heap > base.heap+heapSlack {
			t.Errorf("%s: live heap grew from %.1f to %.1f MiB over %d calls", ph.name,
				float64(base.heap)/(1<<20), float64(f.heap)/(1<<20), n)
		}
		// Prepared directories wait for calls (at most tmpvol.Prepared);
		// a call's left behind would be n of them.
		if f.tmpDirs > tmpvol.Prepared {
			t.Errorf("%s: %d directories in the runtime's temp directory after Release, want at most %d prepared ones", ph.name, f.tmpDirs, tmpvol.Prepared)
		}
	}
}
