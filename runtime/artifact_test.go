package runtime

import (
	"bytes"
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

	"github.com/subako/subako-runner/internal/devtools/testguest"
	"github.com/subako/subako-runner/internal/fuel"
	"github.com/subako/subako-runner/limits"
)

func TestArtifactRoundTrip(t *testing.T) {
	t.Parallel()
	rt := newRuntime(t, nil)
	dir := makePackage(t, testguest.Go(t, guests+"greet"), map[string]string{"assets/greeting.txt": "Ahoy"})
	pkg := load(t, rt, dir)
	opened := reopen(t, rt, pkg, dir)
	if got, want := fmt.Sprint(opened.toolNames()), fmt.Sprint(pkg.toolNames()); got != want {
		t.Fatalf("tools %s, want %s", got, want)
	}
	if opened.Discovery().Pages != 0 {
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

// TestOpenKeepsNoModuleBytes: an opened package holds its metered module
// (Artifact needs it) but not module.wasm, which nothing reads once the
// package is open: Open from an artifact this host vouches for only
// hashes it as it streams from the file. The estimate follows. A
// module.wasm over the size limit is refused before it is read, as Load
// refuses it.
func TestOpenKeepsNoModuleBytes(t *testing.T) {
	t.Parallel()
	rt := newRuntime(t, nil)
	dir := makePackage(t, "../testdata/packages/cgreet/module.wasm", nil)
	pkg := load(t, rt, dir)
	if len(pkg.checked.Source.Module) == 0 {
		t.Fatal("Load kept no module.wasm: the test below proves nothing")
	}
	opened := reopen(t, rt, pkg, dir)
	if opened.Opened.Metering != MeteringStored {
		t.Fatalf("opened as %s, want %s (the streaming hash is the vouched path's)", opened.Opened.Metering, MeteringStored)
	}
	if opened.checked.Source.Module != nil {
		t.Errorf("the opened package keeps module.wasm's %d bytes", len(opened.checked.Source.Module))
	}
	if got, want := opened.ResidentBytes(), estimateResident(pkg.checked.metered, 0); got != want {
		t.Errorf("ResidentBytes %d, want %d (the metered module only)", got, want)
	}
	if got, want := opened.Hash(), pkg.Hash(); got != want {
		t.Errorf("hash %x, want %x", got, want)
	}
	res := call(t, opened, CallRequest{Tool: "greet", Arguments: json.RawMessage(`{"name":"Ada"}`)})
	if res.Outcome != OutcomeOK {
		t.Fatalf("call: %s %q", res.Outcome, viewText(res))
	}

	size := int64(len(pkg.checked.Source.Module))
	lim := limits.Default()
	lim.ModuleSize = size - 1
	small, err := New(context.Background(), Config{CompilationCacheDir: compiledCache, Limits: &lim})
	if err != nil {
		t.Fatal(err)
	}
	defer small.Close(context.Background())
	if p, err := small.Open(context.Background(), saveAndRead(t, pkg), dir); err == nil {
		p.Close(context.Background())
		t.Fatalf("a module.wasm of %d bytes opened under a limit of %d", size, size-1)
	}
}

// saveAndRead saves pkg's artifact to a store and reads it back.
func saveAndRead(t *testing.T, pkg *Package) *Artifact {
	t.Helper()
	store := t.TempDir()
	if err := pkg.Artifact().Save(store); err != nil {
		t.Fatal(err)
	}
	a, err := ReadArtifact(store)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// reopen saves pkg's artifact and opens the package at dir from it, as a
// backend does after a restart; the opened Package closes with the test.
func reopen(t *testing.T, rt *Runtime, pkg *Package, dir string) *Package {
	t.Helper()
	opened, err := rt.Open(context.Background(), saveAndRead(t, pkg), dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { opened.Close(context.Background()) })
	return opened
}

func TestArtifactRefusesChangedPackageOrStore(t *testing.T) {
	heavy(t) // a second host compiles without the shared cache (it must not share its records): minutes under -race
	t.Parallel()
	rt := newRuntime(t, nil)
	dir := makePackage(t, testguest.Go(t, guests+"greet"), nil)
	pkg := load(t, rt, dir)
	saved := t.TempDir()
	if err := pkg.Artifact().Save(saved); err != nil {
		t.Fatal(err)
	}
	unmetered := pkg.checked.Source.Module
	// Each case tampers with a fresh copy of the saved store, then reads
	// and opens it on a runtime that recorded the upload's metering and on
	// one that never saw the package (no compilation cache, no records).
	fresh, err := New(context.Background(), Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer fresh.Close(context.Background())
	cases := []struct {
		name    string
		tamper  func(store string)
		pkgDir  string
		readErr string // ReadArtifact refuses with this
		openErr string // Open refuses with this
	}{
		{name: "module.wasm changed", pkgDir: makePackage(t, "../testdata/packages/cgreet/module.wasm", nil), openErr: "changed since its upload"},
		{name: "metered.wasm altered", tamper: func(store string) {
			b := readFile(t, filepath.Join(store, artifactMetered))
			b[len(b)/2] ^= 0xff
			writeStoreFile(t, filepath.Join(store, artifactMetered), b)
		}, readErr: "hash"},
		{name: "unmetered module planted with its hash in artifact.json", tamper: func(store string) {
			writeStoreFile(t, filepath.Join(store, artifactMetered), unmetered)
			sum := sha256.Sum256(unmetered)
			editArtifact(t, store, "meteredSha256", hex.EncodeToString(sum[:]))
		}, openErr: "store was changed"},
		{name: "artifact.json: moduleSha256 altered", tamper: func(store string) {
			sum := sha256.Sum256([]byte("another module"))
			editArtifact(t, store, "moduleSha256", hex.EncodeToString(sum[:]))
		}, openErr: "changed since its upload"},
		{name: "artifact.json: meteredSha256 altered", tamper: func(store string) {
			sum := sha256.Sum256([]byte("another module"))
			editArtifact(t, store, "meteredSha256", hex.EncodeToString(sum[:]))
		}, readErr: "hash"},
		{name: "artifact.json: another format", tamper: func(store string) { editArtifact(t, store, "format", 3) }, readErr: "format"},
		{name: "artifact.json: an unknown field", tamper: func(store string) { editArtifact(t, store, "trusted", true) }, readErr: "unknown field"},
	}
	for _, c := range cases {
		for _, r := range []struct {
			name string
			rt   *Runtime
		}{{"uploading runtime", rt}, {"fresh runtime", fresh}} {
			store := copyStore(t, saved)
			if c.tamper != nil {
				c.tamper(store)
			}
			a, err := ReadArtifact(store)
			if c.readErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.readErr) {
					t.Errorf("%s, %s: ReadArtifact: %v, want an error with %q", c.name, r.name, err, c.readErr)
				}
				continue
			}
			if err != nil {
				t.Fatalf("%s: ReadArtifact: %v", c.name, err)
			}
			pkgDir := dir
			if c.pkgDir != "" {
				pkgDir = c.pkgDir
			}
			if p, err := r.rt.Open(context.Background(), a, pkgDir); err == nil || !strings.Contains(err.Error(), c.openErr) {
				if p != nil {
					p.Close(context.Background())
				}
				t.Errorf("%s, %s: Open: %v, want an error with %q", c.name, r.name, err, c.openErr)
			}
		}
	}
	if _, err := ReadArtifact(t.TempDir()); err == nil {
		t.Fatal("an empty directory read as an artifact")
	}
}

// TestArtifactAcrossVersions opens artifacts as an upgraded runner finds
// them: another runner version with the same metering opens as stored;
// another metering version (even with an unmetered module planted in the
// store) is metered again from module.wasm, and that is what runs.
func TestArtifactAcrossVersions(t *testing.T) {
	heavy(t) // a second host compiles without the shared cache (it must not share its records): minutes under -race
	t.Parallel()
	rt := newRuntime(t, nil)
	dir := makePackage(t, testguest.Go(t, guests+"greet"), nil)
	pkg := load(t, rt, dir)
	want, err := fuel.Instrument(pkg.checked.Source.Module)
	if err != nil {
		t.Fatal(err)
	}
	fresh, err := New(context.Background(), Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer fresh.Close(context.Background())

	open := func(r *Runtime, a *Artifact, how string) *Package {
		t.Helper()
		p, err := r.Open(context.Background(), a, dir)
		if err != nil {
			t.Fatalf("Open (runner %s, metering %d): %v", a.Runner, a.Metering, err)
		}
		t.Cleanup(func() { p.Close(context.Background()) })
		if p.Opened == nil || p.Opened.Metering != how {
			t.Fatalf("Open (runner %s, metering %d): opened %+v, want metering %q", a.Runner, a.Metering, p.Opened, how)
		}
		if !bytes.Equal(p.checked.metered, want) {
			t.Fatalf("Open (runner %s, metering %d, %s) runs a module that is not this runner's metering of module.wasm", a.Runner, a.Metering, how)
		}
		res := call(t, p, CallRequest{Tool: "greet", Arguments: json.RawMessage(`{"name":"Ada"}`)})
		if res.Outcome != OutcomeOK || !strings.Contains(viewText(res), "Ada") {
			t.Fatalf("call on the opened package: %s %q", res.Outcome, viewText(res))
		}
		return p
	}

	// Another runner version, the same metering: opened as stored by the
	// host that recorded the upload; verified once by a host that did not.
	older := pkg.Artifact()
	older.Runner = "0.0.1"
	older.seal() // as the other runner sealed it
	open(rt, older, MeteringStored)
	open(fresh, older, MeteringVerified)
	open(fresh, older, MeteringStored)

	// Another metering version: metered again, never refused, and the
	// stored module (here the unmetered one) is ignored.
	for _, version := range []int{0, fuel.MeteringVersion - 1, fuel.MeteringVersion + 1} {
		planted := pkg.Artifact()
		planted.Runner, planted.Metering = "0.0.1", version
		planted.Metered = pkg.checked.Source.Module
		sum := sha256.Sum256(planted.Metered)
		planted.MeteredSHA256 = hex.EncodeToString(sum[:])
		planted.seal()
		p := open(rt, planted, MeteringRederived)
		if p.Opened.ArtifactMetering != version {
			t.Errorf("Opened.ArtifactMetering %d, want %d", p.Opened.ArtifactMetering, version)
		}
		// The opened package's artifact is the upgraded one, ready to save.
		if up := p.Artifact(); up.Metering != fuel.MeteringVersion || !bytes.Equal(up.Metered, want) {
			t.Errorf("the re-derived package's artifact has metering %d and %d bytes", up.Metering, len(up.Metered))
		}
	}
}

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func writeStoreFile(t *testing.T, path string, b []byte) {
	t.Helper()
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// editArtifact sets one field of the stored artifact.json.
func editArtifact(t *testing.T, store, field string, value any) {
	t.Helper()
	editArtifactSealed(t, store, field, value, true)
}

// editArtifactSealed sets field of the stored artifact.json to value, and
// with seal recomputes the integrity record as a forger who knows the
// scheme would (the checks behind it are then what refuses the edit).
func editArtifactSealed(t *testing.T, store, field string, value any, seal bool) {
	t.Helper()
	var doc map[string]any
	if err := json.Unmarshal(readFile(t, filepath.Join(store, artifactJSON)), &doc); err != nil {
		t.Fatal(err)
	}
	doc[field] = value
	b, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	if seal {
		var a Artifact
		if err := json.Unmarshal(b, &a); err == nil {
			doc["sha256"] = a.digest()
			if b, err = json.Marshal(doc); err != nil {
				t.Fatal(err)
			}
		}
	}
	writeStoreFile(t, filepath.Join(store, artifactJSON), b)
}

func copyStore(t *testing.T, from string) string {
	t.Helper()
	to := t.TempDir()
	for _, name := range []string{artifactJSON, artifactMetered} {
		writeStoreFile(t, filepath.Join(to, name), readFile(t, filepath.Join(from, name)))
	}
	return to
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
	if pkg.Discovery().Pages != 0 {
		t.Fatal("discovery ran")
	}
	// The parent's upload recorded its metering in the shared cache
	// directory: the child runs the stored module without metering again.
	if pkg.Opened == nil || pkg.Opened.Metering != MeteringStored {
		t.Fatalf("the child opened the artifact with %+v, want metering %q", pkg.Opened, MeteringStored)
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
