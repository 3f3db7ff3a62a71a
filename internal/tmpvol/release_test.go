package tmpvol

import (
	"os"
	"path/filepath"
	"testing"

	"go.uber.org/zap"
)

// ReleaseLater looks at a directory on the pool's goroutine: one left
// as it was goes back to the pool after the look, one a call wrote in is
// removed, and one that may not be reused is removed without a look.
func TestReleaseLater(t *testing.T) {
	if !Recycles(t.TempDir()) {
		t.Skip("no directory metadata to compare on this platform")
	}
	v, err := Open(filepath.Join(t.TempDir(), "root"), zap.NewNop())
	if err != nil {
		t.Fatal(err)
	}
	defer v.Close()
	get := func() string {
		t.Helper()
		d, err := v.Get()
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	exists := func(d string) bool {
		_, err := os.Lstat(d)
		return err == nil
	}

	v.Flush() // the pool is prepared: the three come from it, and leave room for one back
	clean, written, unsafe := get(), get(), get()
	if err := os.WriteFile(filepath.Join(written, "f"), []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	v.Flush()
	_, looked0, unlooked0 := v.Counts()
	for _, r := range []struct {
		dir   string
		reuse bool
	}{{clean, true}, {written, true}, {unsafe, false}} {
		if err := v.ReleaseLater(r.dir, r.reuse); err != nil {
			t.Fatal(err)
		}
	}
	v.Flush()
	_, looked, unlooked := v.Counts()
	if looked != looked0+1 || unlooked != unlooked0 {
		t.Fatalf("looked %d → %d, unlooked %d → %d; want the clean directory looked at, once", looked0, looked, unlooked0, unlooked)
	}
	if !exists(clean) {
		t.Error("the clean directory was removed, not reused")
	}
	if exists(written) {
		t.Error("the directory a call wrote in is still there")
	}
	if exists(unsafe) {
		t.Error("the directory that may not be reused is still there")
	}
}
