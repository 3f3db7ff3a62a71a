package wasi

import (
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/subako/subako-runner/limits"
)

// TestLinkAndMoveRaceAcrossCalls is the red team's race between two calls
// sharing a volume: call A, holding a descriptor on a/b, makes
// a/b/l -> ../../x (legal two levels down) and removes it, over and over;
// call B moves a/b to c (one level down, where l would leave the mount)
// and back. Each call's check and act must be atomic against the other's:
// no round may find l in c. The calls run their host functions on two
// goroutines against one real directory, for 10,000 rounds each.
func TestLinkAndMoveRaceAcrossCalls(t *testing.T) {
	rounds := 10_000
	if testing.Short() {
		rounds = 2_000
	}
	_, mount := linkBench(t, nil)
	if err := os.MkdirAll(filepath.Join(mount, "a", "b"), 0o755); err != nil {
		t.Fatal(err)
	}
	budget := func() *limits.WriteBudget {
		l := limits.Default()
		l.MaxEntries = 1 << 30 // entries are not what this test is about
		return limits.NewCallBudget(l)
	}
	a, b := benchOn(t, mount, budget()), benchOn(t, mount, budget())
	fd := openDir(t, a, "a/b")
	moved := filepath.Join(mount, "c", "l")

	var wg sync.WaitGroup
	var made, renamed, escapesA, escapesB atomic.Int64
	wg.Add(2)
	go func() {
		defer wg.Done()
		for range rounds {
			if a.symlink("../../x", fd, "l") != errnoSuccess {
				continue
			}
			made.Add(1)
			// The link was made where the descriptor's directory is now:
			// in c, it leads out of the mount.
			if _, err := os.Lstat(moved); err == nil {
				escapesA.Add(1)
			}
			np, nl := a.str(1, "l")
			a.call(a.ctx, pathUnlinkFile, fd, np, nl)
		}
	}()
	go func() {
		defer wg.Done()
		for range rounds {
			if b.rename(3, "a/b", 3, "c") != errnoSuccess {
				continue
			}
			renamed.Add(1)
			if _, err := os.Lstat(moved); err == nil {
				escapesB.Add(1)
			}
			if e := b.rename(3, "c", 3, "a/b"); e != errnoSuccess {
				t.Errorf("moving c back to a/b: errno %d", e)
				return
			}
		}
	}()
	wg.Wait()
	if n := escapesA.Load() + escapesB.Load(); n > 0 {
		t.Errorf("a link in c led out of the mount %d times (seen by the linking call %d, by the moving call %d), in %d links and %d moves", n, escapesA.Load(), escapesB.Load(), made.Load(), renamed.Load())
	}
	if made.Load() == 0 || renamed.Load() == 0 {
		t.Errorf("the race did not run: %d links, %d moves", made.Load(), renamed.Load())
	}
	t.Logf("%d rounds: %d links made, %d moves", rounds, made.Load(), renamed.Load())
}

// TestLinksAreMadeWhereTheyWereJudged: between a link's check and its
// making (or a move's), another call replaces the link p (to a/b, two
// levels down) that the path goes through by a real directory p, one
// level down, with no move and so no lock. The act must happen in the
// directory the check judged, a/b, never in the new p.
func TestLinksAreMadeWhereTheyWereJudged(t *testing.T) {
	h, mount := linkBench(t, nil)
	for _, d := range []string{"a", "a/b", "a/c"} {
		if e := h.mkdir(3, d); e != errnoSuccess {
			t.Fatal(e)
		}
	}
	swap := func() {
		if err := os.Remove(filepath.Join(mount, "p")); err != nil {
			t.Fatal(err)
		}
		if err := os.Mkdir(filepath.Join(mount, "p"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	reset := func() {
		os.Remove(filepath.Join(mount, "p"))
		if err := os.Symlink("a/b", filepath.Join(mount, "p")); err != nil {
			t.Fatal(err)
		}
	}
	defer func() { h.in.beforeLinkAct = nil }()

	reset()
	h.in.beforeLinkAct = swap
	if e := h.symlink("../../x", 3, "p/l"); e != errnoSuccess {
		t.Fatalf("making p/l: errno %d", e)
	}
	if _, err := os.Lstat(filepath.Join(mount, "a", "b", "l")); err != nil {
		t.Errorf("the link is not in a/b, where it was judged: %v", err)
	}
	h.in.beforeLinkAct = nil
	os.Remove(filepath.Join(mount, "p"))
	assertConfined(t, mount)

	reset()
	h.in.beforeLinkAct = swap
	if e := h.rename(3, "a/b/l", 3, "p/m"); e != errnoSuccess {
		t.Fatalf("moving a/b/l to p/m: errno %d", e)
	}
	if _, err := os.Lstat(filepath.Join(mount, "a", "b", "m")); err != nil {
		t.Errorf("the moved link is not in a/b, where it was judged: %v", err)
	}
	h.in.beforeLinkAct = nil
	os.Remove(filepath.Join(mount, "p"))
	assertConfined(t, mount)
}
