package runtime

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/subako/subako-runner/internal/tmpvol"

	"go.uber.org/zap"

	"github.com/subako/subako-runner/internal/devtools/testguest"
)

// newRuntimeIn is newRuntime with its temp volumes under root.
func newRuntimeIn(t testing.TB, root string) *Runtime {
	t.Helper()
	rt, err := New(context.Background(), Config{CompilationCacheDir: compiledCache, TempDir: root})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Close(context.Background()) })
	return rt
}

// Each call gets a fresh, empty /volume/tmp, whatever the call before it
// left there, released or not; the runtime's directories live under its
// root; and Close removes them all, unreleased ones included.
func TestEachCallGetsAFreshTmp(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	rt, err := New(context.Background(), Config{CompilationCacheDir: compiledCache, TempDir: root})
	if err != nil {
		t.Fatal(err)
	}
	pkg := load(t, rt, makePackage(t, testguest.Go(t, guests+"greet"), nil))
	write := func() *Result {
		res, err := pkg.Call(context.Background(), CallRequest{Tool: "write_file", Arguments: json.RawMessage(`{"path":"/volume/tmp/left.txt","text":"from the call before"}`)})
		if err != nil || res.Outcome != OutcomeOK {
			t.Fatalf("write_file: %v %+v", err, res)
		}
		return res
	}
	released := write()
	releasedDir := released.TmpDir
	released.Release()
	kept := write()                      // not released: its files stay until Close
	for i := range 2 * tmpvol.Prepared { // past the prepared pool, into new ones
		res, err := pkg.Call(context.Background(), CallRequest{Tool: "read_file", Arguments: json.RawMessage(`{"path":"/volume/tmp/left.txt"}`)})
		if err != nil {
			t.Fatal(err)
		}
		if res.Outcome != OutcomeToolError || !strings.Contains(strings.ToLower(viewText(res)), "no such file") {
			t.Fatalf("call %d saw a file an earlier call left: outcome %s view %q", i, res.Outcome, viewText(res))
		}
		entries, err := os.ReadDir(res.TmpDir)
		if err != nil || len(entries) != 0 {
			t.Fatalf("call %d: /volume/tmp %s is not empty: %v %v", i, res.TmpDir, entries, err)
		}
		if !strings.HasPrefix(res.TmpDir, root+string(os.PathSeparator)) {
			t.Fatalf("/volume/tmp %s is not under Config.TempDir %s", res.TmpDir, root)
		}
		if res.TmpDir == releasedDir || res.TmpDir == kept.TmpDir {
			t.Fatalf("call %d got the directory a call wrote in: %s", i, res.TmpDir)
		}
		res.Release()
	}
	if _, err := os.Stat(releasedDir); !os.IsNotExist(err) {
		rt.volumes.Flush()
		if _, err := os.Stat(releasedDir); !os.IsNotExist(err) {
			t.Fatalf("the released directory a call wrote in is still there: %v", err)
		}
	}
	if _, err := os.Stat(filepath.Join(kept.TmpDir, "left.txt")); err != nil {
		t.Fatalf("an unreleased result lost its file before Close: %v", err)
	}
	if err := rt.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir(root)
	if err != nil || len(entries) != 0 {
		t.Fatalf("Close left %v in the root (%v)", entries, err)
	}
	if err := kept.Release(); err != nil { // after Close: harmless
		t.Fatal(err)
	}
}

// A released directory the call never touched goes back to the pool
// without a look: calls that never touch /volume/tmp create, check and
// remove nothing. One the guest changed in any way is removed, even when
// empty: here its times were set.
func TestUntouchedTmpIsReused(t *testing.T) {
	if !tmpvol.Recycles(t.TempDir()) {
		t.Skip("no directory metadata to compare on this platform: nothing is reused")
	}
	t.Parallel()
	rt := newRuntimeIn(t, t.TempDir())
	pkg := load(t, rt, "../testdata/packages/cgreet")
	greet := func() *Result {
		res, err := pkg.Call(context.Background(), CallRequest{Tool: "greet", Arguments: json.RawMessage(`{"name":"Ada"}`)})
		if err != nil || res.Outcome != OutcomeOK {
			t.Fatalf("greet: %v %+v", err, res)
		}
		return res
	}
	for range 3 { // the pool fills; released ones come back
		greet().Release()
		rt.volumes.Flush()
	}
	made, looked := createdVolumes(rt), lookedVolumes(rt)
	for i := range 20 {
		greet().Release()
		rt.volumes.Flush()
		if n := createdVolumes(rt); n != made {
			t.Fatalf("call %d: %d directories made for calls that never touched /volume/tmp", i, n-made)
		}
		if n := lookedVolumes(rt); n != looked {
			t.Fatalf("call %d: %d directories looked at that no call touched", i, n-looked)
		}
	}

	ops := load(t, rt, makePackage(t, testguest.Go(t, guests+"volops"), nil))
	res := call(t, ops, CallRequest{Tool: "fs", Arguments: json.RawMessage(`{"op":"chtimes","path":"/volume/tmp"}`)})
	if res.Outcome != OutcomeOK {
		t.Fatalf("chtimes: %s %s", res.Outcome, viewText(res))
	}
	dir := res.TmpDir
	res.Release()
	rt.volumes.Flush()
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Fatalf("a directory whose times were set went back to the pool (stat: %v)", err)
	}
}

