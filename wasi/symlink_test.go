package wasi

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/subako/subako-runner/fsmount"
	"github.com/subako/subako-runner/limits"
	"github.com/tetratelabs/wazero"
)

// linkBench is a host bench whose mount lies three directories below the
// test's temporary directory, with a file "x" at every level above it and
// inside it, so that a link that leaves the mount by any number of ".."
// resolves to an existing file, which filepath.EvalSymlinks then reveals.
func linkBench(t *testing.T, budget *limits.WriteBudget) (*hostBench, string) {
	t.Helper()
	base := t.TempDir()
	mount := filepath.Join(base, "a", "b", "c", "mnt")
	if err := os.MkdirAll(mount, 0o755); err != nil {
		t.Fatal(err)
	}
	for d := mount; d != filepath.Dir(base); d = filepath.Dir(d) {
		os.WriteFile(filepath.Join(d, "x"), []byte(d), 0o644)
	}
	return benchOn(t, mount, budget), mount
}

// benchOn is a host bench of its own (instance, mount set, guest memory),
// as one call is, whose /volume/tmp is the host directory mount: two of
// them on one directory are two calls sharing a volume.
func benchOn(t *testing.T, mount string, budget *limits.WriteBudget) *hostBench {
	t.Helper()
	return benchWith(t, []fsmount.Mount{{Guest: "/volume/tmp", Host: mount}}, budget)
}

// benchWith is a host bench whose preopens are mounts.
func benchWith(t *testing.T, mounts []fsmount.Mount, budget *limits.WriteBudget) *hostBench {
	t.Helper()
	set, err := fsmount.Open(mounts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { set.Close() })
	ctx := context.Background()
	h := &hostBench{t: t, ctx: ctx, r: wazero.NewRuntime(ctx)}
	t.Cleanup(func() { h.r.Close(ctx) })
	if budget == nil {
		budget = limits.NewCallBudget(limits.Default())
	}
	h.in = NewInstance(Config{Stdin: NewStdin(), Mounts: set, Budget: budget})
	t.Cleanup(func() { h.in.Close() })
	h.fresh()
	return h
}

// str writes s at a fixed scratch address chosen by slot and returns its
// (pointer, length).
func (h *hostBench) str(slot int, s string) (uint64, uint64) {
	at := uint32(2000 + slot*4096)
	memOf(h.mod).m.Write(at, []byte(s))
	return uint64(at), uint64(len(s))
}

func (h *hostBench) symlink(target string, fd uint64, name string) errnum {
	tp, tl := h.str(0, target)
	np, nl := h.str(1, name)
	errno, _ := h.call(h.ctx, pathSymlink, tp, tl, fd, np, nl)
	return errno
}

func (h *hostBench) rename(oldFd uint64, oldName string, newFd uint64, newName string) errnum {
	op, ol := h.str(0, oldName)
	np, nl := h.str(1, newName)
	errno, _ := h.call(h.ctx, pathRename, oldFd, op, ol, newFd, np, nl)
	return errno
}

func (h *hostBench) link(oldFd uint64, oldName string, newFd uint64, newName string) errnum {
	op, ol := h.str(0, oldName)
	np, nl := h.str(1, newName)
	errno, _ := h.call(h.ctx, pathLink, oldFd, 0, op, ol, newFd, np, nl)
	return errno
}

func (h *hostBench) mkdir(fd uint64, name string) errnum {
	p, l := h.str(0, name)
	errno, _ := h.call(h.ctx, pathCreateDirectory, fd, p, l)
	return errno
}

