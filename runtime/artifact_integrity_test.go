package runtime

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"strings"
	"testing"
)

// renameTool renames the first tool of the stored artifact.json, as an
// edit of the store would, without touching the integrity record.
func renameTool(t *testing.T, store, to string) {
	t.Helper()
	var doc map[string]any
	if err := json.Unmarshal(readFile(t, filepath.Join(store, artifactJSON)), &doc); err != nil {
		t.Fatal(err)
	}
	tools := doc["tools"].([]any)
	tools[0].(map[string]any)["name"] = to
	b, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	writeStoreFile(t, filepath.Join(store, artifactJSON), b)
}

// The integrity record covers the artifact's metadata, and each refusal
// names the party at fault: a tool renamed inside artifact.json is "the
// artifact's metadata was changed" (it was restored as is, and the host
// then blamed the module: unknown_tool), another key's artifact in a
// key's place is "the artifact store holds another package's artifact for
// this key" (it was "the package changed since its upload", blaming a
// package that did not change), and an artifact made before the record
// (format 1) is opened by checking and discovering the package again, its
// stored tools ignored.
func TestArtifactRefusalsNameTheParty(t *testing.T) {
	t.Parallel()
	rt := newRuntime(t, nil)
	d := setStore(t, rt, 2)
	k0 := filepath.Join(d.Artifacts, "k0")
	saved := copyStore(t, k0)
	restore := func() {
		for _, name := range []string{artifactJSON, artifactMetered} {
			writeStoreFile(t, filepath.Join(k0, name), readFile(t, filepath.Join(saved, name)))
		}
	}

	// A tool renamed.
	renameTool(t, k0, "greet_renamed")
	if _, err := ReadArtifact(k0); !errors.Is(err, errMetadataChanged) || !strings.Contains(err.Error(), "the artifact's metadata was changed") {
		t.Fatalf("a renamed tool: ReadArtifact: %v", err)
	}
	s := newSet(t, rt, PackageSetConfig{Loader: d})
	if err := greetVia(s, "k0"); !errors.Is(err, errMetadataChanged) {
		t.Fatalf("a renamed tool through the set: %v", err)
	}
	// An artifact edited in memory (an embedder's own store) is refused by
	// Open too.
	restore()
	a, err := ReadArtifact(k0)
	if err != nil {
		t.Fatal(err)
	}
	a.Name = "another"
	if p, err := rt.Open(context.Background(), a, filepath.Join(d.Packages, "k0")); !errors.Is(err, errMetadataChanged) {
		if p != nil {
			p.Close(context.Background())
		}
		t.Fatalf("an edited artifact through Open: %v", err)
	}

	// Another key's artifact in k0's place.
	for _, name := range []string{artifactJSON, artifactMetered} {
		writeStoreFile(t, filepath.Join(k0, name), readFile(t, filepath.Join(d.Artifacts, "k1", name)))
	}
	s.Remove("k0")
	err = greetVia(s, "k0")
	if !errors.Is(err, errOtherPackage) || !strings.Contains(err.Error(), "the artifact store holds another package's artifact for this key") {
		t.Fatalf("k1's artifact under k0: %v", err)
	}
	// Another package's artifact opened against a package of another name
	// (no key to go by).
	other := makePackage(t, "../testdata/packages/rustgreet/module.wasm", nil)
	if p, err := rt.Open(context.Background(), a0(t, saved), other); !errors.Is(err, errOtherPackage) {
		if p != nil {
			p.Close(context.Background())
		}
		t.Fatalf("k0's artifact opened against another package: %v", err)
	}
	// The package itself changed (same name, another module): still the
	// package's change.
	restore()
	changed := filepath.Join(d.Packages, "k0", ModuleFile)
	orig := readFile(t, changed)
	writeStoreFile(t, changed, withCustomSection(orig, "changed"))
	s.Remove("k0")
	if err := greetVia(s, "k0"); err == nil || errors.Is(err, errOtherPackage) || !strings.Contains(err.Error(), "changed since its upload") {
		t.Fatalf("a changed package: %v", err)
	}
	writeStoreFile(t, changed, orig)

	// An artifact of format 1 (before the record) opens as it did, and
	// says it was unsealed; its package's artifact is sealed.
	restore()
	var doc map[string]any
	if err := json.Unmarshal(readFile(t, filepath.Join(k0, artifactJSON)), &doc); err != nil {
		t.Fatal(err)
	}
	doc["format"] = 1
	delete(doc, "sha256")
	delete(doc, "key")
	b, _ := json.Marshal(doc)
	writeStoreFile(t, filepath.Join(k0, artifactJSON), b)
	old, err := ReadArtifact(k0)
	if err != nil {
		t.Fatalf("a format-1 artifact: %v", err)
	}
	p, err := rt.Open(context.Background(), old, filepath.Join(d.Packages, "k0"))
	if err != nil {
		t.Fatalf("Open of a format-1 artifact: %v", err)
	}
	defer p.Close(context.Background())
	if p.Opened == nil || !p.Opened.Unsealed {
		t.Fatalf("a format-1 artifact opened with %+v, want Unsealed", p.Opened)
	}
	if up := p.Artifact(); up.Format != ArtifactFormat || up.checkIntegrity() != nil {
		t.Fatalf("the package's artifact: format %d, integrity %v", up.Format, up.checkIntegrity())
	}
}

// a0 reads the artifact saved at store.
func a0(t *testing.T, store string) *Artifact {
	t.Helper()
	a, err := ReadArtifact(store)
	if err != nil {
		t.Fatal(err)
	}
	return a
}
