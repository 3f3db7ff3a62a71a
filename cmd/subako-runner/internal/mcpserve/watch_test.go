package mcpserve

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/subako/subako-runner/internal/devtools/testguest"
	"github.com/subako/subako-runner/runtime"
)

// TestWatch: the author replaces module.wasm; a broken build keeps the old
// package in service, a good one with a new tool is swapped in, and clients
// of both lifecycles get list_changed and then see the new tool.
func TestWatch(t *testing.T) {
	f := newFixture(t)
	dir := testguest.Package(t, testdata+"packages/rustgreet/module.wasm", "watched", nil)
	srv := New(f.load(t, dir), Options{Logger: f.log})
	t.Cleanup(func() { srv.Close(context.Background()) })

	type reload struct {
		tools int
		err   error
	}
	reloads := make(chan reload, 4)
	ctx, cancel := context.WithCancel(context.Background())
	watched := make(chan error, 1)
	go func() {
		watched <- srv.Watch(ctx, WatchOptions{
			Path:     dir,
			Interval: 20 * time.Millisecond,
			Load:     func(ctx context.Context) (*runtime.Package, error) { return f.rt.Load(ctx, dir) },
			Reloaded: func(n int, err error) { reloads <- reload{n, err} },
		})
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-watched; err != nil {
			t.Error(err)
		}
	})

	changed := map[string]chan struct{}{}
	sessions := map[string]*mcp.ClientSession{}
	for _, v := range []string{"2026-07-28", "2025-11-25"} {
		ch := make(chan struct{}, 8)
		changed[v] = ch
		sessions[v], _ = connectStdio(t, srv, v, &mcp.ClientOptions{
			ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { ch <- struct{}{} },
		})
		if names := toolNames(t, sessions[v]); !slices.Equal(names, []string{"greet"}) {
			t.Fatalf("%s: tools %v before the change", v, names)
		}
	}

	module := filepath.Join(dir, runtime.ModuleFile)
	replaceFile(t, module, []byte("\x00asm\x01\x00\x00\x00 half a build"))
	if r := <-reloads; r.err == nil {
		t.Fatalf("a broken module was loaded (%d tools)", r.tools)
	}
	for v, cs := range sessions {
		if names := toolNames(t, cs); !slices.Equal(names, []string{"greet"}) {
			t.Errorf("%s: tools %v after a broken build; the old package must stay", v, names)
		}
		res := call(t, context.Background(), cs, "greet", map[string]any{"name": "Ada"})
		if res.IsError {
			t.Errorf("%s: the old package stopped serving: %q", v, text(res))
		}
	}

	cgreet, err := os.ReadFile(testdata + "packages/cgreet/module.wasm")
	if err != nil {
		t.Fatal(err)
	}
	replaceFile(t, module, cgreet)
	if r := <-reloads; r.err != nil || r.tools != 2 {
		t.Fatalf("reload: %d tools, %v", r.tools, r.err)
	}
	for v, cs := range sessions {
		select {
		case <-changed[v]:
		case <-time.After(time.Minute):
			t.Fatalf("%s: no notifications/tools/list_changed", v)
		}
		if names := toolNames(t, cs); !slices.Equal(names, []string{"greet", "trap"}) {
			t.Errorf("%s: tools %v after the change", v, names)
		}
		if res := call(t, context.Background(), cs, "trap", map[string]any{}); !res.IsError {
			t.Errorf("%s: the new tool did not run the new module", v)
		}
	}
}

// replaceFile puts data at path in one rename, so the watcher never sees
// the file half written: what it loads is exactly the build the test
// stages (an os.WriteFile truncates first, and on a loaded machine the
// empty file can hold still for a whole poll).
func replaceFile(t *testing.T, path string, data []byte) {
	t.Helper()
	tmp := path + ".new"
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}
