package runtime

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
)

// PackageLoader gives a PackageSet what it needs to open the package an
// embedder names by key: its stored artifact and its package directory (or
// bare .wasm file), as Runtime.Open takes them. DirLoader is the
// directory-backed one; an object store plugs in the same way (fetch the
// artifact with ReadArtifact from a local copy, or build an *Artifact).
//
// LoadPackage is called from the goroutine of the first caller that needs
// the key, with a context that outlives that caller (other callers may be
// waiting for the same open) and ends when the set closes. It must be safe
// for concurrent use with distinct keys.
type PackageLoader interface {
	LoadPackage(ctx context.Context, key string) (a *Artifact, path string, err error)
}

// PackageLoaderFunc adapts a function to PackageLoader.
type PackageLoaderFunc func(ctx context.Context, key string) (*Artifact, string, error)

// LoadPackage calls f.
func (f PackageLoaderFunc) LoadPackage(ctx context.Context, key string) (*Artifact, string, error) {
	return f(ctx, key)
}

// DirLoader is a PackageLoader over two directories: the artifact of key is
// Artifacts/<key> (as Artifact.Save wrote it) and its package is
// Packages/<key>. A key must be one plain path element (no separator, not
// "." or ".."): keys come from the embedder's users, and a key must never
// name a file outside the two directories.
type DirLoader struct {
	Artifacts string
	Packages  string
}

// LoadPackage reads the artifact of key; Open then checks the package
// against it.
func (d DirLoader) LoadPackage(ctx context.Context, key string) (*Artifact, string, error) {
	if err := checkKey(key); err != nil {
		return nil, "", err
	}
	a, err := ReadArtifact(filepath.Join(d.Artifacts, key))
	if err != nil {
		return nil, "", err
	}
	if a.Key != "" && a.Key != key {
		return nil, "", fmt.Errorf("%w (it was saved under key %q)", errOtherPackage, a.Key)
	}
	return a, filepath.Join(d.Packages, key), nil
}

// Save stores the artifact of an uploaded package under key, where
// LoadPackage finds it. The package directory itself must already be at
// Packages/<key>.
func (d DirLoader) Save(key string, p *Package) error {
	if err := checkKey(key); err != nil {
		return err
	}
	a := p.Artifact()
	a.Key = key
	a.seal()
	return a.Save(filepath.Join(d.Artifacts, key))
}

// PackageDir returns Packages/<key>, where the upload puts the package
// directory of key for LoadPackage to find, after checking key as
// LoadPackage does (one plain path element): a key from a user never
// names a directory outside Packages.
func (d DirLoader) PackageDir(key string) (string, error) {
	if err := checkKey(key); err != nil {
		return "", err
	}
	return filepath.Join(d.Packages, key), nil
}

// checkKey refuses a key that is not one plain path element.
func checkKey(key string) error {
	if key == "" || key == "." || key == ".." || strings.ContainsAny(key, `/\`) || !filepath.IsLocal(key) {
		return fmt.Errorf("package key %q: want one plain path element", key)
	}
	return nil
}
