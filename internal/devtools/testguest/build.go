package testguest

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"
	"testing"
)

// buildLocks serialises builds of the same output inside one test binary;
// across test binaries the atomic rename in build keeps the cache sound.
var buildLocks sync.Map

// Go builds the Go main package at pkgDir (a directory inside a Go module,
// e.g. testdata/guests/greet) for GOOS=wasip1 GOARCH=wasm and returns the
// path of the cached module.wasm. It fails the test if the build fails.
func Go(t testing.TB, pkgDir string) string {
	t.Helper()
	path, err := BuildGo(pkgDir)
	if err != nil {
		t.Fatalf("testguest: %v", err)
	}
	return path
}

// BuildGo is Go without a testing.TB, for TestMain and benchmarks.
func BuildGo(pkgDir string) (string, error) {
	abs, err := filepath.Abs(pkgDir)
	if err != nil {
		return "", err
	}
	modRoot, err := moduleRoot(abs)
	if err != nil {
		return "", err
	}
	key, err := sourceHash(modRoot, abs)
	if err != nil {
		return "", err
	}
	dir := filepath.Join(cacheDir(), key)
	out := filepath.Join(dir, "module.wasm")
	mu, _ := buildLocks.LoadOrStore(out, &sync.Mutex{})
	mu.(*sync.Mutex).Lock()
	defer mu.(*sync.Mutex).Unlock()
	if _, err := os.Stat(out); err == nil {
		return out, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	tmp, err := os.CreateTemp(dir, "build-*.wasm")
	if err != nil {
		return "", err
	}
	tmp.Close()
	defer os.Remove(tmp.Name())
	args, env := buildFlags()
	cmd := exec.Command("go", append(args, "-o", tmp.Name(), ".")...)
	cmd.Dir = abs
	cmd.Env = append(os.Environ(), env...)
	if outb, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build %s for wasip1: %v\n%s", pkgDir, err, outb)
	}
	if err := os.Rename(tmp.Name(), out); err != nil {
		return "", err
	}
	return out, nil
}

// CacheDir is where built guests are kept: a worker process that is to
// run them must be allowed to read it (runtime.WorkerConfig.ReadOnly).
func CacheDir() string { return cacheDir() }

func cacheDir() string {
	if d := os.Getenv("SUBAKO_TESTGUEST_CACHE"); d != "" {
		return d
	}
	base, err := os.UserCacheDir()
	if err != nil {
		base = os.TempDir()
	}
	return filepath.Join(base, "subako-runner", "testguest")
}

func moduleRoot(dir string) (string, error) {
	for d := dir; ; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			return d, nil
		}
		if filepath.Dir(d) == d {
			return "", fmt.Errorf("no go.mod above %s", dir)
		}
	}
}

// buildFlags are the go command's arguments and environment for a guest;
// the cache key covers them.
func buildFlags() (args, env []string) {
	return []string{"build", "-trimpath"}, []string{"GOOS=wasip1", "GOARCH=wasm", "CGO_ENABLED=0", "GOFLAGS=-mod=mod"}
}

// sourceHash covers the Go version, the build flags and every file of the
// guest's module, so a change to a shared helper package or to go.sum
// rebuilds every guest that could use it.
func sourceHash(modRoot, pkgDir string) (string, error) {
	h := sha256.New()
	args, env := buildFlags()
	fmt.Fprintf(h, "%s\x00%s\x00%q\x00%q\x00", runtime.Version(), strings.TrimPrefix(pkgDir, modRoot), args, env)
	var files []string
	err := filepath.WalkDir(modRoot, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Type().IsRegular() && (strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "go.mod") || strings.HasSuffix(p, "go.sum")) {
			files = append(files, p)
		}
		return nil
	})
	if err != nil {
		return "", err
	}
	sort.Strings(files)
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return "", err
		}
		fmt.Fprintf(h, "%s\x00%d\x00", strings.TrimPrefix(f, modRoot), len(b))
		h.Write(b)
	}
	return hex.EncodeToString(h.Sum(nil))[:24], nil
}
