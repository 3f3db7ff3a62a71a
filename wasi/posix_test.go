package wasi

import (
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"
)

// The cases of the official wasi-testsuite that once failed here
// (dir_fd_op_failures, directory_seek, path_link, path_rename,
// symlink_filestat), as unit tests that need no copy of the suite.

// putStr writes s at ptr and returns (ptr, len) as call arguments.
func putStr(h *hostBench, ptr uint32, s string) (uint64, uint64) {
	memOf(h.mod).m.Write(ptr, []byte(s))
	return uint64(ptr), uint64(len(s))
}

func TestDirectoryDescriptorFailsLikePOSIX(t *testing.T) {
	h := newHostBench(t)
	host := h.in.cfg.Mounts.Mounts()[0].Host
	os.Mkdir(filepath.Join(host, "d"), 0o755)
	d := openDir(t, h, "d")
	errno, _ := h.call(h.ctx, fdFdstatGet, d, 200)
	if errno != errnoSuccess {
		t.Fatal(errno)
	}
	st, _ := memOf(h.mod).slice(200, sizeFdstat)
	if rd64(st[8:])&rightFdSeek != 0 {
		t.Errorf("a directory fd carries the fd_seek right (base %#x)", rd64(st[8:]))
	}
	file := openFile(t, h, "file", rightFdRead|rightFdAllocate)
	tests := []struct {
		name string
		fn   hostFunc
		args []uint64
		want errnum
	}{
		{"fd_allocate on a directory", fdAllocate, []uint64{d, 0, 1}, errnoBadf},
		{"fd_allocate on the preopen", fdAllocate, []uint64{3, 0, 1}, errnoBadf},
		{"fd_allocate on stdout", fdAllocate, []uint64{1, 0, 1}, errnoSpipe},
		{"fd_allocate on a file stays ENOTSUP (ABI 1)", fdAllocate, []uint64{file, 0, 1}, errnoNotsup},
		{"fd_allocate on a closed fd", fdAllocate, []uint64{99, 0, 1}, errnoBadf},
		{"fd_seek on a directory", fdSeek, []uint64{d, 0, whenceSet, 300}, errnoIsdir},
		{"fd_tell on a directory", fdTell, []uint64{d, 300}, errnoIsdir},
	}
	for _, tt := range tests {
		if errno, _ := h.call(h.ctx, tt.fn, tt.args...); errno != tt.want {
			t.Errorf("%s: errno %d, want %d", tt.name, errno, tt.want)
		}
	}
}

// openFile opens name beneath fd 3 with rights and returns its fd.
func openFile(t *testing.T, h *hostBench, name string, rights uint64) uint64 {
	t.Helper()
	p, n := putStr(h, 500, name)
	if errno, _ := h.call(h.ctx, pathOpen, 3, 1, p, n, 0, rights, 0, 0, 600); errno != errnoSuccess {
		t.Fatalf("open %s: %d", name, errno)
	}
	fd, _ := memOf(h.mod).u32(600)
	return uint64(fd)
}

func TestPathLinkFollowingASymlinkIsEINVAL(t *testing.T) {
	h := newHostBench(t)
	host := h.in.cfg.Mounts.Mounts()[0].Host
	os.Symlink("missing", filepath.Join(host, "dangling"))
	tests := []struct {
		old, new string
		flags    uint64
		want     errnum
		exists   bool // new exists afterwards
	}{
		{"link", "viaLink", uint64(lookupSymlinkFollow), errnoInval, false},
		{"dangling", "viaDangling", uint64(lookupSymlinkFollow), errnoInval, false},
		{"file", "viaFile", uint64(lookupSymlinkFollow), errnoSuccess, true},
		{"link", "linkItself", 0, errnoSuccess, true},
	}
	for _, tt := range tests {
		op, ol := putStr(h, 700, tt.old)
		np, nl := putStr(h, 800, tt.new)
		if errno, _ := h.call(h.ctx, pathLink, 3, tt.flags, op, ol, 3, np, nl); errno != tt.want {
			t.Errorf("path_link %s -> %s flags %d: errno %d, want %d", tt.old, tt.new, tt.flags, errno, tt.want)
		}
		if _, err := os.Lstat(filepath.Join(host, tt.new)); (err == nil) != tt.exists {
			t.Errorf("%s exists: %v, want %v", tt.new, err == nil, tt.exists)
		}
	}
}

