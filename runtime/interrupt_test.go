package runtime

import (
	"context"
	"encoding/json"
	"errors"
	"math/rand/v2"
	"sync"
	"testing"
	"time"
)

// interruptCalls is how many calls TestCallerDeadlineIsNeverACrash makes:
// 10,000 (1,000 with -short); SUBAKO_INTERRUPT_CALLS overrides it.
func interruptCalls(t *testing.T) int {
	t.Helper()
	if testing.Short() {
		return soakEnv(t, "SUBAKO_INTERRUPT_CALLS", 1000)
	}
	return soakEnv(t, "SUBAKO_INTERRUPT_CALLS", 10000)
}

// A caller's deadline that passes while the guest runs is the caller's
// interruption, never a verdict on the module: the fuel meter stops the
// guest as soon as the earlier of the two deadlines (the caller's, the
// call's own) has passed, before the caller's context has run its timer,
// and the end is read from the meter's record of why it stopped. Calls
// under random deadlines of 0–3 ms (a C greet call takes about that long)
// end either answered, or with the caller's context error, and every call
// ends in one event saying the same.
func TestCallerDeadlineIsNeverACrash(t *testing.T) {
	n := interruptCalls(t)
	rec := &recorder{}
	rt, err := New(context.Background(), Config{CompilationCacheDir: compiledCache, Observer: rec})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Close(context.Background()) })
	pkg := load(t, rt, cgreetDir)
	args, _ := json.Marshal(map[string]string{"name": "deadline"})

	const workers = 4
	var (
		mu                   sync.Mutex
		ok, canceled, failed int
		bad                  []string
	)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rnd := rand.New(rand.NewPCG(uint64(w), 39))
			for i := w; i < n; i += workers {
				d := time.Duration(rnd.Int64N(int64(3*time.Millisecond) + 1))
				ctx, cancel := context.WithTimeout(context.Background(), d)
				res, err := pkg.Call(ctx, CallRequest{Tool: "greet", Arguments: args})
				cancel()
				mu.Lock()
				switch {
				case err != nil && errors.Is(err, context.DeadlineExceeded):
					var crash *Crash
					if errors.As(err, &crash) {
						bad = append(bad, "a crash carrying the deadline: "+err.Error())
					}
					canceled++
				case err != nil:
					failed++
					bad = append(bad, "error: "+err.Error())
				case res.Outcome == OutcomeOK:
					ok++
					_ = res.Release()
				default:
					msg := "outcome " + string(res.Outcome)
					if res.Crash != nil {
						msg += " (" + res.Crash.Reason + ": " + res.Crash.Message + ")"
					}
					bad = append(bad, msg)
					_ = res.Release()
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	t.Logf("%d calls: %d answered, %d ended by the caller's deadline, %d other errors, %d wrong", n, ok, canceled, failed, len(bad))
	if len(bad) > 0 {
		t.Errorf("%d of %d calls under a caller's deadline did not end answered or with the caller's context error; first: %s", len(bad), n, bad[0])
	}
	if canceled == 0 {
		t.Errorf("no call of %d was ended by its deadline: the test did not test interruption", n)
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if len(rec.calls) != n {
		t.Fatalf("%d events for %d calls", len(rec.calls), n)
	}
	counts := map[Outcome]int{}
	for _, e := range rec.calls {
		counts[e.Outcome]++
	}
	if counts[OutcomeOK] != ok || counts[OutcomeCanceled] != canceled {
		t.Errorf("events %v; want %d ok and %d canceled", counts, ok, canceled)
	}
}
