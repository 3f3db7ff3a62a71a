package runtime

import (
	"os"
	"path/filepath"
	goruntime "runtime"
	"strings"
	"syscall"
	"testing"
)

// An artifact file over its bound is refused from its size, before it is
// read: a 1 GiB sparse metered.wasm (or artifact.json) costs the host no
// memory (it was read whole, 1.06 GB RSS, then refused by its hash). Not
// parallel: the allocation count is the process's.
func TestReadArtifactRefusesOversizeFilesUnread(t *testing.T) {
	rt := newRuntime(t, nil)
	pkg := load(t, rt, "../testdata/packages/cgreet")
	saved := t.TempDir()
	if err := pkg.Artifact().Save(saved); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		file string
		size int64
	}{
		{artifactMetered, maxArtifactMetered + 1},
		{artifactMetered, 1 << 30},
		{artifactJSON, maxArtifactJSON + 1},
		{artifactJSON, 1 << 30},
	} {
		store := copyStore(t, saved)
		if err := os.Truncate(filepath.Join(store, c.file), c.size); err != nil { // sparse: no disk used
			t.Fatal(err)
		}
		var before, after goruntime.MemStats
		goruntime.ReadMemStats(&before)
		_, err := ReadArtifact(store)
		goruntime.ReadMemStats(&after)
		if err == nil || !strings.Contains(err.Error(), "over the") {
			t.Errorf("%s of %d bytes: ReadArtifact: %v, want it refused for its size", c.file, c.size, err)
		}
		if grew := after.TotalAlloc - before.TotalAlloc; grew > 1<<20 {
			t.Errorf("%s of %d bytes: refusing it allocated %d bytes; it must not be read", c.file, c.size, grew)
		}
	}
}

// artifact.json with anything after its object (here the NUL bytes of a
// file extended in place) is refused: the decoder stops at the object.
func TestReadArtifactRefusesTrailingData(t *testing.T) {
	t.Parallel()
	rt := newRuntime(t, nil)
	pkg := load(t, rt, "../testdata/packages/cgreet")
	store := t.TempDir()
	if err := pkg.Artifact().Save(store); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(store, artifactJSON)
	info, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ReadArtifact(store); err != nil {
		t.Fatalf("the artifact as saved: %v", err)
	}
	if err := os.Truncate(path, info.Size()+10); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadArtifact(store); err == nil || !strings.Contains(err.Error(), "data after") {
		t.Fatalf("artifact.json with NUL bytes after its object: %v", err)
	}
}

// Both sides of the bound: a file of exactly limit bytes is read, one byte
// more is refused; something other than a regular file in a file's place
// (a FIFO) is refused without waiting for a writer.
func TestReadBoundedEdges(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "f")
	const limit = 1000
	if err := os.WriteFile(path, make([]byte, limit), 0o600); err != nil {
		t.Fatal(err)
	}
	if b, err := readBounded(path, limit); err != nil || len(b) != limit {
		t.Fatalf("a file of the limit: %d bytes, %v", len(b), err)
	}
	if err := os.WriteFile(path, make([]byte, limit+1), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := readBounded(path, limit); err == nil || !strings.Contains(err.Error(), "over the 1000 bytes") {
		t.Fatalf("a file one byte over the limit: %v", err)
	}
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	if _, err := readBounded(fifo, limit); err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Fatalf("a FIFO: %v", err)
	}
}
