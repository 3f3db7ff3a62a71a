package wasi

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestFirstLineRefusesWithoutTouchingTheMount: a path that names nothing
// beneath its descriptor (absolute, or climbing out first) is refused by
// readPath itself, before the mount's root is reached — os.Root would
// refuse it too, but that second line must not be the only one. The mount
// staying untouched shows which line answered. The same holds for the
// other refusals of readPath (empty, NUL, too long, out of memory).
func TestFirstLineRefusesWithoutTouchingTheMount(t *testing.T) {
	paths := []struct {
		path string
		want errnum
	}{
		{"/", errnoNotcapable},
		{"/etc/passwd", errnoNotcapable},
		{"/volume/tmp/file", errnoNotcapable},
		{"..", errnoNotcapable},
		{"../", errnoNotcapable},
		{"../file", errnoNotcapable},
		{"./..", errnoNotcapable},
		{".//../x", errnoNotcapable},
		{"", errnoNoent},
		{"fi\x00le", errnoInval},
		{strings.Repeat("a", 4096), errnoNametoolong},
	}
	for _, p := range paths {
		for _, c := range pathCalls(8192, uint64(len(p.path)), 1000, 4) {
			h := newHostBench(t)
			putStr(h, 8192, p.path)
			putStr(h, 1000, "file")
			errno, _ := h.call(h.ctx, c.fn, c.args...)
			if c.name == "path_symlink, target" {
				continue // a target is no path beneath the descriptor: TestSymlinkTargetForms
			}
			if errno != p.want {
				t.Errorf("%s of %.40q: errno %d, want %d", c.name, p.path, errno, p.want)
			}
			if h.in.cfg.Mounts.Touched("/volume/tmp") {
				t.Errorf("%s of %.40q: the mount was reached", c.name, p.path)
			}
		}
	}
	// Paths that stay inside reach the mount (and are looked up there).
	for _, p := range []string{"file", "./file", "a/..", "file/..", "..a", "...", "a/../file"} {
		h := newHostBench(t)
		ptr, n := putStr(h, 8192, p)
		h.call(h.ctx, pathFilestatGet, 3, 1, ptr, n, 700)
		if !h.in.cfg.Mounts.Touched("/volume/tmp") {
			t.Errorf("%q was refused before the mount", p)
		}
	}
}

func TestClimbsFirstAndLexEscapes(t *testing.T) {
	tests := []struct {
		path          string
		climbs, lexes bool
	}{
		{"..", true, true},
		{"../", true, true},
		{"../x", true, true},
		{"./..", true, true},
		{"././../x", true, true},
		{".//..", true, true},
		{"a/../..", false, true},
		{"a/../../x", false, true},
		{"/x", false, true},
		{"/", false, true},
		{"a/..", false, false},
		{"a/../b", false, false},
		{".", false, false},
		{"", false, false},
		{"..a", false, false},
		{"a..", false, false},
		{"...", false, false},
		{"a/..b", false, false},
		{"x/./..", false, false},
	}
	for _, tt := range tests {
		if got := climbsFirst(tt.path); got != tt.climbs {
			t.Errorf("climbsFirst(%q) = %v", tt.path, got)
		}
		if got := lexEscapes(tt.path); got != tt.lexes {
			t.Errorf("lexEscapes(%q) = %v", tt.path, got)
		}
	}
}

// TestSymlinkTargetForms pins the form rule of links.go on each side: ".."
// only in front, relative, at most maxLinkClimb of them.
func TestSymlinkTargetForms(t *testing.T) {
	tests := []struct {
		target string
		up     int
		ok     bool
	}{
		{"x", 0, true},
		{".", 0, true},
		{"./x", 0, true},
		{"a//b", 0, true},
		{"../x", 1, true},
		{"./../x", 1, true},
		{"../../x/y", 2, true},
		{"../..", 2, true},
		{"..a/x", 0, true},
		{"x/..", 0, false},
		{"x/../..", 0, false},
		{"../x/..", 0, false},
		{"/x", 0, false},
		{"/", 0, false},
	}
	for _, tt := range tests {
		up, ok := linkUp(tt.target)
		if up != tt.up || ok != tt.ok {
			t.Errorf("linkUp(%q) = %d, %v; want %d, %v", tt.target, up, ok, tt.up, tt.ok)
		}
	}
	for _, tt := range []struct {
		target string
		depth  int
		esc    bool
	}{
		{"../x", 1, false}, {"../x", 0, true}, {"../../x", 1, true}, {"../../x", 2, false},
		{"x", 0, false}, {"/x", 5, true}, {"x/..", 5, true},
	} {
		if got := linkEscapes(tt.target, tt.depth); got != tt.esc {
			t.Errorf("linkEscapes(%q, %d) = %v", tt.target, tt.depth, got)
		}
	}
}

