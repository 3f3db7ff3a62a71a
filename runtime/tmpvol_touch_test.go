package runtime

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/subako/subako-runner/internal/tmpvol"

	"github.com/subako/subako-runner/hostmod/subakohttp"
	"github.com/subako/subako-runner/internal/devtools/testguest"
)

// volop runs one operation of the volops guest and releases its result.
func volop(t *testing.T, pkg *Package, op, path, to string) string {
	t.Helper()
	args, _ := json.Marshal(map[string]string{"op": op, "path": path, "to": to})
	res, err := pkg.Call(context.Background(), CallRequest{Tool: "fs", Arguments: args})
	if err != nil {
		t.Fatalf("%s %s: %v", op, path, err)
	}
	if res.Outcome == OutcomeCrashed {
		t.Fatalf("%s %s crashed: %+v", op, path, res.Crash)
	}
	text := viewText(res)
	if err := res.Release(); err != nil {
		t.Fatal(err)
	}
	return text
}

// expectFresh runs enough calls to go through the whole ready pool, and
// each must see /volume/tmp as mkdir left it: empty, with one link from
// its parent, and its access, modification and change times all the
// same. A directory an earlier call read (atime), wrote in or set the
// times of (mtime, ctime), that went back to the pool unlooked, would
// show here.
func expectFresh(t *testing.T, rt *Runtime, pkg *Package, after string) {
	t.Helper()
	for i := range tmpvol.Prepared + 1 {
		rt.volumes.Flush()
		text := volop(t, pkg, "fresh", "", "")
		var a, m, c, nlink, entries uint64
		if _, err := fmt.Sscanf(strings.TrimPrefix(text, "text:"), "atime=%d mtime=%d ctime=%d nlink=%d entries=%d", &a, &m, &c, &nlink, &entries); err != nil {
			t.Fatalf("after %s: call %d: %q: %v", after, i, text, err)
		}
		if a != m || m != c || nlink != 2 || entries != 0 {
			t.Fatalf("after %s: call %d got a /volume/tmp that is not fresh: %s", after, i, text)
		}
	}
}

// Every way a guest can touch /volume/tmp (through WASI, listing it,
// reading its metadata, setting its times, making, removing or linking
// entries, even failing to) makes Release look at the directory before
// it goes back to the pool, and the calls after it get a fresh one. A
// call that never touches it gives it back without a look.
func TestEveryTouchOfTmpIsLookedAt(t *testing.T) {
	if !tmpvol.Recycles(t.TempDir()) {
		t.Skip("no directory metadata to compare on this platform: nothing is reused")
	}
	t.Parallel()
	rt := newRuntimeIn(t, t.TempDir())
	pkg := load(t, rt, makePackage(t, testguest.Go(t, guests+"volops"), nil))

	unlooked := unlookedVolumes(rt)
	if text := volop(t, pkg, "none", "", ""); text != "text:ok" {
		t.Fatalf("none: %q", text)
	}
	if unlookedVolumes(rt) != unlooked+1 {
		t.Fatal("a call that never touched /volume/tmp did not give it back without a look: the test proves nothing")
	}
	expectFresh(t, rt, pkg, "none")

	tests := []struct{ op, path, to string }{
		{"list", "/volume/tmp", ""},
		{"stat", "/volume/tmp", ""},
		{"stat", "/volume/tmp/missing", ""},
		{"lstat", "/volume/tmp/missing", ""},
		{"chtimes", "/volume/tmp", ""},
		{"create", "/volume/tmp/f", ""},
		{"churn", "/volume/tmp/f", ""},
		{"mkdir", "/volume/tmp/d", ""},
		{"open", "/volume/tmp", ""},
		{"open", "/volume/tmp/missing", ""},
		{"symlink", "/volume/tmp/l", "x"},
		{"symlink", "/volume/tmp/l", "../../etc/passwd"},
		{"link", "/volume/tmp/missing", "/volume/tmp/l"},
		{"rename", "/volume/tmp/missing", "/volume/tmp/l"},
		{"readlink", "/volume/tmp/missing", ""},
		{"remove", "/volume/tmp/missing", ""},
		{"fstat3", "", ""},
		{"readdir3", "", ""},
	}
	for _, tt := range tests {
		name := tt.op + " " + tt.path + " " + tt.to
		rt.volumes.Flush()
		unlooked := unlookedVolumes(rt)
		volop(t, pkg, tt.op, tt.path, tt.to)
		if unlookedVolumes(rt) != unlooked {
			t.Errorf("after %s: /volume/tmp went back to the pool without a look", name)
		}
		expectFresh(t, rt, pkg, name)
	}
}

// A subako_http download into /volume/tmp touches it too.
func TestHTTPDownloadIntoTmpIsLookedAt(t *testing.T) {
	if !tmpvol.Recycles(t.TempDir()) {
		t.Skip("no directory metadata to compare on this platform: nothing is reused")
	}
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "downloaded") }))
	defer srv.Close()
	host := fmt.Sprintf("api.test:%d", srv.Listener.Addr().(*net.TCPAddr).Port)
	policy, err := subakohttp.NewPolicy(subakohttp.PolicyConfig{
		Allow:        []string{host},
		Resolve:      map[string][]string{host: {"127.0.0.1"}},
		AllowPrivate: []string{"127.0.0.1/32"},
	})
	if err != nil {
		t.Fatal(err)
	}
	rt := newRuntimeIn(t, t.TempDir())
	probe := load(t, rt, makePackage(t, testguest.Go(t, guests+"httpprobe"), nil))
	ops := load(t, rt, makePackage(t, testguest.Go(t, guests+"volops"), nil))
	for _, out := range []string{"/volume/tmp/dl.txt", "/volume/tmp/missing/dl.txt"} {
		rt.volumes.Flush()
		unlooked := unlookedVolumes(rt)
		res, doc := httpCall(t, probe, policy, nil, "", fmt.Sprintf(`{"url":"http://%s/","output":{"type":"file","path":%q}}`, host, out))
		if (doc["ok"] != nil) != (out == "/volume/tmp/dl.txt") {
			t.Fatalf("download to %s: %v", out, doc)
		}
		res.Release()
		if unlookedVolumes(rt) != unlooked {
			t.Errorf("after a download to %s: /volume/tmp went back to the pool without a look", out)
		}
		expectFresh(t, rt, ops, "a download to "+out)
	}
}

