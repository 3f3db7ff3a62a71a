package fsmount

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"unsafe"
)

// TestRemoveAllDeeperThanTheDescriptorLimit removes a 30,000-deep chain with
// the descriptor limit lowered to 256: os.RemoveAll, holding a descriptor per
// level, fails on it and leaves the directory behind.
func TestRemoveAllDeeperThanTheDescriptorLimit(t *testing.T) {
	if testing.Short() {
		t.Skip("builds 30,000 directories")
	}
	dir := filepath.Join(t.TempDir(), "vol")
	must(t, os.Mkdir(dir, 0o755))
	chain(t, dir, 30_000)
	var old syscall.Rlimit
	must(t, syscall.Getrlimit(syscall.RLIMIT_NOFILE, &old))
	low := old
	low.Cur = 256
	must(t, syscall.Setrlimit(syscall.RLIMIT_NOFILE, &low))
	err := RemoveAll(dir)
	must(t, syscall.Setrlimit(syscall.RLIMIT_NOFILE, &old))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(dir); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("still there: %v", err)
	}
}

// TestRemoveAllReportsWhatItCannotRemove makes one file unremovable (an
// immutable directory when the test runs as root, who ignores permissions;
// a read-only directory otherwise): RemoveAll removes everything else and
// returns an error that says so.
func TestRemoveAllReportsWhatItCannotRemove(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "vol")
	stuck := filepath.Join(dir, "a", "b", "stuck")
	must(t, os.MkdirAll(stuck, 0o755))
	must(t, os.WriteFile(filepath.Join(stuck, "f"), nil, 0o644))
	for _, p := range []string{"x/y/z", "a/c", "a/b/d"} {
		must(t, os.MkdirAll(filepath.Join(dir, p), 0o755))
	}
	undo := lockDir(t, stuck)
	defer undo()
	err := RemoveAll(dir)
	if err == nil || !errors.Is(err, fs.ErrPermission) {
		t.Fatalf("RemoveAll = %v, want a permission error", err)
	}
	// Only the stuck directory, its file and the directories that hold it
	// (under the names RemoveAll moved them to) are left.
	var files int
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		switch n := d.Name(); {
		case p == dir:
		case n == "f":
			files++
		case n == "stuck" || strings.HasPrefix(n, ".subako-rm-"):
		default:
			t.Errorf("%s was not removed", p)
		}
		return nil
	})
	if files != 1 {
		t.Fatalf("the stuck file is gone: the test removed nothing it could not")
	}
	undo()
	if err := RemoveAll(dir); err != nil {
		t.Fatalf("once unlocked: %v", err)
	}
}

// lockDir makes the entries of dir unremovable and returns the undo.
func lockDir(t *testing.T, dir string) func() {
	if os.Geteuid() != 0 {
		must(t, os.Chmod(dir, 0o555))
		return func() { os.Chmod(dir, 0o755) }
	}
	const fsIocGetflags, fsIocSetflags, fsImmutableFl = 0x80086601, 0x40086602, 0x10
	f, err := os.Open(dir)
	must(t, err)
	defer f.Close()
	var flags int32
	if _, _, e := syscall.Syscall(syscall.SYS_IOCTL, f.Fd(), fsIocGetflags, uintptr(unsafe.Pointer(&flags))); e != 0 {
		t.Skipf("no file attributes here: %v", e)
	}
	locked := flags | fsImmutableFl
	if _, _, e := syscall.Syscall(syscall.SYS_IOCTL, f.Fd(), fsIocSetflags, uintptr(unsafe.Pointer(&locked))); e != 0 {
		t.Skipf("cannot make a directory immutable here: %v", e)
	}
	return func() {
		// The directory may have moved: find it again by walking.
		filepath.WalkDir(filepath.Dir(filepath.Dir(filepath.Dir(dir))), func(p string, d fs.DirEntry, err error) error {
			if err == nil && d.IsDir() && d.Name() != "" {
				if g, err := os.Open(p); err == nil {
					var fl int32
					syscall.Syscall(syscall.SYS_IOCTL, g.Fd(), fsIocGetflags, uintptr(unsafe.Pointer(&fl)))
					if fl&fsImmutableFl != 0 {
						fl &^= fsImmutableFl
						syscall.Syscall(syscall.SYS_IOCTL, g.Fd(), fsIocSetflags, uintptr(unsafe.Pointer(&fl)))
					}
					g.Close()
				}
			}
			return nil
		})
	}
}