func TestPathRenameOntoADirectory(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("renaming onto a directory needs renameat (Linux)")
	}
	h := newHostBench(t)
	host := h.in.cfg.Mounts.Mounts()[0].Host
	at := func(p string) string { return filepath.Join(host, p) }
	os.MkdirAll(at("src"), 0o755)
	os.WriteFile(at("src/kept"), []byte("k"), 0o644)
	os.Mkdir(at("empty"), 0o755)
	os.MkdirAll(at("full/sub"), 0o755)
	os.MkdirAll(at("src2"), 0o755)
	os.Mkdir(at("emptyForFile"), 0o755)
	tests := []struct {
		name, old, new string
		want           errnum
		check          string // a host path that must exist afterwards
	}{
		{"directory onto an empty directory", "src", "empty", errnoSuccess, "empty/kept"},
		{"directory onto a non-empty directory", "src2", "full", errnoNotempty, "full/sub"},
		{"file onto a directory", "file", "emptyForFile", errnoIsdir, "file"},
		{"directory onto itself", "full", "full", errnoSuccess, "full/sub"},
		{"trailing slashes", "src2/", "empty/", errnoNotempty, "src2"},
	}
	for _, tt := range tests {
		op, ol := putStr(h, 700, tt.old)
		np, nl := putStr(h, 800, tt.new)
		if errno, _ := h.call(h.ctx, pathRename, 3, op, ol, 3, np, nl); errno != tt.want {
			t.Errorf("%s: errno %d, want %d", tt.name, errno, tt.want)
		}
		if _, err := os.Stat(at(tt.check)); err != nil {
			t.Errorf("%s: %v", tt.name, err)
		}
	}
	if _, err := os.Stat(at("src")); !os.IsNotExist(err) {
		t.Errorf("the renamed source still exists: %v", err)
	}
}

func TestSetTimesOfASymlinkItself(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("setting a link's own times needs utimensat (Linux)")
	}
	h := newHostBench(t)
	host := h.in.cfg.Mounts.Mounts()[0].Host
	os.Mkdir(filepath.Join(host, "sub"), 0o755)
	os.Symlink("../file", filepath.Join(host, "sub", "up"))
	fileBefore, _ := os.Stat(filepath.Join(host, "file"))
	for _, name := range []string{"link", "sub/up"} {
		linkMtime := time.Unix(1_000_000, 123_000_000)
		p, n := putStr(h, 700, name)
		errno, _ := h.call(h.ctx, pathFilestatSetTimes, 3, 0, p, n, 0, uint64(linkMtime.UnixNano()), uint64(fstMtim))
		if errno != errnoSuccess {
			t.Fatalf("set_times on %s itself: errno %d", name, errno)
		}
		info, err := os.Lstat(filepath.Join(host, name))
		if err != nil || !info.ModTime().Equal(linkMtime) {
			t.Errorf("%s: mtime %v (%v), want %v", name, info.ModTime(), err, linkMtime)
		}
		if after, _ := os.Stat(filepath.Join(host, "file")); !after.ModTime().Equal(fileBefore.ModTime()) {
			t.Errorf("%s: the link's target changed too", name)
		}
	}
	// With symlink_follow the target's times change.
	target := time.Unix(2_000_000, 0)
	p, n := putStr(h, 700, "link")
	if errno, _ := h.call(h.ctx, pathFilestatSetTimes, 3, uint64(lookupSymlinkFollow), p, n, 0, uint64(target.UnixNano()), uint64(fstMtim)); errno != errnoSuccess {
		t.Fatal(errno)
	}
	if info, _ := os.Stat(filepath.Join(host, "file")); !info.ModTime().Equal(target) {
		t.Errorf("followed set_times: target mtime %v, want %v", info.ModTime(), target)
	}
}