// assertConfined reads the mount as a host tool would, with plain path
// APIs: every symbolic link in it must resolve inside it.
func assertConfined(t *testing.T, mount string) {
	t.Helper()
	real, err := filepath.EvalSymlinks(mount)
	if err != nil {
		t.Fatal(err)
	}
	links := 0
	filepath.WalkDir(mount, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.Type()&fs.ModeSymlink == 0 {
			return nil
		}
		links++
		target, _ := os.Readlink(p)
		r, err := filepath.EvalSymlinks(p)
		if err != nil {
			return nil // dangling: it names nothing, inside or out
		}
		if r != real && !strings.HasPrefix(r, real+string(filepath.Separator)) {
			rel, _ := filepath.Rel(mount, p)
			t.Errorf("%s -> %s resolves outside the mount, to %s", rel, target, r)
		}
		return nil
	})
	if links == 0 {
		t.Fatal("no link to check: the test set nothing up")
	}
}

func TestSymlinkTargetIsCheckedFromTheRealDirectory(t *testing.T) {
	h, mount := linkBench(t, nil)
	steps := []struct {
		name string
		do   func() errnum
		want errnum
	}{
		{"a link to its own directory", func() errnum { return h.symlink(".", 3, "d") }, errnoSuccess},
		{"through d/d/d/d, four levels up is outside", func() errnum {
			return h.symlink("../../../../x", openDir(t, h, "d/d/d/d"), "l")
		}, errnoNotcapable},
		{"a name then dot-dot: s/.. where s is the directory itself", func() errnum {
			if e := h.symlink(".", 3, "s"); e != errnoSuccess {
				return e
			}
			return h.symlink("s/..", 3, "l2")
		}, errnoNotcapable},
		{"the same before s exists", func() errnum { return h.symlink("t/..", 3, "l3") }, errnoNotcapable},
		{"dot-dot in the middle of the name part", func() errnum { return h.symlink("d/../../x", 3, "l4") }, errnoNotcapable},
		{"a directory descriptor whose directory moved up", func() errnum {
			for _, d := range []string{"b", "b/c", "b/c/a"} {
				if e := h.mkdir(3, d); e != errnoSuccess {
					return e
				}
			}
			fd := openDir(t, h, "b/c/a")
			if e := h.rename(3, "b/c/a", 3, "a"); e != errnoSuccess {
				return e
			}
			return h.symlink("../../x", fd, "l5")
		}, errnoNotcapable},
		{"up and back inside is fine", func() errnum {
			h.mkdir(3, "p")
			h.mkdir(3, "p/q")
			return h.symlink("../../x", 3, "p/q/ok")
		}, errnoSuccess},
		{"from a descriptor of a real subdirectory", func() errnum { return h.symlink("../x", openDir(t, h, "p"), "ok2") }, errnoSuccess},
		{"through the loop, as deep as it really is", func() errnum { return h.symlink("../x", openDir(t, h, "d/d/p"), "ok3") }, errnoSuccess},
		{"absolute", func() errnum { return h.symlink("/x", 3, "abs") }, errnoNotcapable},
	}
	for _, s := range steps {
		if got := s.do(); got != s.want {
			t.Errorf("%s: errno %d, want %d", s.name, got, s.want)
		}
	}
	for _, ok := range []string{"p/q/ok", "p/ok2", "p/ok3"} {
		if b, err := os.ReadFile(filepath.Join(mount, ok)); err != nil || string(b) != mount {
			t.Errorf("%s does not reach the mount's x: %q %v", ok, b, err)
		}
	}
	assertConfined(t, mount)
}

