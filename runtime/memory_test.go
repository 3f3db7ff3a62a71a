package runtime

import (
	"context"
	"encoding/json"
	"os"
	goruntime "runtime"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/subako/subako-runner/internal/devtools/testguest"
	"github.com/subako/subako-runner/limits"
)

// memhogPackage loads the memory-heavy guest with a memory limit of mib.
func memhogPackage(t *testing.T, mib int64) *Package {
	lim := limits.Default()
	lim.Memory = mib * limits.MiB
	rt := newRuntime(t, &lim)
	return load(t, rt, makePackage(t, testguest.Go(t, guests+"memhog"), nil))
}

// A Go guest that allocates 64 MiB and answers must exit well inside its
// second after stdin closes, every time. With linear memory as a Go slice,
// each memory.grow copied the whole memory into a new slice and the host GC
// fought the guest's goroutine, and about half of such calls ended in
// exit_timeout. The count is the assertion, not a time.
func TestMemoryHeavyGuestExitsInTime(t *testing.T) {
	heavy(t)
	t.Parallel()
	pkg := memhogPackage(t, 256)
	calls := 200
	if s := os.Getenv("SUBAKO_MEMHOG_CALLS"); s != "" {
		calls, _ = strconv.Atoi(s)
	}
	callers := 2
	if s := os.Getenv("SUBAKO_MEMHOG_CALLERS"); s != "" {
		callers, _ = strconv.Atoi(s)
	}
	var mu sync.Mutex
	crashes := map[string]int{}
	var wg sync.WaitGroup
	for c := 0; c < callers; c++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := c; i < calls; i += callers {
				res, err := pkg.Call(context.Background(), CallRequest{Tool: "alloc", Arguments: json.RawMessage(`{"mib":64}`)})
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				if res.Outcome != OutcomeOK {
					crashes[res.Crash.Reason]++
				} else if !strings.Contains(viewText(res), "allocated 64 MiB") {
					t.Errorf("call %d answered %q", i, viewText(res))
				}
				mu.Unlock()
				if res.Stats.MemoryBytes < 64*limits.MiB {
					t.Errorf("call %d: peak memory %d, under the 64 MiB the guest filled", i, res.Stats.MemoryBytes)
				}
				res.Release()
			}
		}()
	}
	wg.Wait()
	if len(crashes) > 0 {
		t.Fatalf("%d calls of a 64 MiB guest: crashes %v (want none; exit_timeout means the exit after stdin closed was slow)", calls, crashes)
	}
}

// The guest's linear memory is not on the Go heap: the host allocates far
// less than the guest's memory per call, so a memory-heavy guest does not
// drive the host's garbage collector (which must stop the goroutine running
// the guest, and waits while it runs guest code). With Go slices, every
// call allocated at least the 64 MiB the guest used.
func TestGuestMemoryIsNotOnTheGoHeap(t *testing.T) {
	heavy(t)
	pkg := memhogPackage(t, 256)
	run := func() {
		res, err := pkg.Call(context.Background(), CallRequest{Tool: "alloc", Arguments: json.RawMessage(`{"mib":64}`)})
		if err != nil {
			t.Fatal(err)
		}
		defer res.Release()
		if res.Outcome != OutcomeOK {
			t.Fatalf("outcome %s crash %+v", res.Outcome, res.Crash)
		}
	}
	run()
	var before, after goruntime.MemStats
	goruntime.ReadMemStats(&before)
	const calls = 10
	for range calls {
		run()
	}
	goruntime.ReadMemStats(&after)
	perCall := (after.TotalAlloc - before.TotalAlloc) / calls
	if perCall > 8<<20 {
		t.Fatalf("the host allocated %d MiB on the Go heap per call of a guest that uses 64 MiB (want under 8 MiB)", perCall>>20)
	}
	t.Logf("%d KiB allocated on the Go heap per call", perCall>>10)
}

// Memory the guest grew into is the host's again once the call ended: the
// process's resident set does not grow by the guest's memory per call.
func TestMemoryIsReturnedAfterTheCall(t *testing.T) {
	heavy(t)
	pkg := memhogPackage(t, 512)
	run := func() {
		res, err := pkg.Call(context.Background(), CallRequest{Tool: "alloc", Arguments: json.RawMessage(`{"mib":256}`)})
		if err != nil {
			t.Fatal(err)
		}
		defer res.Release()
		if res.Outcome != OutcomeOK {
			t.Fatalf("outcome %s crash %+v", res.Outcome, res.Crash)
		}
	}
	run() // warm: compiled code, the runtime's own buffers
	before, ok := residentBytes()
	if !ok {
		t.Skip("no /proc/self/status VmRSS on this platform")
	}
	for range 5 {
		run()
	}
	after, _ := residentBytes()
	// Five calls of 256 MiB each: a host that kept the memory of even one of
	// them is 256 MiB up. The margin is half of that, for everything else the
	// process (and the tests beside this one) may be doing.
	if grown := after - before; grown > 128*limits.MiB {
		t.Fatalf("resident set grew by %d MiB over 5 calls of a 256 MiB guest (before %d MiB, after %d MiB)", grown>>20, before>>20, after>>20)
	}
}

// residentBytes reads VmRSS from /proc/self/status.
func residentBytes() (int64, bool) {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0, false
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			return kb << 10, err == nil
		}
	}
	return 0, false
}
