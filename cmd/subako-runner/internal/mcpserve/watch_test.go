package mcpserve

import (
	"context"
	"encoding/base64"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
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
	watching := make(chan struct{})
	go func() {
		watched <- srv.Watch(ctx, WatchOptions{
			Path:     dir,
			Interval: 20 * time.Millisecond,
			Load:     func(ctx context.Context) (*runtime.Package, error) { return f.rt.Load(ctx, dir) },
			Reloaded: func(n int, err error) { reloads <- reload{n, err} },
			Watching: func() { close(watching) },
		})
	}()
	<-watching // an edit before the first look would be the watcher's baseline
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

// TestWatchBuild: with Build, a change to a source file runs the build,
// and the module it writes is loaded and served; a failing build keeps
// the old package and says why; the build's own output is no change.
func TestWatchBuild(t *testing.T) {
	if _, err := exec.LookPath("base64"); err != nil {
		t.Skip("no base64 on PATH")
	}
	f := newFixture(t)
	project := t.TempDir()
	dir := filepath.Join(project, "package")
	rust, err := os.ReadFile(testdata + "packages/rustgreet/module.wasm")
	if err != nil {
		t.Fatal(err)
	}
	cgreet, err := os.ReadFile(testdata + "packages/cgreet/module.wasm")
	if err != nil {
		t.Fatal(err)
	}
	os.MkdirAll(filepath.Join(project, "src"), 0o755)
	os.MkdirAll(dir, 0o755)
	os.WriteFile(filepath.Join(dir, runtime.ManifestFile), []byte(`{"abi":1,"name":"built"}`), 0o644)
	os.WriteFile(filepath.Join(dir, runtime.ModuleFile), rust, 0o644)
	source := filepath.Join(project, "src", "module.b64")
	os.WriteFile(source, []byte(base64.StdEncoding.EncodeToString(rust)), 0o644)
	srv := New(f.load(t, dir), Options{Logger: f.log})
	t.Cleanup(func() { srv.Close(context.Background()) })

	builds := make(chan error, 8)
	reloads := make(chan int, 8)
	outFile := filepath.Join(t.TempDir(), "build.out")
	out, err := os.Create(outFile) // the build's writes and the test's reads, without a shared buffer
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { out.Close() })
	output := func() string { b, _ := os.ReadFile(outFile); return string(b) }
	ctx, cancel := context.WithCancel(context.Background())
	watched := make(chan error, 1)
	watching := make(chan struct{})
	go func() {
		watched <- srv.Watch(ctx, WatchOptions{
			Path:        dir,
			Interval:    20 * time.Millisecond,
			Load:        func(ctx context.Context) (*runtime.Package, error) { return f.rt.Load(ctx, dir) },
			Reloaded:    func(n int, err error) { reloads <- n },
			Build:       "base64 -d src/module.b64 > package/module.wasm.new && mv package/module.wasm.new package/module.wasm && echo built > src/build.log",
			BuildDir:    project,
			BuildOutput: out,
			Built:       func(err error) { builds <- err },
			Watching:    func() { close(watching) },
		})
	}()
	<-watching // an edit before the first look would be the watcher's baseline
	t.Cleanup(func() {
		cancel()
		if err := <-watched; err != nil {
			t.Error(err)
		}
	})
	cs, _ := connectStdio(t, srv, "2026-07-28", nil)
	if names := toolNames(t, cs); !slices.Equal(names, []string{"greet"}) {
		t.Fatalf("tools %v before the change", names)
	}

	replaceFile(t, source, []byte("this is not base64 !!"))
	if err := <-builds; err == nil {
		t.Fatal("a build that fails reported no error")
	}
	if !strings.Contains(output(), "build failed") || !strings.Contains(output(), "sources changed: running base64 -d") {
		t.Errorf("the build output does not say what ran and that it failed:\n%s", output())
	}
	if names := toolNames(t, cs); !slices.Equal(names, []string{"greet"}) {
		t.Errorf("tools %v after a failed build; the old package must stay", names)
	}

	replaceFile(t, source, []byte(base64.StdEncoding.EncodeToString(cgreet)))
	if err := <-builds; err != nil {
		t.Fatalf("the build failed: %v\n%s", err, output())
	}
	if n := <-reloads; n <= 1 {
		t.Fatalf("reloaded with %d tools; want cgreet's", n)
	}
	if names := toolNames(t, cs); !slices.Contains(names, "trap") {
		t.Errorf("tools %v after the build; want cgreet's", names)
	}
	// The build wrote src/build.log: no second build for that.
	select {
	case err := <-builds:
		t.Errorf("a second build (%v) for what the build itself wrote", err)
	case <-time.After(200 * time.Millisecond):
	}
}