func TestSymlinkMovedByRenameOrLinkIsCheckedAgain(t *testing.T) {
	h, mount := linkBench(t, nil)
	var pfd uint64
	steps := []struct {
		name string
		do   func() errnum
		want errnum
	}{
		{"a/l -> ../x is inside", func() errnum {
			h.mkdir(3, "a")
			return h.symlink("../x", 3, "a/l")
		}, errnoSuccess},
		{"renamed to the top it would leave", func() errnum { return h.rename(3, "a/l", 3, "l") }, errnoNotcapable},
		{"hard-linked to the top it would leave", func() errnum { return h.link(3, "a/l", 3, "l") }, errnoNotcapable},
		{"renamed through two descriptors", func() errnum { return h.rename(openDir(t, h, "a"), "l", 3, "l") }, errnoNotcapable},
		{"linked through two descriptors", func() errnum { return h.link(openDir(t, h, "a"), "l", 3, "l") }, errnoNotcapable},
		{"renamed beside itself", func() errnum { return h.rename(3, "a/l", 3, "a/m") }, errnoSuccess},
		{"hard-linked beside itself", func() errnum { return h.link(3, "a/m", 3, "a/n") }, errnoSuccess},
		{"a directory holding p/q/l -> ../../x", func() errnum {
			h.mkdir(3, "p")
			h.mkdir(3, "p/q")
			h.mkdir(3, "p/q/r")
			return h.symlink("../../../x", 3, "p/q/r/l")
		}, errnoSuccess},
		{"moved up, the link in it would leave", func() errnum { return h.rename(3, "p/q", 3, "q") }, errnoNotcapable},
		{"moved deeper, then back up where it still fits", func() errnum {
			h.mkdir(3, "deep")
			h.mkdir(3, "deep/er")
			if e := h.rename(3, "p", 3, "deep/er/p"); e != errnoSuccess {
				return e
			}
			pfd = openDir(t, h, "deep/er/p")
			return h.rename(3, "deep/er/p", 3, "p")
		}, errnoSuccess},
		{"moved up through a descriptor opened where the directory was deeper", func() errnum {
			return h.rename(pfd, "q/r", pfd, "r")
		}, errnoNotcapable},
		{"moved up where it still fits", func() errnum {
			h.mkdir(3, "p/s")
			return h.rename(pfd, "q/r", pfd, "s/r")
		}, errnoSuccess},
		{"moved sideways", func() errnum { return h.rename(3, "p/q", 3, "p/q2") }, errnoSuccess},
		{"moved deeper", func() errnum { return h.rename(3, "deep", 3, "a/deep") }, errnoSuccess},
		{"a link without dot-dot goes anywhere", func() errnum {
			if e := h.symlink("x", 3, "a/plain"); e != errnoSuccess {
				return e
			}
			return h.rename(3, "a/plain", 3, "plain")
		}, errnoSuccess},
	}
	for _, s := range steps {
		if got := s.do(); got != s.want {
			t.Errorf("%s: errno %d, want %d", s.name, got, s.want)
		}
	}
	assertConfined(t, mount)
}

