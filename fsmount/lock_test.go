package fsmount

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"testing"
)

// TestLockIsTheDirectorys: two Sets on one host directory (two calls
// sharing a volume, in one Runtime or two) exclude each other, whatever
// path reached the directory; a wait ends with its context; a release
// lets the other in; another directory is another lock.
func TestLockIsTheDirectorys(t *testing.T) {
	if runtime.GOOS == "windows" || runtime.GOOS == "plan9" || runtime.GOOS == "js" || runtime.GOOS == "wasip1" {
		t.Skip("no flock: Lock serialises nothing here")
	}
	dir := t.TempDir()
	other := t.TempDir()
	alias := filepath.Join(t.TempDir(), "alias")
	if err := os.Symlink(dir, alias); err != nil {
		t.Fatal(err)
	}
	open := func(host string) *Set {
		s, err := Open([]Mount{{Guest: GuestData, Host: host}})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}
	a, b, c := open(dir), open(alias), open(other)
	done, cancel := context.WithCancel(context.Background())
	cancel() // a wait ends at once; a free lock is still taken

	release, err := a.Lock(context.Background(), 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.Lock(done, 0); !errors.Is(err, context.Canceled) {
		t.Fatalf("the same directory through another Set and path while held: %v, want the wait ended by its context", err)
	}
	rc, err := c.Lock(done, 0)
	if err != nil {
		t.Fatalf("another directory while the first is held: %v", err)
	}
	rc()
	release()
	rb, err := b.Lock(done, 0)
	if err != nil {
		t.Fatalf("after the release: %v", err)
	}
	rb()
	if !b.Touched(GuestData) {
		t.Error("a lock did not touch its mount")
	}
}
