package runtime

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"
)

// cacheFaultLine is the message compileCached logs.
const cacheFaultLine = "compilation cache failed for a module that compiles: its entry was replaced and the module compiled again"

// cacheEntries lists the compiled-code entries wazero keeps in a cache
// directory (its per-version directories), not the runner's own records.
func cacheEntries(t *testing.T, dir string) []string {
	t.Helper()
	versions, err := filepath.Glob(filepath.Join(dir, "wazero-*"))
	if err != nil || len(versions) != 1 {
		t.Fatalf("cache %s: version directories %v, %v", dir, versions, err)
	}
	entries, err := os.ReadDir(versions[0])
	if err != nil {
		t.Fatal(err)
	}
	var paths []string
	for _, e := range entries {
		paths = append(paths, filepath.Join(versions[0], e.Name()))
	}
	if len(paths) == 0 {
		t.Fatalf("cache %s holds no entry", dir)
	}
	return paths
}

// cacheDamages are ways a cache entry is found broken: bit rot, a write
// cut short, an emptied file, something else in its place.
var cacheDamages = []struct {
	name   string
	damage func(t *testing.T, path string)
	// logged is what wazero's error says (in the log line).
	logged string
}{
	{"flipped byte", func(t *testing.T, path string) {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		b[len(b)/2] ^= 0xff // inside the machine code: the checksum no longer matches
		if err := os.WriteFile(path, b, 0o600); err != nil {
			t.Fatal(err)
		}
	}, "checksum mismatch"},
	{"truncated", func(t *testing.T, path string) {
		if err := os.Truncate(path, 64); err != nil {
			t.Fatal(err)
		}
	}, "compilationcache"},
	{"empty", func(t *testing.T, path string) {
		if err := os.Truncate(path, 0); err != nil {
			t.Fatal(err)
		}
	}, "compilationcache"},
	{"directory", func(t *testing.T, path string) {
		if err := os.Remove(path); err != nil {
			t.Fatal(err)
		}
		if err := os.Mkdir(path, 0o700); err != nil {
			t.Fatal(err)
		}
	}, "compilationcache"},
}

// cacheRuntime is a runtime on the cache in dir whose log the test reads.
func cacheRuntime(t *testing.T, dir string) (*Runtime, *observer.ObservedLogs) {
	t.Helper()
	core, logs := observer.New(zap.WarnLevel)
	rt, err := New(context.Background(), Config{Logger: zap.New(core), CompilationCacheDir: dir, TempDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Close(context.Background()) })
	return rt, logs
}

// A damaged compilation-cache entry is the host's fault: Load and Open
// of a valid package still succeed (it was rejected as invalid_module:
// "compilationcache: checksum mismatch", in every later process too), the
// fault is logged, and the entry is repaired, so the next process loads
// from the cache without a fault.
func TestDamagedCacheEntryNeverRejectsAValidPackage(t *testing.T) {
	t.Parallel()
	const pkgDir = "../testdata/packages/cgreet"
	for _, d := range cacheDamages {
		t.Run(d.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			first, _ := cacheRuntime(t, dir)
			pkg := load(t, first, pkgDir)
			store := t.TempDir()
			if err := pkg.Artifact().Save(store); err != nil {
				t.Fatal(err)
			}
			first.Close(context.Background())

			// Load, in a process that finds the entry damaged.
			for _, p := range cacheEntries(t, dir) {
				d.damage(t, p)
			}
			rt, logs := cacheRuntime(t, dir)
			pkg = load(t, rt, pkgDir)
			wantCacheFault(t, "Load", logs, d.logged)
			res := call(t, pkg, CallRequest{Tool: "greet", Arguments: []byte(`{"name":"Ada"}`)})
			if res.Outcome != OutcomeOK {
				t.Fatalf("call after the fault: %s %+v", res.Outcome, res.Crash)
			}

			// The next process finds the entry repaired.
			later, logs := cacheRuntime(t, dir)
			load(t, later, pkgDir)
			if n := logs.FilterMessage(cacheFaultLine).Len(); n != 0 {
				t.Fatalf("the process after the repair logged %d cache faults", n)
			}

			// Open, in a process that finds the entry damaged again.
			for _, p := range cacheEntries(t, dir) {
				d.damage(t, p)
			}
			a, err := ReadArtifact(store)
			if err != nil {
				t.Fatal(err)
			}
			rt, logs = cacheRuntime(t, dir)
			opened, err := rt.Open(context.Background(), a, pkgDir)
			if err != nil {
				t.Fatalf("Open with a damaged cache entry: %v", err)
			}
			opened.Close(context.Background())
			wantCacheFault(t, "Open", logs, d.logged)
		})
	}
}

// wantCacheFault asserts one logged cache fault whose error says what.
func wantCacheFault(t *testing.T, op string, logs *observer.ObservedLogs, what string) {
	t.Helper()
	faults := logs.FilterMessage(cacheFaultLine).All()
	if len(faults) == 0 {
		t.Fatalf("%s: the cache fault was not logged; log: %v", op, logs.All())
	}
	if got := faults[0].ContextMap()["error"]; !strings.Contains(got.(string), what) {
		t.Errorf("%s: logged error %q, want it to say %q", op, got, what)
	}
}

// An invalid module stays the module's fault when the runtime has a
// cache: the scratch compilation fails too, and the rejection is the
// module's own.
func TestCacheDoesNotExcuseAnInvalidModule(t *testing.T) {
	t.Parallel()
	rt, logs := cacheRuntime(t, t.TempDir())
	bad := append([]byte(nil), emptyCommand...)
	bad[len(bad)-2] = 0x1a // the body `end` becomes `drop` on an empty stack
	_, _, err := rt.compile(context.Background(), bad, rt.limits, false)
	if err == nil {
		t.Fatal("an invalid module compiled")
	}
	if _, ok := err.(*RejectedError); !ok {
		t.Fatalf("invalid module: %T %v, want a *RejectedError", err, err)
	}
	if n := logs.FilterMessage(cacheFaultLine).Len(); n != 0 {
		t.Fatalf("an invalid module was logged as a cache fault")
	}
}
