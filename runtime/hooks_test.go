package runtime

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"

	"github.com/subako/subako-runner/internal/devtools/testguest"
)

// The trace shows the whole conversation of discovery and of a call in
// order, and progress brackets compilation and discovery.
func TestTraceAndProgressHooks(t *testing.T) {
	var mu sync.Mutex
	var trace []string
	var progress []string
	rt, err := New(context.Background(), Config{
		CompilationCacheDir: compiledCache,
		Trace: func(e TraceEvent) {
			mu.Lock()
			defer mu.Unlock()
			s := string(e.Kind)
			switch e.Kind {
			case TraceSend, TraceReceive:
				var m struct {
					Method string          `json:"method"`
					ID     json.RawMessage `json:"id"`
				}
				if err := json.Unmarshal(e.Line, &m); err != nil {
					t.Errorf("traced line is not the JSON-RPC line: %q", e.Line)
				}
				s += " " + m.Method
			case TraceExit:
				s += " " + e.Exit
			case TraceStderr:
				if !strings.HasPrefix(string(e.Line), "greet: ") || strings.Contains(string(e.Line), "\n") {
					t.Errorf("stderr line %q", e.Line)
				}
			}
			if e.Instance < 1 {
				t.Errorf("instance %d", e.Instance)
			}
			if s == "stderr" && len(trace) > 0 && trace[len(trace)-1] == s {
				return // a run of stderr lines counts once
			}
			trace = append(trace, s)
		},
		Progress: func(e ProgressEvent) {
			mu.Lock()
			defer mu.Unlock()
			s := string(e.Step)
			if e.Done {
				s += " done"
			}
			if e.Step == StepCompile && e.Bytes <= 0 {
				t.Errorf("compile event without the module size: %+v", e)
			}
			progress = append(progress, s)
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close(context.Background())
	pkg := load(t, rt, makePackage(t, testguest.Go(t, guests+"greet"), nil))
	call(t, pkg, CallRequest{Tool: "greet", Arguments: json.RawMessage(`{"name":"Ada"}`)})

	mu.Lock()
	defer mu.Unlock()
	got := strings.Join(trace, "\n")
	want := strings.Join([]string{
		"send server/discover", "stderr", "receive ", "send tools/list", "stderr", "receive ", "close", "exit exit code 0",
		"send tools/call", "stderr", "receive ", "close", "exit exit code 0",
	}, "\n")
	if got != want {
		t.Errorf("trace:\n%s\nwant:\n%s", got, want)
	}
	if p := strings.Join(progress, ","); p != "compile,compile done,discover,discover done" {
		t.Errorf("progress %s", p)
	}
}
