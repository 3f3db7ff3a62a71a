package wasi_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/subako/subako-runner/fsmount"
	"github.com/subako/subako-runner/internal/devtools/testguest"
	"github.com/subako/subako-runner/limits"
	"github.com/subako/subako-runner/wasi"
)

// world is the host side of one run: the mounts of a call and a secret file
// outside all of them.
type world struct {
	base, secret string
	budget       *limits.WriteBudget
}

func (w world) host(p ...string) string { return filepath.Join(append([]string{w.base}, p...)...) }

func newWorld(t *testing.T, budget int64) (world, *fsmount.Set) {
	t.Helper()
	base := t.TempDir()
	w := world{base: base, secret: filepath.Join(base, "secret"), budget: limits.NewCallBudget(limits.Limits{WriteBudget: budget})}
	for _, d := range []string{"tmp", "data", "pkg", "skills/a", "skills/b"} {
		must(t, os.MkdirAll(w.host(d), 0o755))
	}
	must(t, os.WriteFile(w.secret, []byte("secret"), 0o644))
	must(t, os.WriteFile(w.host("pkg", "asset.txt"), []byte("asset"), 0o644))
	must(t, os.WriteFile(w.host("skills", "a", "SKILL.md"), []byte("skill"), 0o644))
	must(t, os.WriteFile(w.host("data", "keep.txt"), []byte("kept"), 0o644))
	must(t, os.Symlink(w.secret, w.host("tmp", "abs-link")))
	must(t, os.Symlink("../secret", w.host("tmp", "rel-link")))
	must(t, os.Symlink("keep.txt", w.host("data", "inside-link")))
	ms, err := fsmount.Layout{Tmp: w.host("tmp"), Data: w.host("data"), Package: w.host("pkg"), Skills: w.host("skills")}.Mounts()
	must(t, err)
	set, err := fsmount.Open(ms)
	must(t, err)
	t.Cleanup(func() { set.Close() })
	return w, set
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func size(t *testing.T, p string) int64 {
	t.Helper()
	fi, err := os.Stat(p)
	if err != nil {
		return -1
	}
	return fi.Size()
}

// fsCase runs ops (one guest argument each) and expects one output line per
// op; check then inspects the host side.
type fsCase struct {
	name   string
	budget int64
	ops    []string
	want   []string // expected result per op: "ok", "ok <result>", "errno=N"
	check  func(t *testing.T, w world)
}

// Descriptors of the preopens, in ABI order.
const (
	fdTmp  = "3"
	fdData = "4"
)

func fsCases() []fsCase {
	return []fsCase{
		{name: "preopen order", ops: []string{"preopens"},
			want: []string{"ok /volume/tmp,/volume/data,/package,/skills,/skills/a,/skills/b"}},
		{name: "write read append size",
			ops: []string{"write:/volume/tmp/f:5", "size:/volume/tmp/f", "append:/volume/tmp/g:abc",
				"append:/volume/tmp/g:def", "read:/volume/tmp/g", "read:/volume/data/keep.txt",
				"read:/package/asset.txt", "read:/skills/a/SKILL.md", "read:/volume/data/inside-link", "read:/volume/tmp/missing"},
			want: []string{"ok", "ok 5", "ok", "ok", "ok abcdef", "ok kept", "ok asset", "ok skill", "ok kept", "errno=44"}},
		{name: "seek", ops: []string{"seek:/volume/tmp/s"}, want: []string{"ok world 11"}},
		{name: "set times", ops: []string{"write:/volume/tmp/t:1", "chtimes:/volume/tmp/t"}, want: []string{"ok", "ok"},
			check: func(t *testing.T, w world) {
				fi, err := os.Stat(w.host("tmp", "t"))
				if err != nil || fi.ModTime().Unix() != 1_000_000_000 {
					t.Errorf("mtime %v, %v", fi.ModTime(), err)
				}
			}},
		{name: "directories",
			ops: []string{"mkdir:/volume/tmp/d", "write:/volume/tmp/d/x:1", "mkdir:/volume/tmp/d/y", "ls:/volume/tmp/d",
				"ls:/skills", "ls:/package", "mkdir:/volume/tmp/d", "rmdir:/volume/tmp/d", "unlink:/volume/tmp/d",
				"rmdir:/volume/tmp/d/x", "unlink:/volume/tmp/d/x", "rmdir:/volume/tmp/d/y", "ls:/volume/tmp/d"},
			want: []string{"ok", "ok", "ok", "ok x,y/", "ok a/,b/", "ok asset.txt", "errno=20", "errno=55", "errno=31",
				"errno=54", "ok", "ok", "ok"}},
		{name: "many entries need several fd_readdir calls",
			ops:  []string{"mkdir:/volume/tmp/many", "mkfiles:/volume/tmp/many:600", "count:/volume/tmp/many"},
			want: []string{"ok", "ok", "ok 600"}},
		{name: "rename and links inside a mount",
			ops: []string{"write:/volume/tmp/a:3", "rename:/volume/tmp/a:/volume/tmp/b", "size:/volume/tmp/a",
				"size:/volume/tmp/b", "link:/volume/tmp/b:/volume/tmp/c", "size:/volume/tmp/c",
				"symlink:b:/volume/tmp/l", "readlink:/volume/tmp/l", "size:/volume/tmp/l", "lstat:/volume/tmp/l"},
			want: []string{"ok", "ok", "errno=44", "ok 3", "ok", "ok 3", "ok", "ok b", "ok 3", "ok L---------"}},
		{name: "escape by dot-dot",
			ops:  []string{"rawopen:" + fdTmp + ":../secret", "rawopen:" + fdTmp + ":./../secret", "rawopen:" + fdData + ":../tmp/../../secret"},
			want: []string{"errno=76", "errno=76", "errno=76"}},
		{name: "escape by existing absolute and relative symlinks",
			ops:  []string{"rawopen:" + fdTmp + ":abs-link", "rawopen:" + fdTmp + ":rel-link", "read:/volume/tmp/abs-link", "read:/volume/tmp/rel-link", "rawopen-nofollow:" + fdTmp + ":rel-link"},
			want: []string{"errno=76", "errno=76", "errno=76", "errno=76", "errno=32"}},
		{name: "escape by guest-created symlinks",
			ops: []string{"symlink:../secret:/volume/tmp/mine", "symlink:" + "/etc/passwd" + ":/volume/tmp/abs",
				"mkdir:/volume/tmp/sub", "symlink:..:/volume/tmp/sub/up", "rawopen:" + fdTmp + ":sub/up/../secret",
				"symlink:sub/up/..:/volume/tmp/chain", "rawopen:" + fdTmp + ":chain/secret"},
			// sub/up/.. reads as sub but leads two levels up: a name then ".."
			// is refused in a link's target (wasi/links.go).
			want: []string{"errno=76", "errno=76", "ok", "ok", "errno=76", "errno=76", "errno=44"},
			check: func(t *testing.T, w world) {
				for _, l := range []string{"mine", "chain"} {
					if _, err := os.Lstat(w.host("tmp", l)); err == nil {
						t.Errorf("the escaping symlink %s was created", l)
					}
				}
			}},
		{name: "escape by hard link",
			ops: []string{"rawlink:" + fdTmp + ":../secret:" + fdTmp + ":stolen", "rawlink:" + fdTmp + ":abs-link:" + fdTmp + ":stolen2",
				"rawopen:" + fdTmp + ":stolen2", "write:/volume/data/d:1", "rawlink:" + fdData + ":d:" + fdTmp + ":x", "rawrename:" + fdData + ":d:" + fdTmp + ":x"},
			// A hard link of a link that leads outside is refused like the link.
			want: []string{"errno=76", "errno=76", "errno=44", "ok", "errno=75", "errno=75"},
			check: func(t *testing.T, w world) {
				var st syscall.Stat_t
				must(t, syscall.Stat(w.secret, &st))
				if st.Nlink != 1 {
					t.Errorf("secret has %d links", st.Nlink)
				}
			}},
		{name: "read-only mounts",
			ops: []string{"write:/package/x:1", "mkdir:/package/d", "unlink:/package/asset.txt", "rename:/package/asset.txt:/package/y",
				"symlink:asset.txt:/package/l", "truncate:/package/asset.txt:0", "chtimes:/package/asset.txt", "rmdir:/skills/b",
				"link:/package/asset.txt:/package/z", "append:/skills/a/SKILL.md:x", "read:/package/asset.txt"},
			want: []string{"errno=69", "errno=69", "errno=69", "errno=69", "errno=69", "errno=69", "errno=69", "errno=69",
				"errno=69", "errno=69", "ok asset"},
			check: func(t *testing.T, w world) {
				if b, _ := os.ReadFile(w.host("pkg", "asset.txt")); string(b) != "asset" {
					t.Errorf("asset changed to %q", b)
				}
				for _, d := range []string{"pkg", "skills/a", "skills/b", "skills"} {
					es, _ := os.ReadDir(w.host(d))
					if want := map[string]int{"pkg": 1, "skills/a": 1, "skills/b": 0, "skills": 2}[d]; len(es) != want {
						t.Errorf("%s has %d entries, want %d", d, len(es), want)
					}
				}
			}},
		{name: "fd_allocate and sockets",
			ops:  []string{"allocate:/volume/tmp/f", "sock:1", "sock:3", "sock:99"},
			want: []string{"errno=58", "ok 57,57,57,57", "ok 57,57,57,57", "ok 8,8,8,8"},
			check: func(t *testing.T, w world) {
				if s := size(t, w.host("tmp", "f")); s != 0 {
					t.Errorf("fd_allocate grew the file to %d", s)
				}
			}},
		// The budget is file data only: the files a case creates cost none of it.
		{name: "quota: many small writes", budget: 1000,
			ops: []string{"writes:/volume/tmp/f:100:20"}, want: []string{"errno=19"},
			check: func(t *testing.T, w world) {
				if s := size(t, w.host("tmp", "f")); s != 1000 || w.budget.Used() != 1000 {
					t.Errorf("size %d, used %d; want 1000, %d", s, w.budget.Used(), 1000)
				}
			}},
		{name: "quota: one huge write writes nothing", budget: 1000,
			ops:  []string{"write:/volume/tmp/f:1001", "size:/volume/tmp/f", "write:/volume/tmp/f:1000"},
			want: []string{"errno=19", "ok 0", "ok"}},
		{name: "quota: pwrite at a huge offset", budget: 1000,
			ops:  []string{"pwrite:/volume/tmp/f:1000000:1", "size:/volume/tmp/f", "pwrite:/volume/tmp/f:990:10", "size:/volume/tmp/f"},
			want: []string{"errno=19", "ok 0", "ok", "ok 1000"}},
		{name: "quota: set_size growth", budget: 1000,
			ops:  []string{"write:/volume/tmp/f:0", "truncate:/volume/tmp/f:5000", "truncate:/volume/tmp/f:600", "truncate:/volume/tmp/f:100", "truncate:/volume/tmp/f:600", "size:/volume/tmp/f"},
			want: []string{"ok", "errno=19", "ok", "ok", "errno=19", "ok 100"}},
		{name: "quota: spread over two mounts", budget: 1000,
			ops:  []string{"write:/volume/tmp/a:600", "write:/volume/data/b:600", "write:/volume/data/b:400"},
			want: []string{"ok", "errno=19", "ok"}},
	}
}

func runFS(t *testing.T, wasm string, tc fsCase) {
	budget := tc.budget
	if budget == 0 {
		budget = limits.GiB
	}
	w, set := newWorld(t, budget)
	out, errOut := &syncBuffer{}, &syncBuffer{}
	code, err := run(t, context.Background(), wasm, wasi.Config{
		Args: append([]string{"fsprobe"}, tc.ops...), Stdout: out, Stderr: errOut, Mounts: set, Budget: w.budget,
	})
	if err != nil || code != 0 {
		t.Fatalf("exit %d, err %v\nstdout:\n%s\nstderr:\n%s", code, err, out, errOut)
	}
	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	if len(lines) != len(tc.ops) {
		t.Fatalf("got %d lines for %d ops:\n%s", len(lines), len(tc.ops), out)
	}
	for i, op := range tc.ops {
		if want := op + " " + tc.want[i]; lines[i] != want {
			t.Errorf("got  %q\nwant %q", lines[i], want)
		}
	}
	if b, _ := os.ReadFile(w.secret); string(b) != "secret" {
		t.Errorf("the secret outside the mounts changed: %q", b)
	}
	if entries, _ := os.ReadDir(w.base); len(entries) != 5 {
		t.Errorf("something was created outside the mounts: %v", entries)
	}
	if tc.check != nil {
		tc.check(t, w)
	}
}

func TestFileSystemGoGuest(t *testing.T) {
	if testing.Short() {
		t.Skip("the C and Rust guests run the same table under -short; the Go guest is slow under -race")
	}
	wasm := testguest.Go(t, "../testdata/wasi/go/fsprobe")
	for _, tc := range fsCases() {
		t.Run(tc.name, func(t *testing.T) { runFS(t, wasm, tc) })
	}
}

// cGuest is the committed wasi-libc build of testdata/wasi/c/fsprobe.c.
const cGuest = "../testdata/wasi/c/fsprobe.wasm"

func TestFileSystemCGuest(t *testing.T) {
	cases := append(fsCases(),
		fsCase{name: "stdio is a terminal to wasi-libc, so stdout is line-buffered",
			ops: []string{"isatty:0", "isatty:1", "isatty:2"}, want: []string{"ok 1", "ok 1", "ok 1"}},
		fsCase{name: "fd_fdstat_set_rights only drops rights",
			ops: []string{"rights:/volume/tmp/r"}, want: []string{"ok 0,76,8"}},
		fsCase{name: "fd_renumber and fd_tell",
			ops: []string{"renumber:/volume/tmp/n"}, want: []string{"ok 0,0,3,8,8"}},
		fsCase{name: "oflags and open modes",
			ops: []string{"oflags:/volume/tmp/o"}, want: []string{"ok 0,20,54,0,8,31"}},
		fsCase{name: "nanosleep through poll_oneoff",
			ops: []string{"sleep:30"}, want: []string{"ok 1"}},
	)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) { runFS(t, cGuest, tc) })
	}
}
