package runtime

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/tetratelabs/wazero"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/subako/subako-runner/internal/compile"
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

// fullCache is a compilation cache directory whose writes fail once fill
// has run, and heal makes it writable again. Where the test may mount
// (root), it is a 2 MiB tmpfs filled to the last block, so writes fail
// with ENOSPC as on a full disk; elsewhere wazero's version directory
// becomes a link into /proc, where no file can be made.
func fullCache(t *testing.T) (dir string, fill, heal func()) {
	t.Helper()
	dir = filepath.Join(t.TempDir(), "cache")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := exec.Command("mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", dir).Run(); err == nil {
		t.Cleanup(func() {
			if err := exec.Command("umount", dir).Run(); err != nil {
				t.Errorf("umount %s: %v", dir, err)
			}
		})
		filler := filepath.Join(dir, "filler")
		fill = func() {
			f, err := os.Create(filler)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			block := make([]byte, 4096)
			for {
				if _, err := f.Write(block); err != nil {
					if !errors.Is(err, syscall.ENOSPC) {
						t.Fatalf("filling the cache: %v", err)
					}
					break
				}
			}
		}
		return dir, fill, func() {
			if err := os.Remove(filler); err != nil {
				t.Fatal(err)
			}
		}
	}
	if _, err := os.Stat("/proc/self"); err != nil {
		t.Skip("neither a tmpfs to fill nor /proc to write into")
	}
	cache, err := wazero.NewCompilationCacheWithDir(dir) // makes the version directory
	if err != nil {
		t.Fatal(err)
	}
	cache.Close(context.Background())
	versions, err := filepath.Glob(filepath.Join(dir, "wazero-*"))
	if err != nil || len(versions) != 1 {
		t.Fatalf("version directories %v, %v", versions, err)
	}
	version := versions[0]
	fill = func() {
		if err := os.Remove(version); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink("/proc", version); err != nil {
			t.Fatal(err)
		}
	}
	return dir, fill, func() {
		if err := os.Remove(version); err != nil {
			t.Fatal(err)
		}
		if err := os.Mkdir(version, 0o700); err != nil {
			t.Fatal(err)
		}
	}
}

// A compilation cache that cannot be written is the host's fault: Load
// and Open of a valid package work (they were rejected as
// invalid_module: "write …: no space left on device"), the fault is logged
// once, and the module compiled into memory is released when its package
// closes: once the cache heals, the same module is compiled anew and
// written to it (code wazero still held would be found in memory, and
// nothing written).
func TestFullCacheNeverRejectsAndReleases(t *testing.T) {
	t.Parallel()
	dir, fill, heal := fullCache(t)
	rt, logs := cacheRuntime(t, dir)
	fill()
	pkg, err := rt.Load(context.Background(), cgreetDir)
	if err != nil {
		t.Fatalf("Load with a full cache: %v", err)
	}
	res := call(t, pkg, CallRequest{Tool: "greet", Arguments: []byte(`{"name":"Ada"}`)})
	if res.Outcome != OutcomeOK {
		t.Fatalf("call: %s %+v", res.Outcome, res.Crash)
	}
	a := saveAndRead(t, pkg)
	pkg.Close(context.Background())
	opened, err := rt.Open(context.Background(), a, cgreetDir)
	if err != nil {
		t.Fatalf("Open with a full cache: %v", err)
	}
	opened.Close(context.Background())
	if n := logs.FilterMessage(compile.CacheWriteFaultMessage).Len(); n != 1 {
		t.Errorf("the write fault was logged %d times at warn level, want once; log: %v", n, logs.All())
	}

	heal()
	pkg = load(t, rt, cgreetDir)
	versions, _ := filepath.Glob(filepath.Join(dir, "wazero-*", "*"))
	if len(versions) == 0 {
		t.Fatal("the module loaded after the cache healed was not written to it: its code compiled while the cache was full was never released")
	}
}

// A compilation cache New cannot use (a file where the directory should
// be, or a full disk) leaves a runtime without a cache and a warning, not
// an error; StrictCompilationCache makes it New's error.
func TestUnusableCacheAtNew(t *testing.T) {
	t.Parallel()
	notDir := filepath.Join(t.TempDir(), "cache")
	if err := os.WriteFile(notDir, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	full, fill, _ := fullCache(t)
	fill()
	for _, c := range []struct{ name, dir string }{{"not a directory", notDir}, {"full", full}} {
		t.Run(c.name, func(t *testing.T) {
			core, logs := observer.New(zap.WarnLevel)
			rt, err := New(context.Background(), Config{Logger: zap.New(core), CompilationCacheDir: c.dir, TempDir: t.TempDir()})
			if err != nil {
				t.Fatalf("New with an unusable cache: %v", err)
			}
			defer rt.Close(context.Background())
			if logs.FilterMessage("compilation cache cannot be used: modules are compiled into memory only").Len() != 1 {
				t.Errorf("no warning; log: %v", logs.All())
			}
			pkg, err := rt.Load(context.Background(), cgreetDir)
			if err != nil {
				t.Fatalf("Load without the cache: %v", err)
			}
			pkg.Close(context.Background())

			_, err = New(context.Background(), Config{CompilationCacheDir: c.dir, TempDir: t.TempDir(), StrictCompilationCache: true})
			if err == nil || !strings.Contains(err.Error(), "compilation cache") {
				t.Fatalf("New, strict, with an unusable cache: %v; want its error", err)
			}
		})
	}
}
