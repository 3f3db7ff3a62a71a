package wasi

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/subako/subako-runner/fsmount"
)

// pathCalls are the host functions that read a guest path, each with its
// arguments for a path at (ptr, n) beneath the preopen (fd 3); a function
// of two paths gets it as each operand in turn, the other a short name.
func pathCalls(ptr, n, short, shortLen uint64) []struct {
	name string
	fn   hostFunc
	args []uint64
} {
	return []struct {
		name string
		fn   hostFunc
		args []uint64
	}{
		{"path_open", pathOpen, []uint64{3, 1, ptr, n, 0, rightFdRead, 0, 0, 600}},
		{"path_open, no-follow", pathOpen, []uint64{3, 0, ptr, n, 0, rightFdRead, 0, 0, 600}},
		{"path_open, create", pathOpen, []uint64{3, 0, ptr, n, uint64(oflagCreat), rightFdWrite, 0, 0, 600}},
		{"path_create_directory", pathCreateDirectory, []uint64{3, ptr, n}},
		{"path_filestat_get", pathFilestatGet, []uint64{3, 1, ptr, n, 700}},
		{"path_filestat_get, no-follow", pathFilestatGet, []uint64{3, 0, ptr, n, 700}},
		{"path_filestat_set_times", pathFilestatSetTimes, []uint64{3, 0, ptr, n, 0, 0, uint64(fstMtimNow)}},
		{"path_readlink", pathReadlink, []uint64{3, ptr, n, 800, 64, 900}},
		{"path_remove_directory", pathRemoveDirectory, []uint64{3, ptr, n}},
		{"path_unlink_file", pathUnlinkFile, []uint64{3, ptr, n}},
		{"path_link, old", pathLink, []uint64{3, 0, ptr, n, 3, short, shortLen}},
		{"path_link, new", pathLink, []uint64{3, 0, short, shortLen, 3, ptr, n}},
		{"path_rename, old", pathRename, []uint64{3, ptr, n, 3, short, shortLen}},
		{"path_rename, new", pathRename, []uint64{3, short, shortLen, 3, ptr, n}},
		{"path_symlink, target", pathSymlink, []uint64{ptr, n, 3, short, shortLen}},
		{"path_symlink, name", pathSymlink, []uint64{short, shortLen, 3, ptr, n}},
	}
}

// TestGuestSizedPathsCostTheHostNothing is the attack of a 64 MiB path
// ("a/a/a/…", 32M components): one path_open took the host to 2.29 GB and
// 5.7 s before, copying the path and then splitting it into components
// (twice for a no-follow Lstat). Every function that reads a path now
// answers ENAMETOOLONG, as Linux does past PATH_MAX, before it copies a
// byte of it.
func TestGuestSizedPathsCostTheHostNothing(t *testing.T) {
	if testing.Short() {
		t.Skip("grows a guest memory to 64 MiB")
	}
	h := newHostBench(t)
	const size = 64 << 20
	const at = 1 << 20
	growTo(t, h, at+size+4096)
	long := []byte(strings.Repeat("a/", size/2))
	memOf(h.mod).m.Write(at, long)
	long = nil
	short, shortLen := putStr(h, 1000, "file")
	for _, tt := range pathCalls(at, size, short, shortLen) {
		// The fewest bytes of three calls: the heap's count is the
		// process's, and a copied or split path adds 64 MiB to every call.
		var errno errnum
		alloc := min(
			allocated(func() { errno, _ = h.call(h.ctx, tt.fn, tt.args...) }),
			allocated(func() { errno, _ = h.call(h.ctx, tt.fn, tt.args...) }),
			allocated(func() { errno, _ = h.call(h.ctx, tt.fn, tt.args...) }))
		if errno != errnoNametoolong {
			t.Errorf("%s of a 64 MiB path: errno %d, want ENAMETOOLONG (%d)", tt.name, errno, errnoNametoolong)
		}
		if alloc > 16<<10 {
			t.Errorf("%s of a 64 MiB path: the host allocated %d bytes", tt.name, alloc)
		}
	}
}

// TestPathLengthBoundary pins both sides of PATH_MAX: a path of 4,095
// bytes (PATH_MAX less the NUL the kernel counts) is looked up, one of
// 4,096 is ENAMETOOLONG even where it names an existing file; the same
// for a symbolic link's target.
func TestPathLengthBoundary(t *testing.T) {
	h := newHostBench(t)
	host := h.in.cfg.Mounts.Mounts()[0].Host
	for _, name := range []string{"file5", "file56"} {
		if err := os.WriteFile(filepath.Join(host, name), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	dots := strings.Repeat("./", 2045) // 4,090 bytes
	longest, tooLong := dots+"file5", dots+"file56"
	if len(longest) != fsmount.PathMax-1 || len(tooLong) != fsmount.PathMax {
		t.Fatalf("lengths %d and %d", len(longest), len(tooLong))
	}
	stat := func(p string) errnum {
		ptr, n := putStr(h, 8192, p)
		errno, _ := h.call(h.ctx, pathFilestatGet, 3, 1, ptr, n, 700)
		return errno
	}
	if errno := stat(longest); errno != errnoSuccess {
		t.Errorf("a 4,095-byte path: errno %d, want success", errno)
	}
	if errno := stat(tooLong); errno != errnoNametoolong {
		t.Errorf("a 4,096-byte path: errno %d, want ENAMETOOLONG", errno)
	}
	if errno := h.symlink(longest, 3, "l1"); errno != errnoSuccess {
		t.Errorf("a link to a 4,095-byte target: errno %d, want success", errno)
	}
	if errno := h.symlink(tooLong, 3, "l2"); errno != errnoNametoolong {
		t.Errorf("a link to a 4,096-byte target: errno %d, want ENAMETOOLONG", errno)
	}
	if _, err := os.Lstat(filepath.Join(host, "l2")); err == nil {
		t.Error("the refused link was made")
	}
}

// TestOpenedDirectoryPathsStayBounded is the attack of a chain of
// directory descriptors, each opened beneath the last by a 4 KiB path
// ("./././…"): each descriptor kept the whole path from the mount root,
// 4 KiB more than the last, so 1,024 of them would hold 2 GiB. A path that
// would be PATH_MAX long from the mount root is ENAMETOOLONG.
func TestOpenedDirectoryPathsStayBounded(t *testing.T) {
	h := newHostBench(t)
	first := strings.Repeat("./", 2000) + "." // 4,001 bytes
	ptr, n := putStr(h, 8192, first)
	if errno, _ := h.call(h.ctx, pathOpen, 3, 1, ptr, n, uint64(oflagDirectory), rightPathOpen, rightPathOpen, 0, 600); errno != errnoSuccess {
		t.Fatalf("open of a 4,001-byte path: errno %d", errno)
	}
	d, _ := memOf(h.mod).u32(600)
	// From the mount root, d's path is 4,001 bytes: a name of 94 bytes
	// makes 4,096 (refused), one of 93 makes 4,095 (looked up).
	for _, tt := range []struct {
		name string
		want errnum
	}{
		{strings.Repeat("./", 45) + "file", errnoNametoolong}, // 4,001+1+94
		{strings.Repeat("./", 45) + "fil", errnoNoent},        // 4,001+1+93: looked up, absent
	} {
		ptr, n := putStr(h, 8192, tt.name)
		if errno, _ := h.call(h.ctx, pathOpen, uint64(d), 1, ptr, n, 0, rightPathOpen, 0, 0, 600); errno != tt.want {
			t.Errorf("open of %d bytes beneath a 4,001-byte directory: errno %d, want %d", len(tt.name), errno, tt.want)
		}
	}
}
