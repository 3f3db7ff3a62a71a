package wasi_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/subako/subako-runner/fsmount"
	"github.com/subako/subako-runner/internal/devtools/testguest"
	"github.com/subako/subako-runner/limits"
	"github.com/subako/subako-runner/wasi"
)

// TestGuestCannotCreateMoreEntriesThanTheCap runs a guest that makes
// directories, a directory chain and links until refused: it gets EDQUOT
// after exactly MaxEntries, each counted against that cap (and none against
// the bytes of the write budget), and the
// volume it leaves is removed whole.
func TestGuestCannotCreateMoreEntriesThanTheCap(t *testing.T) {
	wasm := testguest.Go(t, "../testdata/wasi/go/entries")
	for _, mode := range []string{"wide", "deep", "links"} {
		t.Run(mode, func(t *testing.T) {
			// The default cap is shown once; the other modes use a smaller
			// one that holds the same way in less time.
			l := limits.Default()
			if mode != "wide" || testing.Short() {
				l.MaxEntries = 300
			}
			tmp := filepath.Join(t.TempDir(), "tmp")
			must(t, os.Mkdir(tmp, 0o755))
			set, err := fsmount.Open([]fsmount.Mount{{Guest: fsmount.GuestTmp, Host: tmp}})
			must(t, err)
			defer set.Close()
			budget := limits.NewCallBudget(l)
			out := &syncBuffer{}
			code, err := run(t, context.Background(), wasm, wasi.Config{
				Args: []string{"entries", mode, fmt.Sprint(2 * l.MaxEntries)}, Stdout: out, Mounts: set, Budget: budget,
			})
			if err != nil || code != 0 {
				t.Fatalf("exit %d, %v; stdout %q", code, err, out)
			}
			if got, want := strings.TrimSpace(out.String()), fmt.Sprintf("%s %d 19", mode, l.MaxEntries); got != want {
				t.Fatalf("guest says %q, want %q (EDQUOT after the cap)", got, want)
			}
			extra := int64(0)
			if mode == "links" {
				extra = 1 // each target is "x"
			}
			if budget.Entries() != int64(l.MaxEntries) || budget.LinkBytes() != int64(l.MaxEntries)*extra || budget.Used() != 0 {
				t.Errorf("budget: %d entries, %d bytes of link targets, %d bytes of file data", budget.Entries(), budget.LinkBytes(), budget.Used())
			}
			if n := countEntries(t, tmp); n != l.MaxEntries {
				t.Errorf("the volume holds %d entries, want %d", n, l.MaxEntries)
			}
			if err := fsmount.RemoveAll(tmp); err != nil {
				t.Fatal(err)
			}
			if _, err := os.Lstat(tmp); err == nil {
				t.Fatal("the volume was not removed")
			}
		})
	}
}

// countEntries counts the entries beneath dir, descending a chain through
// os.Root one level at a time (its paths are beyond PATH_MAX).
func countEntries(t *testing.T, dir string) int {
	t.Helper()
	r, err := os.OpenRoot(dir)
	must(t, err)
	n := 0
	for {
		f, err := r.Open(".")
		must(t, err)
		es, err := f.ReadDir(-1)
		f.Close()
		must(t, err)
		n += len(es)
		if len(es) != 1 || !es[0].IsDir() {
			r.Close()
			return n
		}
		next, err := r.OpenRoot(es[0].Name())
		r.Close()
		must(t, err)
		r = next
	}
}
