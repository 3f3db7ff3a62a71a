package fsmount

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"
)

func TestLayoutMountsOrder(t *testing.T) {
	base := t.TempDir()
	skills := filepath.Join(base, "skills")
	for _, d := range []string{"tmp", "data", "pkg", "skills/zeta", "skills/Alpha", "skills/beta"} {
		if err := os.MkdirAll(filepath.Join(base, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// A file and a symlink in the skills directory are not skills.
	os.WriteFile(filepath.Join(skills, "README"), nil, 0o644)
	os.Symlink("/", filepath.Join(skills, "escape"))

	tests := []struct {
		name   string
		layout Layout
		want   []string
	}{
		{"all", Layout{Tmp: base + "/tmp", Data: base + "/data", Package: base + "/pkg", Skills: skills},
			[]string{"/volume/tmp rw", "/volume/data rw", "/package ro", "/skills ro", "/skills/Alpha ro", "/skills/beta ro", "/skills/zeta ro"}},
		{"discovery", Layout{Package: base + "/pkg"}, []string{"/package ro"}},
		{"call without data", Layout{Tmp: base + "/tmp"}, []string{"/volume/tmp rw"}},
		{"none", Layout{}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ms, err := tt.layout.Mounts()
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, m := range ms {
				mode := "rw"
				if m.ReadOnly {
					mode = "ro"
				}
				got = append(got, m.Guest+" "+mode)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("got %q, want %q", got, tt.want)
			}
		})
	}
}

// setup makes /volume/tmp (rw) and /package (ro) mounts next to a secret
// file outside both, and every kind of link that tries to reach it.
func setup(t *testing.T) (*Set, string) {
	t.Helper()
	base := t.TempDir()
	tmp, pkg := filepath.Join(base, "tmp"), filepath.Join(base, "pkg")
	os.Mkdir(tmp, 0o755)
	os.Mkdir(pkg, 0o755)
	secret := filepath.Join(base, "secret")
	os.WriteFile(secret, []byte("secret"), 0o644)
	os.WriteFile(filepath.Join(tmp, "ok.txt"), []byte("ok"), 0o644)
	os.Mkdir(filepath.Join(tmp, "sub"), 0o755)
	os.Symlink(secret, filepath.Join(tmp, "abs-link"))
	os.Symlink("../secret", filepath.Join(tmp, "rel-link"))
	os.Symlink("sub/../../secret", filepath.Join(tmp, "deep-link"))
	os.Symlink("ok.txt", filepath.Join(tmp, "inside-link"))
	os.Symlink("..", filepath.Join(tmp, "sub", "up"))
	s, err := Open([]Mount{{Guest: "/volume/tmp", Host: tmp}, {Guest: "/package", Host: pkg, ReadOnly: true}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s, secret
}

func TestOpenFileConfined(t *testing.T) {
	s, _ := setup(t)
	escapes := []string{
		"/volume/tmp/../secret",
		"/volume/tmp/sub/../../secret",
		"/volume/tmp/abs-link",
		"/volume/tmp/rel-link",
		"/volume/tmp/deep-link",
		"/volume/tmp/sub/up/up/secret",
		"/volume/tmp/../tmp/../secret",
		"/volume/secret",
		"/secret",
	}
	for _, p := range escapes {
		t.Run(p, func(t *testing.T) {
			if f, err := s.OpenFile(p, os.O_RDONLY, 0); err == nil {
				f.Close()
				t.Fatalf("OpenFile(%q) reached a file outside the mounts", p)
			}
			if _, _, err := s.Stat(p); err == nil {
				t.Fatalf("Stat(%q) reached a file outside the mounts", p)
			}
		})
	}
	for _, p := range []string{"/volume/tmp/ok.txt", "/volume/tmp/inside-link", "/volume/tmp/sub/../ok.txt", "/volume/tmp/sub/up/ok.txt"} {
		f, err := s.OpenFile(p, os.O_RDONLY, 0)
		if err != nil {
			t.Fatalf("OpenFile(%q): %v", p, err)
		}
		f.Close()
	}
}

func TestStatHostPath(t *testing.T) {
	s, _ := setup(t)
	host, info, err := s.Stat("/volume/tmp/sub/../ok.txt")
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(s.Mounts()[0].Host, "ok.txt"); host != want || info.Size() != 2 {
		t.Fatalf("got %q size %d, want %q size 2", host, info.Size(), want)
	}
	if _, _, err := s.Stat("/nowhere/x"); !errors.Is(err, fs.ErrNotExist) || !errors.Is(err, ErrNotMounted) {
		t.Fatalf("unmounted path: %v", err)
	}
}

func TestReadOnlyMount(t *testing.T) {
	s, _ := setup(t)
	for _, flag := range []int{os.O_WRONLY, os.O_RDWR, os.O_CREATE | os.O_RDONLY, os.O_TRUNC, os.O_APPEND | os.O_WRONLY} {
		_, err := s.OpenFile("/package/new", flag, 0o644)
		if !errors.Is(err, syscall.EROFS) {
			t.Fatalf("flag %#x: got %v, want EROFS", flag, err)
		}
	}
	if _, err := os.Stat(filepath.Join(s.Mounts()[1].Host, "new")); err == nil {
		t.Fatal("a file was created in a read-only mount")
	}
}

func TestOpenRejectsBadMounts(t *testing.T) {
	d := t.TempDir()
	for _, ms := range [][]Mount{
		{{Guest: "relative", Host: d}},
		{{Guest: "/a/../b", Host: d}},
		{{Guest: "/a", Host: d}, {Guest: "/a", Host: d}},
		{{Guest: "/a", Host: filepath.Join(d, "missing")}},
	} {
		if s, err := Open(ms); err == nil {
			s.Close()
			t.Fatalf("Open(%v) succeeded", ms)
		}
	}
}

func TestLongestPrefixWins(t *testing.T) {
	base := t.TempDir()
	os.MkdirAll(filepath.Join(base, "skills", "a"), 0o755)
	os.WriteFile(filepath.Join(base, "skills", "a", "f"), []byte("x"), 0o644)
	ms, _ := Layout{Skills: filepath.Join(base, "skills")}.Mounts()
	s, err := Open(ms)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	i, rel, err := s.Resolve("/skills/a/f")
	if err != nil || s.Mounts()[i].Guest != "/skills/a" || rel != "f" {
		t.Fatalf("got %d %q %v", i, rel, err)
	}
	if _, _, err := s.Resolve("/skillsx/a"); err == nil {
		t.Fatal("a sibling name with the same prefix matched")
	}
}

// The Set records every use of a mount, refused or failed ones too, and
// nothing else: Resolve and Mounts look at names only.
func TestSetRecordsTouchedMounts(t *testing.T) {
	base := t.TempDir()
	tmp, pkg := filepath.Join(base, "tmp"), filepath.Join(base, "pkg")
	os.Mkdir(tmp, 0o755)
	os.Mkdir(pkg, 0o755)
	tests := []struct {
		name string
		use  func(s *Set)
		want string // the mount touched; "" for none
	}{
		{"resolve", func(s *Set) { s.Resolve("/volume/tmp/x"); s.Mounts() }, ""},
		{"root", func(s *Set) { s.Root(0) }, GuestTmp},
		{"open missing", func(s *Set) { s.OpenFile("/volume/tmp/missing", os.O_RDONLY, 0) }, GuestTmp},
		{"stat missing", func(s *Set) { s.Stat("/package/missing") }, GuestPackage},
		{"refused write", func(s *Set) { s.OpenFile("/package/x", os.O_WRONLY|os.O_CREATE, 0o644) }, GuestPackage},
		{"not mounted", func(s *Set) { s.OpenFile("/etc/passwd", os.O_RDONLY, 0) }, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := Open([]Mount{{Guest: GuestTmp, Host: tmp, Lazy: true}, {Guest: GuestPackage, Host: pkg, ReadOnly: true}})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			tt.use(s)
			for _, g := range []string{GuestTmp, GuestPackage} {
				if got := s.Touched(g); got != (g == tt.want) {
					t.Errorf("%s touched %v", g, got)
				}
			}
		})
	}
}

// A Lazy mount is opened on first use (one whose directory is gone fails
// then, naming the guest path), a borrowed root is never closed by the
// Set, and a closed Set refuses every use.
func TestSetLazyBorrowedAndClosed(t *testing.T) {
	base := t.TempDir()
	lent, err := os.OpenRoot(base)
	if err != nil {
		t.Fatal(err)
	}
	defer lent.Close()
	gone := filepath.Join(base, "gone")
	s, err := Open([]Mount{{Guest: GuestTmp, Host: gone, Lazy: true}, {Guest: GuestPackage, Host: "/nonexistent", Root: lent, ReadOnly: true}})
	if err != nil {
		t.Fatalf("Open checked a Lazy or borrowed mount: %v", err)
	}
	if _, err := s.Root(0); err == nil || !errors.Is(err, fs.ErrNotExist) || strings.Contains(err.Error(), base) {
		t.Fatalf("lazy root of a missing directory: %v", err)
	}
	if r, err := s.Root(1); r != lent || err != nil {
		t.Fatalf("borrowed root: %v %v", r, err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := lent.Stat("."); err != nil {
		t.Fatalf("Close closed a borrowed root: %v", err)
	}
	if _, err := s.Root(1); !errors.Is(err, os.ErrClosed) {
		t.Fatalf("Root after Close: %v", err)
	}
}