// /package is opened once for all the calls of a Package, which share the
// root at once; Close closes it, and a call after Close fails cleanly.
func TestPackageRootIsSharedAndClosed(t *testing.T) {
	t.Parallel()
	rt := newRuntime(t, nil)
	dir := makePackage(t, testguest.Go(t, guests+"greet"), map[string]string{"assets/greeting.txt": "Ahoy"})
	pkg, err := rt.Load(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	greet := func() error {
		res, err := pkg.Call(context.Background(), CallRequest{Tool: "greet", Arguments: json.RawMessage(`{"name":"Ada"}`)})
		if err != nil {
			return err
		}
		defer res.Release()
		if !strings.Contains(viewText(res), "Ahoy, Ada!") {
			return fmt.Errorf("greet did not read /package: %s", viewText(res))
		}
		return nil
	}
	if err := greet(); err != nil {
		t.Fatal(err)
	}
	root := pkg.pkgRoot.root
	if root == nil {
		t.Fatal("a call mounted /package without the package's shared root")
	}
	var wg sync.WaitGroup
	errs := make([]error, 4)
	for i := range errs {
		wg.Go(func() { errs[i] = greet() })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	if pkg.pkgRoot.root != root {
		t.Fatal("concurrent calls opened /package anew")
	}
	if err := pkg.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := root.Stat("."); !errors.Is(err, os.ErrClosed) {
		t.Fatalf("the closed package's root is still open: %v", err)
	}
	if err := greet(); !errors.Is(err, errPackageClosed) {
		t.Fatalf("a call after Close: %v, want %v", err, errPackageClosed)
	}
}

// A caller's /volume/data (or /skills) that holds the runner's temp
// volumes, or lies inside them, would hand the guest other calls'
// /volume/tmp: the attack lists them through /volume/data. Such a call is
// refused before anything runs; a directory beside the temp root is fine.
func TestMountsHoldingTheTempVolumesAreRefused(t *testing.T) {
	t.Parallel()
	base := t.TempDir()
	rt := newRuntimeIn(t, filepath.Join(base, "volumes"))
	pkg := load(t, rt, makePackage(t, testguest.Go(t, guests+"volops"), nil))
	link := filepath.Join(t.TempDir(), "link-to-base")
	if err := os.Symlink(base, link); err != nil {
		t.Fatal(err)
	}
	inside := filepath.Join(base, "volumes", "planted")
	beside := filepath.Join(base, "data")
	for _, dir := range []string{inside, beside} {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	args := json.RawMessage(`{"op":"list","path":"/volume/data/volumes"}`)
	for _, tc := range []struct {
		name string
		req  CallRequest
	}{
		{"data holds the root", CallRequest{Data: base}},
		{"data is a link to a directory holding the root", CallRequest{Data: link}},
		{"data is the root", CallRequest{Data: filepath.Join(base, "volumes")}},
		{"data is inside the root", CallRequest{Data: inside}},
		{"skills hold the root", CallRequest{Skills: base}},
	} {
		tc.req.Tool, tc.req.Arguments = "fs", args
		res, err := pkg.Call(context.Background(), tc.req)
		if err == nil {
			text := viewText(res)
			res.Release()
			t.Errorf("%s: the call ran (%s: %q); want it refused", tc.name, res.Outcome, text)
			continue
		}
		if !strings.Contains(err.Error(), "temp volumes") {
			t.Errorf("%s: error %q does not say why", tc.name, err)
		}
	}
	res, err := pkg.Call(context.Background(), CallRequest{Tool: "fs", Data: beside, Arguments: json.RawMessage(`{"op":"list","path":"/volume/data"}`)})
	if err != nil {
		t.Fatalf("a data directory beside the temp root: %v", err)
	}
	defer res.Release()
	if res.Outcome != OutcomeOK {
		t.Errorf("a data directory beside the temp root: %s %q", res.Outcome, viewText(res))
	}
}

// A package whose directory holds the temp volumes is refused too: its
// /package mount would show the guest every call's /volume/tmp. Load
// refuses it at discovery, the first instance that mounts it.
func TestPackageHoldingTheTempVolumesIsRefused(t *testing.T) {
	t.Parallel()
	dir := makePackage(t, testguest.Go(t, guests+"volops"), map[string]string{"asset.txt": "x"})
	rt := newRuntimeIn(t, filepath.Join(dir, "volumes"))
	pkg, err := rt.Load(context.Background(), dir)
	if err == nil {
		pkg.Close(context.Background())
		t.Fatal("a package holding the temp volumes was loaded")
	}
	if !strings.Contains(err.Error(), "temp volumes") {
		t.Errorf("error %q does not say why", err)
	}
}
