package runtime

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/subako/subako-runner/internal/devtools/testguest"
)

type recorder struct {
	mu      sync.Mutex
	uploads []UploadEvent
	calls   []CallEvent
}

func (r *recorder) Upload(_ context.Context, e UploadEvent) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.uploads = append(r.uploads, e)
}

func (r *recorder) Call(_ context.Context, e CallEvent) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls = append(r.calls, e)
}

func TestObserverAndLogLines(t *testing.T) {
	t.Parallel()
	core, logs := observer.New(zap.InfoLevel)
	rec := &recorder{}
	rt, err := New(context.Background(), Config{Logger: zap.New(core), Observer: rec, CompilationCacheDir: compiledCache})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close(context.Background())

	pkg := load(t, rt, makePackage(t, testguest.Go(t, guests+"greet"), nil))
	const secret = "SECRET-ARGUMENT-VALUE"
	call(t, pkg, CallRequest{Tool: "greet", Arguments: json.RawMessage(`{"name":"` + secret + `"}`)})
	if _, err := rt.Load(context.Background(), t.TempDir()); err == nil {
		t.Fatal("an empty directory loaded")
	}

	if len(rec.uploads) != 2 || rec.uploads[0].Outcome != "ok" || rec.uploads[0].Tools == 0 || len(rec.uploads[0].ModuleSHA256) != 64 {
		t.Fatalf("uploads %+v", rec.uploads)
	}
	if rec.uploads[1].Outcome != "rejected" || !strings.Contains(strings.Join(rec.uploads[1].Codes, ","), "bad_manifest") {
		t.Fatalf("rejected upload %+v", rec.uploads[1])
	}
	if len(rec.calls) != 1 || rec.calls[0].Tool != "greet" || rec.calls[0].Outcome != OutcomeOK || rec.calls[0].Stats.MemoryBytes == 0 {
		t.Fatalf("calls %+v", rec.calls)
	}
	if n := logs.FilterMessage("upload").Len(); n != 2 {
		t.Errorf("%d upload log lines, want one per Load", n)
	}
	if n := logs.FilterMessage("call").Len(); n != 1 {
		t.Errorf("%d call log lines, want 1", n)
	}
	for _, entry := range logs.All() {
		if strings.Contains(fmt.Sprint(entry.Message, entry.ContextMap()), secret) {
			t.Errorf("a log line carries the call's arguments: %v", entry.ContextMap())
		}
	}
}
