package runtime

import (
	"context"
	"encoding/json"
	"errors"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/subako/subako-runner/limits"
)

// countingObserver counts events by outcome.
type countingObserver struct {
	mu       sync.Mutex
	calls    int
	outcomes map[Outcome]int
	codes    map[string]int
}

func (o *countingObserver) Upload(context.Context, UploadEvent) {}

func (o *countingObserver) Call(_ context.Context, e CallEvent) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.calls++
	o.outcomes[e.Outcome]++
	if e.Code != "" {
		o.codes[e.Code]++
	}
}

// Every Call ends in exactly one Observer event, whatever it returns: a
// result, a refusal (unknown tool, bad arguments), a host error (bad
// limits), or the caller's cancellation before the call (already done),
// while it waits for its turn, or while its instance runs. Before, only
// calls whose instance ran were counted (1,766 of 5,777 cancels seen).
func TestEveryCallEndsInOneObserverEvent(t *testing.T) {
	t.Parallel()
	obs := &countingObserver{outcomes: map[Outcome]int{}, codes: map[string]int{}}
	rt, err := New(context.Background(), Config{MaxInstances: 2, Observer: obs, CompilationCacheDir: compiledCache, TempDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Close(context.Background()) })
	pkg := load(t, rt, "../testdata/packages/cgreet")
	bad := limits.Default()
	bad.Memory = -1
	greet := json.RawMessage(`{"name":"Ada"}`)
	kinds := []func(ctx context.Context) (*Result, error){
		func(ctx context.Context) (*Result, error) {
			return pkg.Call(ctx, CallRequest{Tool: "greet", Arguments: greet})
		},
		func(ctx context.Context) (*Result, error) { return pkg.Call(ctx, CallRequest{Tool: "nope"}) },
		func(ctx context.Context) (*Result, error) {
			return pkg.Call(ctx, CallRequest{Tool: "greet", Arguments: json.RawMessage(`[1]`)})
		},
		func(ctx context.Context) (*Result, error) {
			return pkg.Call(ctx, CallRequest{Tool: "greet", Arguments: greet, Limits: &bad})
		},
	}
	const n = 400
	var returned atomic.Int64
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithCancelCause(context.Background())
			defer cancel(nil)
			switch rand.IntN(4) {
			case 0: // no cancel
			case 1:
				cancel(errors.New("cancelled before the call"))
			default: // cancelled at a random point: queued, starting or running
				stop := time.AfterFunc(time.Duration(rand.IntN(3000))*time.Microsecond, func() { cancel(errors.New("cancelled on the way")) })
				defer stop.Stop()
			}
			res, err := kinds[i%len(kinds)](ctx)
			if res != nil {
				res.Release()
			}
			if (res == nil) == (err == nil) {
				t.Errorf("call %d: result %v and error %v", i, res, err)
			}
			returned.Add(1)
		}()
	}
	wg.Wait()
	obs.mu.Lock()
	defer obs.mu.Unlock()
	if int64(obs.calls) != returned.Load() || obs.calls != n {
		t.Fatalf("%d calls returned, %d observer events (by outcome %v)", returned.Load(), obs.calls, obs.outcomes)
	}
	for _, o := range []Outcome{OutcomeOK, OutcomeRefused, OutcomeError, OutcomeCanceled} {
		if obs.outcomes[o] == 0 {
			t.Errorf("no event with outcome %s among %v", o, obs.outcomes)
		}
	}
	if obs.codes[CodeUnknownTool] == 0 || obs.codes[CodeBadArguments] == 0 {
		t.Errorf("refusal codes %v, want both", obs.codes)
	}
	t.Logf("events by outcome: %v", obs.outcomes)
}

// A call cancelled while it waits for its turn, or before it starts,
// returns an error that names the call's tool and carries the context's
// cause (it was a bare ctx.Err()), and the observer sees it as canceled.
func TestCancelBeforeTheInstanceStartsNamesTheCall(t *testing.T) {
	t.Parallel()
	rec := &recorder{}
	rt, err := New(context.Background(), Config{MaxInstances: 1, Observer: rec, CompilationCacheDir: compiledCache, TempDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Close(context.Background()) })
	pkg := load(t, rt, "../testdata/packages/cgreet")
	held, _, err := rt.eng.Admit(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer held.Done()

	cause := errors.New("the agent went away")
	queued, cancel := context.WithCancelCause(context.Background())
	errc := make(chan error, 1)
	go func() {
		_, err := pkg.Call(queued, CallRequest{Tool: "greet", Arguments: json.RawMessage(`{"name":"Ada"}`)})
		errc <- err
	}()
	waitQueued(t, rt, 1)
	cancel(cause)
	before, cancelBefore := context.WithCancelCause(context.Background())
	cancelBefore(cause)
	_, errBefore := pkg.Call(before, CallRequest{Tool: "greet", Arguments: json.RawMessage(`{"name":"Ada"}`)})
	for what, err := range map[string]error{"queued": <-errc, "already cancelled": errBefore} {
		if !errors.Is(err, context.Canceled) || !errors.Is(err, cause) || !strings.Contains(err.Error(), "greet") {
			t.Errorf("%s: %v; want context.Canceled, the cause and the tool's name", what, err)
		}
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if len(rec.calls) != 2 || rec.calls[0].Outcome != OutcomeCanceled || rec.calls[1].Outcome != OutcomeCanceled || rec.calls[0].Tool != "greet" {
		t.Fatalf("observer events %+v; want two canceled greet calls", rec.calls)
	}
}