// A call whose guest never touches /volume/tmp makes no directory on its
// path: it gets one that was prepared before the call began.
func TestCallTakesAPreparedTmp(t *testing.T) {
	t.Parallel()
	rt := newRuntimeIn(t, t.TempDir())
	pkg := load(t, rt, "../testdata/packages/cgreet")
	for i := range 3 {
		rt.volumes.Flush() // the pool is refilled once the preparing goroutine got to it
		before, err := os.ReadDir(rt.volumes.Dir())
		if err != nil {
			t.Fatal(err)
		}
		res := call(t, pkg, CallRequest{Tool: "greet", Arguments: json.RawMessage(`{"name":"Ada"}`)})
		if res.Outcome != OutcomeOK {
			t.Fatalf("outcome %s crash %+v", res.Outcome, res.Crash)
		}
		if !slices.ContainsFunc(before, func(e os.DirEntry) bool { return e.Name() == filepath.Base(res.TmpDir) }) {
			t.Fatalf("call %d: /volume/tmp %s was made on the call's path (prepared: %d)", i, res.TmpDir, len(before))
		}
		res.Release()
	}
}

// The default root is refused when it is not a private directory of this
// user: in a shared /tmp, someone else could have made it (here: a symbolic
// link to a directory of theirs) to read or plant files in calls' volumes.
func TestTempRootMustBePrivate(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	elsewhere := t.TempDir()
	if err := os.Symlink(elsewhere, tmpvol.DefaultRoot()); err != nil {
		t.Fatal(err)
	}
	rt, err := New(context.Background(), Config{})
	if err == nil {
		rt.Close(context.Background())
		t.Fatalf("New accepted a root that is a symbolic link to %s", elsewhere)
	}
	if entries, _ := os.ReadDir(elsewhere); len(entries) != 0 {
		t.Fatalf("New wrote into the link's target: %v", entries)
	}
	if err := os.Remove(tmpvol.DefaultRoot()); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(tmpvol.DefaultRoot(), 0o777); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(tmpvol.DefaultRoot(), 0o777); err != nil {
		t.Fatal(err)
	}
	rt, err = New(context.Background(), Config{})
	if err != nil {
		t.Fatalf("our own root with wide permissions: %v", err)
	}
	defer rt.Close(context.Background())
	if info, err := os.Stat(tmpvol.DefaultRoot()); err != nil || info.Mode().Perm() != 0o700 {
		t.Fatalf("the root was not made private: %v %v", info.Mode(), err)
	}
}

