package fsmount

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"testing"
)

// chain makes a directory chain depth levels deep beneath dir, one level at
// a time through os.Root, since its paths are far beyond PATH_MAX. Every
// hundredth level also holds a file and a symbolic link.
func chain(t testing.TB, dir string, depth int) {
	t.Helper()
	r, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	for i := range depth {
		if err := r.Mkdir("d", 0o755); err != nil {
			t.Fatal(err)
		}
		if i%100 == 0 {
			if err := r.WriteFile("f", []byte("x"), 0o644); err != nil {
				t.Fatal(err)
			}
			if err := r.Symlink("..", "up"); err != nil {
				t.Fatal(err)
			}
		}
		next, err := r.OpenRoot("d")
		r.Close()
		if err != nil {
			t.Fatal(err)
		}
		r = next
	}
	r.Close()
}

func TestRemoveAllTrees(t *testing.T) {
	tests := []struct {
		name  string
		build func(t *testing.T, dir string)
	}{
		{"empty", func(t *testing.T, dir string) {}},
		{"wide", func(t *testing.T, dir string) {
			for i := range 3000 {
				n := filepath.Join(dir, strconv.Itoa(i))
				if i%2 == 0 {
					must(t, os.Mkdir(n, 0o755))
					must(t, os.WriteFile(filepath.Join(n, "f"), nil, 0o644))
				} else {
					must(t, os.WriteFile(n, nil, 0o644))
				}
			}
		}},
		{"deep chain", func(t *testing.T, dir string) { chain(t, dir, 2000) }},
		{"names RemoveAll uses itself", func(t *testing.T, dir string) {
			for _, p := range []string{".subako-rm-0/.subako-rm-1", "a/.subako-rm-0/x", "a/b/c"} {
				must(t, os.MkdirAll(filepath.Join(dir, p), 0o755))
			}
			must(t, os.WriteFile(filepath.Join(dir, ".subako-rm-2"), nil, 0o644))
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "vol")
			must(t, os.Mkdir(dir, 0o755))
			tt.build(t, dir)
			if err := RemoveAll(dir); err != nil {
				t.Fatal(err)
			}
			if _, err := os.Lstat(dir); !errors.Is(err, fs.ErrNotExist) {
				t.Fatalf("still there: %v", err)
			}
		})
	}
}

// TestRemoveAllFollowsNoLink removes a tree full of links to things outside
// it: the links go, what they point to stays.
func TestRemoveAllFollowsNoLink(t *testing.T) {
	base := t.TempDir()
	outside := filepath.Join(base, "outside")
	must(t, os.MkdirAll(filepath.Join(outside, "dir"), 0o755))
	must(t, os.WriteFile(filepath.Join(outside, "dir", "keep"), []byte("keep"), 0o644))
	must(t, os.WriteFile(filepath.Join(outside, "file"), []byte("keep"), 0o644))
	vol := filepath.Join(base, "vol")
	must(t, os.MkdirAll(filepath.Join(vol, "a", "b"), 0o755))
	must(t, os.Symlink(outside, filepath.Join(vol, "abs")))
	must(t, os.Symlink("../outside/dir", filepath.Join(vol, "rel")))
	must(t, os.Symlink("../../../outside/dir", filepath.Join(vol, "a", "b", "deep")))
	must(t, os.Link(filepath.Join(outside, "file"), filepath.Join(vol, "a", "hard")))
	if err := RemoveAll(vol); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(vol); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("volume still there: %v", err)
	}
	for _, p := range []string{"dir/keep", "file"} {
		if b, err := os.ReadFile(filepath.Join(outside, p)); err != nil || string(b) != "keep" {
			t.Errorf("%s outside the tree: %q, %v", p, b, err)
		}
	}
	// A path that is itself a link loses the link only.
	link := filepath.Join(base, "link")
	must(t, os.Symlink(outside, link))
	if err := RemoveAll(link); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(outside, "dir", "keep")); err != nil {
		t.Errorf("removing a link removed its target: %v", err)
	}
	if err := RemoveAll(filepath.Join(base, "missing")); err != nil {
		t.Errorf("a missing path: %v", err)
	}
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func BenchmarkRemoveAll(b *testing.B) {
	for _, bc := range []struct {
		name  string
		build func(b *testing.B, dir string)
	}{
		{"10000 dirs", func(b *testing.B, dir string) {
			for i := range 10000 {
				must(b, os.Mkdir(filepath.Join(dir, strconv.Itoa(i)), 0o755))
			}
		}},
		{"chain of 10000", func(b *testing.B, dir string) { chain(b, dir, 10000) }},
	} {
		b.Run(bc.name+"/fsmount", func(b *testing.B) {
			for b.Loop() {
				b.StopTimer()
				dir := filepath.Join(b.TempDir(), "vol")
				must(b, os.Mkdir(dir, 0o755))
				bc.build(b, dir)
				b.StartTimer()
				if err := RemoveAll(dir); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(bc.name+"/os", func(b *testing.B) {
			for b.Loop() {
				b.StopTimer()
				dir := filepath.Join(b.TempDir(), "vol")
				must(b, os.Mkdir(dir, 0o755))
				bc.build(b, dir)
				b.StartTimer()
				if err := os.RemoveAll(dir); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
