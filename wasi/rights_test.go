package wasi

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/subako/subako-runner/fsmount"
)

// TestReadOnlyMountRefusesEveryWritingOpen: on a read-only mount path_open
// with O_TRUNC, O_CREAT (of a new or an existing file), APPEND or fd_write
// is EROFS whatever rights it asks, and the file is left as it was. The
// check in path_open is the only line: os.Root does not know a mount is
// read-only, so /package/module.wasm would be truncated without it.
func TestReadOnlyMountRefusesEveryWritingOpen(t *testing.T) {
	dir := t.TempDir()
	const content = "\x00asm module bytes"
	if err := os.WriteFile(filepath.Join(dir, "module.wasm"), []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	h := benchWith(t, []fsmount.Mount{{Guest: fsmount.GuestPackage, Host: dir, ReadOnly: true}}, nil)

	open := func(name string, oflags uint16, rights uint64, fdflags uint16) errnum {
		p, n := h.str(0, name)
		errno, _ := h.call(h.ctx, pathOpen, 3, 1, p, n, uint64(oflags), rights, 0, uint64(fdflags), 100)
		return errno
	}
	for _, c := range []struct {
		name    string
		file    string
		oflags  uint16
		rights  uint64
		fdflags uint16
	}{
		{"O_TRUNC with only fd_read", "module.wasm", oflagTrunc, rightFdRead, 0},
		{"O_TRUNC with no rights", "module.wasm", oflagTrunc, 0, 0},
		{"O_CREAT of an existing file", "module.wasm", oflagCreat, rightFdRead, 0},
		{"O_CREAT of a new file", "new.wasm", oflagCreat, rightFdRead, 0},
		{"O_CREAT|O_EXCL of a new file", "new.wasm", oflagCreat | oflagExcl, 0, 0},
		{"O_CREAT|O_TRUNC", "module.wasm", oflagCreat | oflagTrunc, rightFdRead, 0},
		{"fd_write", "module.wasm", 0, rightFdWrite, 0},
		{"APPEND", "module.wasm", 0, rightFdRead, fdflagAppend},
	} {
		if got := open(c.file, c.oflags, c.rights, c.fdflags); got != errnoRofs {
			t.Errorf("%s: errno %d, want EROFS", c.name, got)
		}
	}
	if b, err := os.ReadFile(filepath.Join(dir, "module.wasm")); err != nil || string(b) != content {
		t.Errorf("module.wasm is now %q (%v), want it untouched", b, err)
	}
	if _, err := os.Lstat(filepath.Join(dir, "new.wasm")); err == nil {
		t.Error("new.wasm was created on a read-only mount")
	}
	if got := open("module.wasm", 0, rightFdRead, 0); got != errnoSuccess {
		t.Errorf("reading: errno %d", got)
	}
}

// TestRightsNarrowByInheritingRights: the rights path_open grants are
// those asked for within the directory's inheriting rights, at every
// level: a directory opened without fd_write among its inheriting rights
// gives fd_write to nothing beneath it, even through a subdirectory
// opened from it asking for every right.
func TestRightsNarrowByInheritingRights(t *testing.T) {
	h := newHostBench(t)
	host := h.in.cfg.Mounts.Mounts()[0].Host
	if err := os.MkdirAll(filepath.Join(host, "sub", "sub2"), 0o755); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(host, "sub", "f"), []byte("f"), 0o644)
	os.WriteFile(filepath.Join(host, "sub", "sub2", "f"), []byte("f"), 0o644)
	m := memOf(h.mod)
	open := func(dir uint64, name string, oflags uint16, base, inherit uint64) uint64 {
		t.Helper()
		p, n := h.str(0, name)
		if errno, _ := h.call(h.ctx, pathOpen, dir, 1, p, n, uint64(oflags), base, inherit, 0, 100); errno != errnoSuccess {
			t.Fatalf("open %s: errno %d", name, errno)
		}
		fd, _ := m.u32(100)
		return uint64(fd)
	}
	rights := func(fd uint64) (base, inherit uint64) {
		t.Helper()
		if errno, _ := h.call(h.ctx, fdFdstatGet, fd, 200); errno != errnoSuccess {
			t.Fatalf("fdstat: errno %d", errno)
		}
		st, _ := m.slice(200, sizeFdstat)
		return rd64(st[8:]), rd64(st[16:])
	}
	const all = ^uint64(0)
	sub := open(3, "sub", oflagDirectory, dirRights, dirRights|rightFdRead)
	if _, inherit := rights(sub); inherit&rightFdWrite != 0 {
		t.Errorf("sub inherits fd_write, which it did not ask for (%#x)", inherit)
	}
	f := open(sub, "f", 0, rightFdRead|rightFdWrite, 0)
	if base, _ := rights(f); base&rightFdWrite != 0 || base&rightFdRead == 0 {
		t.Errorf("a file beneath sub has rights %#x, want fd_read without fd_write", base)
	}
	m.putU32(300, 400)
	m.putU32(304, 1)
	if errno, _ := h.call(h.ctx, fdWrite, f, 300, 1, 500); errno != errnoBadf {
		t.Errorf("fd_write on it: errno %d, want EBADF", errno)
	}
	sub2 := open(sub, "sub2", oflagDirectory, all, all)
	if base, inherit := rights(sub2); inherit&rightFdWrite != 0 || base&^dirRights != 0 {
		t.Errorf("sub2, asking every right beneath sub, got base %#x inheriting %#x: more than sub passes on", base, inherit)
	}
	f2 := open(sub2, "f", 0, all, all)
	if base, _ := rights(f2); base&rightFdWrite != 0 {
		t.Errorf("a file beneath sub2 has fd_write (%#x)", base)
	}
	if b, _ := os.ReadFile(filepath.Join(host, "sub", "f")); string(b) != "f" {
		t.Errorf("sub/f is now %q", b)
	}
}
