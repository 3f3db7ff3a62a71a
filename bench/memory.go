package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	goruntime "runtime"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/subako/subako-runner/limits"
	"github.com/subako/subako-runner/runtime"
)

// benchMemory measures the memory-heavy Go guest (testdata/guests/memhog):
// how long it takes to exit after stdin closes (the 1 s rule) at 64 and 256
// MiB, the peak RSS of one call over the guest's own memory, RSS after many
// calls against before, and exit_timeouts with more such calls at once than
// cores, with and without admission.
func benchMemory(ctx context.Context, o options, t *table) error {
	dir, err := goPackage(o.work, "memhog")
	if err != nil {
		return err
	}
	lim := limits.Default()
	lim.Memory = 512 * limits.MiB // a 256 MiB Go buffer needs a little more than 256 MiB
	pkg, closePkg, err := loadIn(ctx, runtime.Config{Limits: &lim}, dir)
	if err != nil {
		return err
	}
	defer closePkg()
	alloc := func(mib int) func() (runtime.Stats, error) {
		args := json.RawMessage(fmt.Sprintf(`{"mib":%d}`, mib))
		return func() (runtime.Stats, error) {
			res, err := pkg.Call(ctx, runtime.CallRequest{Tool: "alloc", Arguments: args})
			if err != nil {
				return runtime.Stats{}, err
			}
			defer res.Release()
			if res.Outcome != runtime.OutcomeOK {
				return res.Stats, &crashed{res.Crash.Reason, res.Crash.Message}
			}
			return res.Stats, nil
		}
	}
	hwmReset := os.WriteFile("/proc/self/clear_refs", []byte("5"), 0) == nil
	for _, size := range []struct {
		mib, calls int
	}{{64, o.memCalls}, {256, max(o.memCalls/2, 1)}} {
		once := alloc(size.mib)
		if _, err := once(); err != nil { // warm: the compiled code's pages
			return err
		}
		var exits []time.Duration
		var peakOver int64
		var guest int64
		timeouts := 0
		for i := 0; i < size.calls && ctx.Err() == nil; i++ {
			before, _ := procStatus("VmRSS")
			if hwmReset {
				_ = os.WriteFile("/proc/self/clear_refs", []byte("5"), 0)
			}
			st, err := once()
			if c, ok := err.(*crashed); ok && c.reason == runtime.CrashExitTimeout {
				timeouts++
				continue
			} else if err != nil {
				return err
			}
			exits = append(exits, st.ExitWait)
			if hwmReset {
				if hwm, err := procStatus("VmHWM"); err == nil && hwm-before > peakOver {
					peakOver, guest = hwm-before, st.MemoryBytes
				}
			}
		}
		p50, p99 := quantile(exits, 0.5), quantile(exits, 0.99)
		t.add(fmt.Sprintf("Go %d MiB guest: stdin close → exit p50 / p99 (n=%d, %d exit_timeout)", size.mib, len(exits), timeouts),
			dur(p50)+" / "+dur(p99), "", 0, "p99 ≤ 50ms", p99 <= 50*time.Millisecond && timeouts == 0)
		if hwmReset {
			t.add(fmt.Sprintf("Go %d MiB guest: peak RSS rise of a call vs its linear memory (worst call)", size.mib),
				mib(peakOver), mib(guest), float64(peakOver)/float64(guest), "≤ +32 MiB", peakOver <= guest+32<<20)
		}
	}

	// RSS after many calls against before: memory a call leaves behind.
	once := alloc(64)
	settle := func() int64 {
		goruntime.GC()
		debug.FreeOSMemory()
		rss, _ := procStatus("VmRSS")
		return rss
	}
	before := settle()
	n := 0
	for ; n < o.memSoak && ctx.Err() == nil; n++ {
		if _, err := once(); err != nil {
			return fmt.Errorf("soak call %d: %w", n, err)
		}
	}
	after := settle()
	t.add(fmt.Sprintf("RSS after %d calls of the Go 64 MiB guest vs before", n), mib(after), mib(before),
		float64(after)/float64(before), "≤ 1.1×", float64(after) <= 1.1*float64(before))

	// More memory-heavy calls at once than cores: with admission (the
	// default, NumCPU instances) and without, as the control.
	for _, side := range []struct {
		name string
		max  int
		n    int
	}{{"admission (default)", 0, o.memConcurrent}, {"no admission (control)", -1, max(o.memConcurrent/5, 1)}} {
		crt, err := runtime.New(ctx, runtime.Config{Limits: &lim, MaxInstances: side.max})
		if err != nil {
			return err
		}
		cpkg, err := crt.Load(ctx, dir)
		if err != nil {
			crt.Close(ctx)
			return err
		}
		var next, timeouts, other atomic.Int64
		var maxWait atomic.Int64
		var wg sync.WaitGroup
		for range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for next.Add(1) <= int64(side.n) && ctx.Err() == nil {
					res, err := cpkg.Call(ctx, runtime.CallRequest{Tool: "alloc", Arguments: json.RawMessage(`{"mib":64}`)})
					if err != nil {
						other.Add(1)
						continue
					}
					switch {
					case res.Outcome == runtime.OutcomeOK:
					case res.Crash.Reason == runtime.CrashExitTimeout:
						timeouts.Add(1)
					default:
						other.Add(1)
					}
					if w := int64(res.Stats.QueueWait); w > maxWait.Load() {
						maxWait.Store(w)
					}
					res.Release()
				}
			}()
		}
		wg.Wait()
		cpkg.Close(ctx)
		crt.Close(ctx)
		label := fmt.Sprintf("4 Go 64 MiB calls at once on %d cores, %s: exit_timeout in %d calls", goruntime.NumCPU(), side.name, side.n)
		value := fmt.Sprintf("%d (other failures %d, longest queue wait %s)", timeouts.Load(), other.Load(), dur(time.Duration(maxWait.Load())))
		if side.max == 0 {
			t.add(label, value, "", 0, "0", timeouts.Load() == 0 && other.Load() == 0)
		} else {
			t.add(label, value, "", 0, "", false)
		}
	}
	return nil
}

// crashed is a call that crashed, as an error.
type crashed struct{ reason, message string }

func (c *crashed) Error() string { return c.reason + ": " + c.message }
