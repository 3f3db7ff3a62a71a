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
