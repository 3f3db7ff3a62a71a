package wasi_test

import (
	"context"
	"strings"
	"testing"

	"github.com/subako/subako-runner/wasi"
)

// TestFileSystemRustGuest runs testdata/wasi/rust/fsprobe.wasm (Rust std,
// committed with its source): its script language is its own (see its
// README), one output line per operation.
func TestFileSystemRustGuest(t *testing.T) {
	// 1000 bytes of file data: the entries (a.txt, d, c.txt) cost none of
	// them, and far's hole of 999 bytes and its byte pass the 993 left.
	w, set := newWorld(t, 1000)
	script := []struct{ op, want string }{
		{"write /volume/tmp/a.txt hello", `ok wrote 5`},
		{"append /volume/tmp/a.txt XY", `ok wrote 2`},
		{"read /volume/tmp/a.txt", `ok 7 "helloXY"`},
		{"seek-read /volume/tmp/a.txt 3", `ok 4 "loXY"`},
		{"mkdir /volume/tmp/d", `ok`},
		{"mkdir /volume/tmp/d", `err 20 EEXIST`},
		{"rename /volume/tmp/a.txt /volume/tmp/d/b.txt", `ok`},
		{"ls /volume/tmp/d", `ok b.txt`},
		{"ls /volume/tmp", `ok abs-link@ d/ rel-link@`},
		{"ls /skills", `ok a/ b/`},
		{"read /skills/a/SKILL.md", `ok 5 "skill"`},
		{"write /package/x y", `err 69 EROFS`},
		{"rm /package/asset.txt", `err 69 EROFS`},
		{"rename /volume/tmp/d/b.txt /volume/data/b.txt", `err 75 EXDEV`},
		{"symlink ../secret /volume/tmp/s", `err 76 ENOTCAPABLE`},
		{"read /volume/tmp/rel-link", `err 76 ENOTCAPABLE`},
		{"read /volume/tmp/abs-link", `err 76 ENOTCAPABLE`},
		{"link /volume/tmp/d/b.txt /volume/tmp/c.txt", `ok`},
		{"stat /volume/tmp/c.txt", `ok file 7`},
		{"big-write /volume/tmp/big 100000", `err 19 EDQUOT after 0`},
		{"truncate /volume/tmp/c.txt 5000", `err 19 EDQUOT`},
		{"write-at /volume/data/far 999 z", `err 19 EDQUOT`},
	}
	var args []string
	for _, s := range script {
		args = append(args, strings.Fields(s.op)...)
	}
	out, errOut := &syncBuffer{}, &syncBuffer{}
	code, err := run(t, context.Background(), "../testdata/wasi/rust/fsprobe.wasm", wasi.Config{
		Args: append([]string{"fsprobe"}, args...), Stdout: out, Stderr: errOut, Mounts: set, Budget: w.budget,
	})
	if err != nil || code != 0 {
		t.Fatalf("exit %d, err %v\n%s\n%s", code, err, out, errOut)
	}
	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	if len(lines) != len(script) {
		t.Fatalf("got %d lines for %d ops:\n%s", len(lines), len(script), out)
	}
	for i, s := range script {
		if lines[i] != s.want {
			t.Errorf("%s: got %q, want %q", s.op, lines[i], s.want)
		}
	}
}