// TestSymlinkClimbBoundary: a link may climb maxLinkClimb directories and
// no more, however deep its directory is; and no more than its directory
// lies below the mount root (both sides of each).
func TestSymlinkClimbBoundary(t *testing.T) {
	h, mount := linkBench(t, nil)
	deep := strings.Repeat("d/", maxLinkClimb+1) // 65 levels
	if err := os.MkdirAll(filepath.Join(mount, deep), 0o755); err != nil {
		t.Fatal(err)
	}
	at := func(levels int) uint64 { return openDir(t, h, strings.TrimSuffix(strings.Repeat("d/", levels), "/")) }
	up := func(n int) string { return strings.Repeat("../", n) + "x" }
	tests := []struct {
		name   string
		dir    uint64
		target string
		want   errnum
	}{
		{"64 up from 65 deep", at(maxLinkClimb + 1), up(maxLinkClimb), errnoSuccess},
		{"65 up from 65 deep", at(maxLinkClimb + 1), up(maxLinkClimb + 1), errnoNotcapable},
		{"2 up from 2 deep", at(2), up(2), errnoSuccess},
		{"3 up from 2 deep", at(2), up(3), errnoNotcapable},
		{"1 up from the root", 3, up(1), errnoNotcapable},
		{"none up from the root", 3, up(0), errnoSuccess},
	}
	for i, tt := range tests {
		if got := h.symlink(tt.target, tt.dir, "l"+string(rune('a'+i))); got != tt.want {
			t.Errorf("%s: errno %d, want %d", tt.name, got, tt.want)
		}
	}
	assertConfined(t, mount)
}

// TestTwoDescriptorsKeepEachPathInItsDirectory: path_rename and path_link
// between two descriptors of one mount resolve both paths from the mount
// root, so each is first checked not to leave its own directory — a
// climb after a name ("a/../../x") included, which readPath leaves to
// os.Root and which the mount root would otherwise take in.
func TestTwoDescriptorsKeepEachPathInItsDirectory(t *testing.T) {
	h := newHostBench(t)
	host := h.in.cfg.Mounts.Mounts()[0].Host
	if err := os.MkdirAll(filepath.Join(host, "p", "a"), 0o755); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(host, "p", "inner"), []byte("x"), 0o644)
	p := openDir(t, h, "p")
	tests := []struct {
		name                   string
		link                   bool
		oldFd                  uint64
		oldName                string
		newFd                  uint64
		newName, mustNotAppear string
	}{
		{"rename, the new path climbs after a name", false, 3, "file", p, "a/../../moved", "moved"},
		{"link, the new path climbs after a name", true, 3, "file", p, "a/../../linked", "linked"},
		{"rename, the old path climbs after a name", false, p, "a/../../file", 3, "stolen", "stolen"},
		{"link, the old path climbs after a name", true, p, "a/../../file", 3, "stolen2", "stolen2"},
	}
	for _, tt := range tests {
		op := h.rename
		if tt.link {
			op = h.link
		}
		if got := op(tt.oldFd, tt.oldName, tt.newFd, tt.newName); got != errnoNotcapable {
			t.Errorf("%s: errno %d, want ENOTCAPABLE", tt.name, got)
		}
		if _, err := os.Lstat(filepath.Join(host, tt.mustNotAppear)); err == nil {
			t.Errorf("%s: %s was made", tt.name, tt.mustNotAppear)
		}
	}
	// Inside each directory, the same operations work.
	if got := h.rename(p, "a/../inner", 3, "out"); got != errnoSuccess {
		t.Errorf("a rename between two descriptors inside both: errno %d", got)
	}
}