// TestNewEntriesAreChargedToTheirCap: every entry a call makes counts one
// against MaxEntries and a link its target in LinkBytes; none costs a byte
// of the write budget, which is file data only.
func TestNewEntriesAreChargedToTheirCap(t *testing.T) {
	l := limits.Default()
	l.MaxEntries = 6
	budget := limits.NewCallBudget(l)
	h, mount := linkBench(t, budget)
	open := func(name string, oflags uint16) errnum {
		p, n := h.str(0, name)
		errno, _ := h.call(h.ctx, pathOpen, 3, 1, p, n, uint64(oflags), rightFdRead|rightFdWrite, 0, 0, 100)
		return errno
	}
	steps := []struct {
		name           string
		do             func() errnum
		want           errnum
		entries, links int64
	}{
		{"a directory", func() errnum { return h.mkdir(3, "d") }, errnoSuccess, 1, 0},
		{"the same directory again", func() errnum { return h.mkdir(3, "d") }, errnoExist, 1, 0},
		{"a refused link is not charged", func() errnum { return h.symlink("d/../../../../x", 3, "bad") }, errnoNotcapable, 1, 0},
		{"a link", func() errnum { return h.symlink("x", 3, "s") }, errnoSuccess, 2, 1},
		{"a file created by path_open", func() errnum { return open("f", oflagCreat) }, errnoSuccess, 3, 1},
		{"opening it again with O_CREAT", func() errnum { return open("f", oflagCreat|oflagTrunc) }, errnoSuccess, 3, 1},
		{"O_EXCL on it", func() errnum { return open("f", oflagCreat|oflagExcl) }, errnoExist, 3, 1},
		{"opening without O_CREAT", func() errnum { return open("x", 0) }, errnoSuccess, 3, 1},
		{"a hard link", func() errnum { return h.link(3, "f", 3, "g") }, errnoSuccess, 4, 1},
		{"a rename makes nothing", func() errnum { return h.rename(3, "g", 3, "h") }, errnoSuccess, 4, 1},
		{"a file through a dangling link", func() errnum {
			h.symlink("made-by-open", 3, "dangling")
			return open("dangling", oflagCreat)
		}, errnoSuccess, 6, 13},
		{"past the cap", func() errnum { return h.mkdir(3, "d2") }, errnoDquot, 6, 13},
		{"past the cap, an existing name", func() errnum { return h.mkdir(3, "d") }, errnoExist, 6, 13},
		{"past the cap, a link", func() errnum { return h.symlink("x", 3, "s2") }, errnoDquot, 6, 13},
		{"past the cap, a file", func() errnum { return open("f2", oflagCreat) }, errnoDquot, 6, 13},
		{"past the cap, a hard link", func() errnum { return h.link(3, "f", 3, "g2") }, errnoDquot, 6, 13},
	}
	for _, s := range steps {
		got := s.do()
		if got != s.want || budget.Entries() != s.entries || budget.LinkBytes() != s.links || budget.Used() != 0 {
			t.Errorf("%s: errno %d, entries %d, link bytes %d, used %d; want %d, %d, %d, 0", s.name, got, budget.Entries(), budget.LinkBytes(), budget.Used(), s.want, s.entries, s.links)
		}
	}
	for _, n := range []string{"d2", "s2", "f2", "g2"} {
		if _, err := os.Lstat(filepath.Join(mount, n)); err == nil {
			t.Errorf("%s was created past the cap", n)
		}
	}
	// Entries cost no bytes: a call whose budget is one byte makes them.
	small := limits.Default()
	small.WriteBudget = 1
	b2 := limits.NewCallBudget(small)
	h2, _ := linkBench(t, b2)
	if got := h2.mkdir(3, "a"); got != errnoSuccess {
		t.Fatalf("a directory on a one-byte budget: %d", got)
	}
	if got := h2.symlink("x", 3, "l"); got != errnoSuccess || b2.Used() != 0 || b2.Entries() != 2 {
		t.Fatalf("a link on a one-byte budget: errno %d, used %d, entries %d", got, b2.Used(), b2.Entries())
	}
}

// TestTwoDescriptorsFollowTheirDirectories renames through a descriptor
// whose directory moved, with a decoy at its old name: the operation acts
// in the directory the descriptor names, not at the path it was opened by.
func TestTwoDescriptorsFollowTheirDirectories(t *testing.T) {
	h, mount := linkBench(t, nil)
	h.mkdir(3, "p")
	must := func(what string, e errnum) {
		t.Helper()
		if e != errnoSuccess {
			t.Fatalf("%s: errno %d", what, e)
		}
	}
	p, n := h.str(0, "p/x")
	errno, _ := h.call(h.ctx, pathOpen, 3, 1, p, n, uint64(oflagCreat), rightFdWrite, 0, 0, 100)
	must("create p/x", errno)
	fd := openDir(t, h, "p")
	must("move p to q", h.rename(3, "p", 3, "q"))
	must("decoy p", h.mkdir(3, "p"))
	must("decoy p/x", h.mkdir(3, "p/x"))
	must("rename through the moved descriptor", h.rename(fd, "x", 3, "y"))
	must("link through the moved descriptor", h.link(3, "y", fd, "z"))
	for _, want := range []string{"y", "q/z", "p/x"} {
		if _, err := os.Lstat(filepath.Join(mount, want)); err != nil {
			t.Errorf("%s: %v", want, err)
		}
	}
	if fi, err := os.Lstat(filepath.Join(mount, "y")); err == nil && fi.IsDir() {
		t.Error("the decoy was moved instead of the descriptor's file")
	}
}
