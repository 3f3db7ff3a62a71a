package runtime

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/subako/subako-runner/internal/devtools/testguest"
	"github.com/subako/subako-runner/limits"
)

// newWorkerRuntime returns a runtime of IsolationWorkers whose workers are
// this test binary (TestMain calls ServeWorker), closed at the end of the
// test. The workers may read the repository's testdata and the test's
// temporary directories.
func newWorkerRT(t testing.TB, lim *limits.Limits, cfg Config) *Runtime {
	t.Helper()
	testdata, err := filepath.Abs("../testdata")
	if err != nil {
		t.Fatal(err)
	}
	cfg.Limits = lim
	cfg.CompilationCacheDir = compiledCache
	cfg.Isolation = IsolationWorkers
	if cfg.Workers.Count == 0 {
		cfg.Workers.Count = 1
	}
	guestCache := testguest.CacheDir()
	if err := os.MkdirAll(guestCache, 0o755); err != nil {
		t.Fatal(err)
	}
	cfg.Workers.ReadOnly = append(cfg.Workers.ReadOnly, testdata, guestCache)
	// The tests' packages and volumes are in temporary directories.
	cfg.Workers.ReadWrite = append(cfg.Workers.ReadWrite, os.TempDir())
	rt, err := New(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Close(context.Background()) })
	return rt
}

// isolations runs f once with an in-process runtime and once with a
// runtime of IsolationWorkers: a test of behaviour the two must share.
func isolations(t *testing.T, f func(t *testing.T, newRT func(lim *limits.Limits) *Runtime)) {
	t.Run("in-process", func(t *testing.T) {
		f(t, func(lim *limits.Limits) *Runtime { return newRuntime(t, lim) })
	})
	t.Run("workers", func(t *testing.T) {
		f(t, func(lim *limits.Limits) *Runtime { return newWorkerRT(t, lim, Config{}) })
	})
}

func TestWorkerCallMatchesInProcess(t *testing.T) {
	t.Parallel()
	args, _ := json.Marshal(map[string]string{"name": "Ada"})
	var views []string
	for _, rt := range []*Runtime{newRuntime(t, nil), newWorkerRT(t, nil, Config{})} {
		pkg := load(t, rt, "../testdata/packages/cgreet")
		res := call(t, pkg, CallRequest{Tool: "greet", Arguments: args})
		if res.Outcome != OutcomeOK {
			t.Fatalf("outcome %s, crash %+v", res.Outcome, res.Crash)
		}
		views = append(views, viewText(res))
	}
	if views[0] != views[1] || !strings.Contains(views[1], "Ada") {
		t.Fatalf("in-process view %q, worker view %q", views[0], views[1])
	}
}

func TestWorkerSandboxReport(t *testing.T) {
	t.Parallel()
	rt := newWorkerRT(t, nil, Config{})
	r := rt.Sandbox()
	t.Logf("sandbox: %+v", r)
	if !r.Workers {
		t.Fatal("a runtime of IsolationWorkers reports no workers")
	}
	if (SandboxReport{}).Complete() {
		t.Fatal("the in-process report claims to be complete")
	}
	if rt2 := newRuntime(t, nil); rt2.Sandbox().Workers {
		t.Fatal("an in-process runtime reports workers")
	}
	// RequireSandbox holds New to what the report says.
	strict := newWorkerRT(t, nil, Config{Workers: WorkerConfig{RequireSandbox: r.Complete()}})
	if !strict.Sandbox().Complete() && r.Complete() {
		t.Fatal("RequireSandbox let an incomplete sandbox through")
	}
}
