package runtime

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/subako/subako-runner/internal/testguest"
)

func TestArtifactRoundTrip(t *testing.T) {
	t.Parallel()
	rt := newRuntime(t, nil)
	dir := makePackage(t, testguest.Go(t, guests+"greet"), map[string]string{"assets/greeting.txt": "Ahoy"})
	pkg := load(t, rt, dir)
	store := t.TempDir()
	if err := pkg.Artifact().Save(store); err != nil {
		t.Fatal(err)
	}
	a, err := ReadArtifact(store)
	if err != nil {
		t.Fatal(err)
	}
	opened, err := rt.Open(context.Background(), a, dir)
	if err != nil {
		t.Fatal(err)
	}
	defer opened.Close(context.Background())
	if got, want := fmt.Sprint(opened.toolNames()), fmt.Sprint(pkg.toolNames()); got != want {
		t.Fatalf("tools %s, want %s", got, want)
	}
	if opened.Discovery.Pages != 0 {
		t.Error("opening ran discovery")
	}
	res := call(t, opened, CallRequest{Tool: "greet", Arguments: json.RawMessage(`{"name":"Ada"}`)})
	if !strings.Contains(viewText(res), "Ahoy, Ada!") {
		t.Fatalf("call on the opened package: %s %q", res.Outcome, viewText(res))
	}
	if _, err := opened.Call(context.Background(), CallRequest{Tool: "nope"}); err == nil {
		t.Error("the opened package accepted an unknown tool")
	}
}

func TestArtifactRefusesChangedPackageOrStore(t *testing.T) {
	t.Parallel()
	rt := newRuntime(t, nil)
	dir := makePackage(t, testguest.Go(t, guests+"greet"), nil)
	pkg := load(t, rt, dir)
	store := t.TempDir()
	if err := pkg.Artifact().Save(store); err != nil {
		t.Fatal(err)
	}

	// The package's module changed after the upload.
	other := makePackage(t, "../testdata/packages/cgreet/module.wasm", nil)
	a, err := ReadArtifact(store)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := rt.Open(context.Background(), a, other); err == nil || !strings.Contains(err.Error(), "changed since its upload") {
		t.Fatalf("a changed module opened: %v", err)
	}

	// The stored metered module was corrupted.
	metered := filepath.Join(store, artifactMetered)
	b, _ := os.ReadFile(metered)
	b[len(b)/2] ^= 0xff
	os.WriteFile(metered, b, 0o644)
	if _, err := ReadArtifact(store); err == nil || !strings.Contains(err.Error(), "hash") {
		t.Fatalf("a corrupted metered module was read: %v", err)
	}

	// A metered module that is not this runner's metering of the module
	// (say, the unmetered module planted with a matching recorded hash)
	// is refused.
	planted := pkg.Artifact()
	planted.Metered = pkg.checked.Source.Module
	sum := sha256.Sum256(planted.Metered)
	planted.MeteredSHA256 = hex.EncodeToString(sum[:])
	if _, err := rt.Open(context.Background(), planted, dir); err == nil || !strings.Contains(err.Error(), "metering") {
		t.Fatalf("a planted unmetered module opened: %v", err)
	}
	old := pkg.Artifact()
	old.Runner = "0.0.1"
	if _, err := rt.Open(context.Background(), old, dir); err == nil || !strings.Contains(err.Error(), "upload the package again") {
		t.Fatalf("another runner's artifact opened: %v", err)
	}

	// Another format, or an unknown field, is refused.
	doc, _ := os.ReadFile(filepath.Join(store, artifactJSON))
	os.WriteFile(filepath.Join(store, artifactJSON), []byte(strings.Replace(string(doc), `"format": 1`, `"format": 2`, 1)), 0o644)
	if _, err := ReadArtifact(store); err == nil || !strings.Contains(err.Error(), "format") {
		t.Fatalf("format 2 read: %v", err)
	}
	if _, err := ReadArtifact(t.TempDir()); err == nil {
		t.Fatal("an empty directory read as an artifact")
	}
}

// TestArtifactOpensInAnotherProcess uploads a package here, then opens it
// from the artifact in a second process with the same compilation cache:
// the child neither compiles (the cache gains no entry) nor discovers.
func TestArtifactOpensInAnotherProcess(t *testing.T) {
	if os.Getenv("SUBAKO_ARTIFACT_CHILD") != "" {
		return // the child runs TestArtifactChild
	}
	t.Parallel()
	heavy(t)
	cache := t.TempDir()
	rt, err := New(context.Background(), Config{CompilationCacheDir: cache})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close(context.Background())
	dir := makePackage(t, testguest.Go(t, guests+"greet"), nil)
	start := time.Now()
	pkg, err := rt.Load(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	upload := time.Since(start)
	store := t.TempDir()
	if err := pkg.Artifact().Save(store); err != nil {
		t.Fatal(err)
	}
	before := countFiles(t, cache)

	cmd := exec.Command(os.Args[0], "-test.run=^TestArtifactChild$", "-test.v")
	cmd.Env = append(os.Environ(), "SUBAKO_ARTIFACT_CHILD="+strings.Join([]string{store, dir, cache}, string(os.PathListSeparator)))
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("child: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "CHILD-OK Hello, Ada!") {
		t.Fatalf("child output:\n%s", out)
	}
	if after := countFiles(t, cache); after != before {
		t.Errorf("the child compiled: the cache went from %d to %d files", before, after)
	}
	t.Logf("upload (checks, metering, compile, discovery) %v; child: %s", upload, grepLine(string(out), "CHILD-OPEN"))
}

func TestArtifactChild(t *testing.T) {
	env := os.Getenv("SUBAKO_ARTIFACT_CHILD")
	if env == "" {
		t.Skip("runs as the child of TestArtifactOpensInAnotherProcess")
	}
	parts := strings.Split(env, string(os.PathListSeparator))
	store, dir, cache := parts[0], parts[1], parts[2]
	rt, err := New(context.Background(), Config{CompilationCacheDir: cache})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close(context.Background())
	start := time.Now()
	a, err := ReadArtifact(store)
	if err != nil {
		t.Fatal(err)
	}
	pkg, err := rt.Open(context.Background(), a, dir)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Printf("CHILD-OPEN %v\n", time.Since(start))
	if pkg.Discovery.Pages != 0 {
		t.Fatal("discovery ran")
	}
	res, err := pkg.Call(context.Background(), CallRequest{Tool: "greet", Arguments: json.RawMessage(`{"name":"Ada"}`)})
	if err != nil {
		t.Fatal(err)
	}
	defer res.Release()
	var sc struct{ Message string }
	json.Unmarshal(res.Parsed.StructuredContent, &sc)
	fmt.Printf("CHILD-OK %s\n", sc.Message)
}

func countFiles(t *testing.T, dir string) int {
	t.Helper()
	n := 0
	filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			n++
		}
		return nil
	})
	return n
}

func grepLine(out, prefix string) string {
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, prefix) {
			return l
		}
	}
	return ""
}
