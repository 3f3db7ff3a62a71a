package wasi

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// openDir opens name beneath fd 3 as a directory and returns its fd.
func openDir(t *testing.T, h *hostBench, name string) uint64 {
	t.Helper()
	m := memOf(h.mod)
	m.m.Write(500, []byte(name))
	errno, _ := h.call(h.ctx, pathOpen, 3, 1, 500, uint64(len(name)), uint64(oflagDirectory), dirRights, dirRights|fileRights, 0, 600)
	if errno != errnoSuccess {
		t.Fatalf("open %s: %d", name, errno)
	}
	fd, _ := m.u32(600)
	return uint64(fd)
}

func TestTwoDirectoryDescriptorsOfOneMount(t *testing.T) {
	h := newHostBench(t)
	host := h.in.cfg.Mounts.Mounts()[0].Host
	os.Mkdir(filepath.Join(host, "sub"), 0o755)
	os.WriteFile(filepath.Join(host, "sub", "x"), []byte("x"), 0o644)
	sub := openDir(t, h, "sub")
	m := memOf(h.mod)
	put := func(at uint32, s string) (uint64, uint64) {
		m.m.Write(at, []byte(s))
		return uint64(at), uint64(len(s))
	}
	tests := []struct {
		name           string
		oldFd          uint64
		oldPath        string
		newFd          uint64
		newPath        string
		want           errnum
		wantHostResult string // a path that must exist afterwards
	}{
		{"sub to root", sub, "x", 3, "y", errnoSuccess, "y"},
		{"root to sub", 3, "y", sub, "z", errnoSuccess, "sub/z"},
		{"old path leaves its directory", sub, "../file", 3, "stolen", errnoNotcapable, "file"},
		{"new path leaves its directory", 3, "file", sub, "../../up", errnoNotcapable, "file"},
		{"not a directory", 1, "x", 3, "y", errnoNotdir, "sub/z"},
		{"closed descriptor", 99, "x", 3, "y", errnoBadf, "sub/z"},
	}
	for _, tt := range tests {
		op, ol := put(700, tt.oldPath)
		np, nl := put(800, tt.newPath)
		errno, _ := h.call(h.ctx, pathRename, tt.oldFd, op, ol, tt.newFd, np, nl)
		if errno != tt.want {
			t.Errorf("%s: errno %d, want %d", tt.name, errno, tt.want)
		}
		if _, err := os.Stat(filepath.Join(host, tt.wantHostResult)); err != nil {
			t.Errorf("%s: %v", tt.name, err)
		}
	}
	// A directory descriptor confines its own paths: ".." from sub is refused
	// even though it would stay in the mount, as in wasmtime.
	op, ol := put(700, "../file")
	if errno, _ := h.call(h.ctx, pathFilestatGet, sub, 1, op, ol, 900); errno != errnoNotcapable {
		t.Errorf("stat ../file beneath sub: %d", errno)
	}
}

func TestReaddirCookiesAndShortBuffers(t *testing.T) {
	h := newHostBench(t)
	host := h.in.cfg.Mounts.Mounts()[0].Host
	os.Mkdir(filepath.Join(host, "d"), 0o755)
	for _, n := range []string{"bb", "a", "ccc"} {
		os.WriteFile(filepath.Join(host, "d", n), nil, 0o644)
	}
	d := openDir(t, h, "d")
	m := memOf(h.mod)
	// Read with a buffer of 30 bytes: one 24-byte header and part of the
	// next, then continue from each entry's d_next.
	var names []string
	cookie := uint64(0)
	for range 10 {
		errno, _ := h.call(h.ctx, fdReaddir, d, 1000, 30, cookie, 996)
		if errno != errnoSuccess {
			t.Fatal(errno)
		}
		used, _ := m.u32(996)
		if used == 0 {
			break
		}
		b, _ := m.slice(1000, used)
		if used < sizeDirent {
			t.Fatalf("partial header only (%d bytes)", used)
		}
		next, namlen := rd64(b), rd32(b[16:])
		if uint32(sizeDirent)+namlen > used {
			t.Fatalf("buffer full (%d bytes) but the entry needs %d", used, sizeDirent+namlen)
		}
		names = append(names, string(b[sizeDirent:sizeDirent+namlen]))
		cookie = next
	}
	// The entries come in the host directory's order, after "." and "..".
	if len(names) > 2 {
		slices.Sort(names[2:])
	}
	want := []string{".", "..", "a", "bb", "ccc"}
	if len(names) != len(want) {
		t.Fatalf("names %q, want %q", names, want)
	}
	for i := range want {
		if names[i] != want[i] {
			t.Fatalf("names %q, want %q", names, want)
		}
	}
	// A buffer that cannot hold the whole next entry is filled completely,
	// which tells the guest to retry with a larger one.
	if errno, _ := h.call(h.ctx, fdReaddir, d, 1000, 30, 0, 996); errno != errnoSuccess {
		t.Fatal(errno)
	}
	if used, _ := m.u32(996); used != 30 {
		t.Fatalf("bufused %d, want the full 30", used)
	}
}
