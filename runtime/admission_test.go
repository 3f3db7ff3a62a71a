package runtime

import (
	"context"
	"encoding/json"
	"errors"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/subako/subako-runner/limits"
)

// waitQueued waits until n calls wait for their turn (a condition, not a
// time: the loop ends when the calls are queued).
func waitQueued(t *testing.T, rt *Runtime, n int64) {
	t.Helper()
	for rt.eng.Waiting() != n {
		time.Sleep(time.Millisecond)
	}
}

// With one instance allowed, calls beyond it wait their turn and then run
// with their whole time limit: the limit starts when the instance starts.
// The test holds the one place itself (as a running instance would) for
// longer than the calls' timeout, so a clock that started at the queue
// would end both calls as timeout; then the two real calls run one after
// the other, the second waiting for the first's instance to end. Both
// succeed, and the stats and the observer's events show the wait.
func TestAdmissionQueuesCallsBeyondTheLimit(t *testing.T) {
	t.Parallel()
	lim := limits.Default()
	lim.CallTimeout = 2 * time.Second
	rec := &recorder{}
	rt, err := New(context.Background(), Config{Limits: &lim, MaxInstances: 1, Observer: rec, CompilationCacheDir: compiledCache, TempDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Close(context.Background()) })
	pkg := load(t, rt, "../testdata/packages/cgreet")

	held, _, err := rt.eng.Admit(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	results := make([]*Result, 2)
	var wg sync.WaitGroup
	for i := range results {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, err := pkg.Call(context.Background(), CallRequest{Tool: "greet", Arguments: json.RawMessage(`{"name":"Ada"}`)})
			if err != nil {
				t.Error(err)
				return
			}
			results[i] = res
		}()
	}
	waitQueued(t, rt, 2)
	time.Sleep(lim.CallTimeout + 500*time.Millisecond) // longer than either call may run
	held.Done()
	wg.Wait()
	if t.Failed() {
		return
	}
	var queued []int
	for i, res := range results {
		defer res.Release()
		if res.Outcome != OutcomeOK {
			t.Fatalf("call %d: outcome %s crash %+v (a queued call's clock must start when it runs)", i, res.Outcome, res.Crash)
		}
		if res.Stats.QueueWait < lim.CallTimeout || Milliseconds(res.Stats.QueueWait) <= 0 {
			t.Errorf("call %d: queue wait %v, want at least the %v the place was held", i, res.Stats.QueueWait, lim.CallTimeout)
		}
		if res.Stats.Duration >= res.Stats.QueueWait {
			t.Errorf("call %d: duration %v counts the queue wait %v", i, res.Stats.Duration, res.Stats.QueueWait)
		}
		queued = append(queued, res.Stats.Queued)
	}
	sort.Ints(queued)
	if queued[0] != 1 || queued[1] != 2 {
		t.Errorf("queue lengths %v, want [1 2]", queued)
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if len(rec.calls) != 2 || rec.calls[0].Stats.QueueWait == 0 || rec.calls[1].Stats.QueueWait == 0 {
		t.Errorf("observer events do not show the wait: %+v", rec.calls)
	}
	if n := rt.eng.Waiting(); n != 0 {
		t.Errorf("after the calls: %d still counted as waiting", n)
	}
}

// A call waiting for its turn gives up when its context ends, with the
// context's error (not a crash, not a hang), and leaves the queue.
func TestAdmissionWaitEndsWithTheContext(t *testing.T) {
	t.Parallel()
	rt, err := New(context.Background(), Config{MaxInstances: 1, CompilationCacheDir: compiledCache, TempDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Close(context.Background()) })
	pkg := load(t, rt, "../testdata/packages/cgreet")
	held, _, err := rt.eng.Admit(context.Background())
	if err != nil {
		t.Fatal(err)
	}

	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() {
		res, err := pkg.Call(ctx, CallRequest{Tool: "greet", Arguments: json.RawMessage(`{"name":"Ada"}`)})
		if res != nil {
			err = errors.Join(err, errors.New("a result came back"))
		}
		errc <- err
	}()
	waitQueued(t, rt, 1)
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled while queued: %v, want context.Canceled", err)
	}

	dctx, dcancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer dcancel()
	if res, err := pkg.Call(dctx, CallRequest{Tool: "greet", Arguments: json.RawMessage(`{"name":"Ada"}`)}); !errors.Is(err, context.DeadlineExceeded) || res != nil {
		t.Fatalf("deadline while queued: %v %v, want context.DeadlineExceeded", res, err)
	}
	if n := rt.eng.Waiting(); n != 0 {
		t.Fatalf("%d calls still counted as waiting", n)
	}
	held.Done()
	res := call(t, pkg, CallRequest{Tool: "greet", Arguments: json.RawMessage(`{"name":"Ada"}`)})
	if res.Outcome != OutcomeOK || res.Stats.QueueWait != 0 || res.Stats.Queued != 0 {
		t.Fatalf("a call with a free place: outcome %s, queue wait %v, queued %d", res.Outcome, res.Stats.QueueWait, res.Stats.Queued)
	}
}