// A host killed in the middle of a call (kill -9: no deferred cleanup, no
// Close) leaves its volumes behind; the next Runtime on the same root
// removes them, and leaves a live runtime's alone.
func TestKilledHostsVolumesAreSwept(t *testing.T) {
	if !tmpvol.Sweeps {
		t.Skip("no flock on this platform: nothing is swept")
	}
	t.Parallel()
	root := t.TempDir()
	live := newRuntimeIn(t, root) // alive all along: must be left alone
	// Both packages are made here: the child's own test directories would
	// outlive it, as killed as its volumes.
	pkg := makePackage(t, testguest.Go(t, guests+"misbehave"), nil)
	greet := makePackage(t, testguest.Go(t, guests+"greet"), nil)

	cmd := exec.Command(os.Args[0], "-test.run=^TestKilledHostChild$", "-test.v")
	cmd.Env = append(os.Environ(), "SUBAKO_KILLED_HOST_ROOT="+root, "SUBAKO_KILLED_HOST_PKG="+pkg, "SUBAKO_KILLED_HOST_GREET="+greet)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// The child reports its directory, then its logger shows the guest's
	// stderr line for the sleeping call: the call is running.
	var childDir string
	running := false
	sc := bufio.NewScanner(out)
	for !running && sc.Scan() {
		if dir, ok := strings.CutPrefix(sc.Text(), "child volumes: "); ok {
			childDir = dir
		}
		running = childDir != "" && strings.Contains(sc.Text(), "misbehave: ")
	}
	if !running {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("the child never reported a running call (volumes %q)", childDir)
	}
	// The child is inside a call that sleeps; its first call's files are
	// in a volume it never released.
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	entries, err := os.ReadDir(childDir)
	if err != nil || len(entries) == 0 {
		t.Fatalf("the killed child left nothing to sweep (%v, %v): the test proves nothing", entries, err)
	}

	fresh := newRuntimeIn(t, root)
	if _, err := os.Stat(childDir); !os.IsNotExist(err) {
		t.Fatalf("a new runtime left the killed host's %s (stat: %v)", childDir, err)
	}
	if _, err := os.Stat(childDir + ".lock"); !os.IsNotExist(err) {
		t.Fatalf("a new runtime left the killed host's lock file (stat: %v)", err)
	}
	for _, rt := range []*Runtime{live, fresh} {
		if _, err := os.Stat(rt.volumes.Dir()); err != nil {
			t.Fatalf("the sweep removed a live runtime's directory: %v", err)
		}
	}
}

// TestKilledHostChild is the host that TestKilledHostsVolumesAreSwept kills:
// one call writes a file to /volume/tmp and is not released, and a second
// call sleeps until the process is killed.
func TestKilledHostChild(t *testing.T) {
	root, pkgDir := os.Getenv("SUBAKO_KILLED_HOST_ROOT"), os.Getenv("SUBAKO_KILLED_HOST_PKG")
	if root == "" {
		t.Skip("the child of TestKilledHostsVolumesAreSwept")
	}
	// The example logger writes debug lines, the guest's stderr among them,
	// to stdout, where the parent reads them.
	rt, err := New(context.Background(), Config{CompilationCacheDir: compiledCache, TempDir: root, Logger: zap.NewExample()})
	if err != nil {
		t.Fatal(err)
	}
	greet, err := rt.Load(context.Background(), os.Getenv("SUBAKO_KILLED_HOST_GREET"))
	if err != nil {
		t.Fatal(err)
	}
	res, err := greet.Call(context.Background(), CallRequest{Tool: "write_file", Arguments: json.RawMessage(`{"path":"/volume/tmp/big.txt","text":"left by a killed host"}`)})
	if err != nil || res.Outcome != OutcomeOK {
		t.Fatalf("write_file: %v %+v", err, res)
	}
	pkg, err := rt.Load(context.Background(), pkgDir)
	if err != nil {
		t.Fatal(err)
	}
	os.Stdout.WriteString("child volumes: " + rt.volumes.Dir() + "\n")
	_, _ = pkg.Call(context.Background(), CallRequest{Tool: "timeout_sleep"}) // killed in here
	t.Fatal("the sleeping call returned before the kill")
}

// Runtimes starting at once on one root, each sweeping it, all start and
// none removes another's directory.
func TestRuntimesStartingTogetherKeepTheirDirectories(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	const n = 8
	rts := make([]*Runtime, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rts[i], errs[i] = New(context.Background(), Config{TempDir: root})
		}()
	}
	wg.Wait()
	for i, rt := range rts {
		if errs[i] != nil {
			t.Fatalf("runtime %d: %v", i, errs[i])
		}
		defer rt.Close(context.Background())
	}
	for i, rt := range rts {
		if _, err := os.Stat(rt.volumes.Dir()); err != nil {
			t.Errorf("runtime %d lost its directory: %v", i, err)
		}
		if _, err := os.Stat(rt.volumes.Dir() + ".lock"); err != nil {
			t.Errorf("runtime %d lost its lock file: %v", i, err)
		}
	}
}

// createdVolumes, lookedVolumes and unlookedVolumes count the runtime's
// /volume/tmp directories created so far, and those that went back to the
// pool after a look and without one.
func createdVolumes(rt *Runtime) uint64  { c, _, _ := rt.volumes.Counts(); return c }
func lookedVolumes(rt *Runtime) uint64   { _, l, _ := rt.volumes.Counts(); return l }
func unlookedVolumes(rt *Runtime) uint64 { _, _, u := rt.volumes.Counts(); return u }
