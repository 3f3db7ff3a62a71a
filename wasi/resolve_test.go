package wasi

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tetratelabs/wazero/sys"
)

// TestResolutionIsBoundedInSteps: the resolver looks at each component of
// the red team's path once (no walk again for a ".."), and a path whose
// resolution would take more than maxResolveSteps lookups stops at the
// bound with ENAMETOOLONG.
func TestResolutionIsBoundedInSteps(t *testing.T) {
	h := newHostBench(t)
	mount := h.in.cfg.Mounts.Mounts()[0].Host
	deepChain(t, mount, chainDepth)
	root, _ := h.in.mountRoot(0)

	p := chainAttack()
	r := &resolver{ctx: context.Background(), root: root}
	at, errno := r.walk(p, true)
	if errno != errnoSuccess {
		t.Fatalf("the attack path: errno %d", errno)
	}
	ups := strings.Count(p, "..")
	// L, the chain it leads to, and each x and ".." once.
	if want := 1 + chainDepth + 2*ups; r.steps != want {
		t.Errorf("the attack path took %d steps, want %d (each component once)", r.steps, want)
	}
	if want := strings.Repeat("d/", chainDepth-1) + "d"; at.clean != want {
		t.Errorf("it resolved to %.40q…, want the chain's bottom", at.clean)
	}
	for _, f := range r.frames {
		if f.dir != nil && f.dir != at.dir {
			f.dir.Close()
		}
	}
	at.release()

	// Climbing out of the window and back into the chain: every walk
	// again is counted, and the walk stops at the bound.
	long := "L/" + strings.Repeat(strings.Repeat("../", 40)+"d/", 2)
	r = &resolver{ctx: context.Background(), root: root}
	if _, errno := r.walk(long, true); errno != errnoNametoolong || r.steps != maxResolveSteps+1 {
		t.Errorf("a path of more than %d steps: errno %d after %d steps, want ENAMETOOLONG at the bound", maxResolveSteps, errno, r.steps)
	}
	for _, f := range r.frames {
		if f.dir != nil {
			f.dir.Close()
		}
	}

	// Through the host function, the same answers as os.Root gives for
	// paths it resolves cheaply.
	for _, c := range []struct {
		path string
		want errnum
	}{
		{p, errnoSuccess},
		{long, errnoNametoolong},
		{"L/x/../../x", errnoNoent},
		{"file/..", errnoNotdir},
		{"L/" + strings.Repeat("../", 100) + "d", errnoSuccess},
		{"L/" + strings.Repeat("../", 100) + "x", errnoNoent},
		{"link/../file", errnoNotdir},
		{"d/d/../../file", errnoSuccess},
		{"d/d/../../../file", errnoNotcapable},
	} {
		pp, pl := h.str(0, c.path)
		if got, _ := h.call(h.ctx, pathFilestatGet, 3, uint64(lookupSymlinkFollow), pp, pl, 100); got != c.want {
			t.Errorf("path_filestat_get %.30q…: errno %d, want %d", c.path, got, c.want)
		}
	}
}

// countdown is a context whose Err turns to Canceled after n looks.
type countdown struct {
	context.Context
	n int
}

func (c *countdown) Err() error {
	if c.n--; c.n < 0 {
		return context.Canceled
	}
	return nil
}

// TestResolutionLooksAtTheContext: a resolution stops within
// resolveCheckEvery steps of its context ending.
func TestResolutionLooksAtTheContext(t *testing.T) {
	h := newHostBench(t)
	mount := h.in.cfg.Mounts.Mounts()[0].Host
	deepChain(t, mount, 300)
	root, _ := h.in.mountRoot(0)
	ctx := &countdown{Context: context.Background(), n: 2}
	r := &resolver{ctx: ctx, root: root}
	_, errno := r.walk("L/x", true)
	if errno != errnoIntr || r.steps != 3*resolveCheckEvery {
		t.Errorf("errno %d after %d steps, want EINTR at step %d (the third look)", errno, r.steps, 3*resolveCheckEvery)
	}
	for _, f := range r.frames {
		if f.dir != nil {
			f.dir.Close()
		}
	}
}

// TestGuestSizedWorkLooksAtTheDeadline: the host functions whose work grows
// with the guest's arguments (paths, fd_readdir, poll_oneoff), called past
// the call's deadline, end the instance with the deadline's exit code at
// once, without doing anything; and one whose resolution the context
// stops midway ends it with the context's code, never answering EINTR.
func TestGuestSizedWorkLooksAtTheDeadline(t *testing.T) {
	h := newHostBench(t)
	mount := h.in.cfg.Mounts.Mounts()[0].Host
	fns := impls()
	expired, cancel := context.WithDeadline(context.Background(), time.Unix(1, 0))
	defer cancel()
	np, nl := h.str(0, "made")
	args := map[string][]uint64{
		"path_create_directory": {3, np, nl},
		"path_open":             {3, 0, np, nl, uint64(oflagCreat), rightFdWrite, 0, 0, 100},
		"path_symlink":          {np, nl, 3, np, nl},
		"path_filestat_get":     {3, 0, np, nl, 100},
		"fd_readdir":            {3, 200, 100, 0, 100},
	}
	bounded := 0
	for _, e := range table() {
		fn := fns[e.name]
		if fn == nil || !(strings.HasPrefix(e.name, "path_") || e.name == "fd_readdir" || e.name == "poll_oneoff") {
			continue
		}
		bounded++
		h.str(0, "made") // again: an exit gave the bench fresh memory
		a := args[e.name]
		if a == nil {
			a = make([]uint64, len(e.params))
		}
		errno, exited := h.call(expired, fn, a...)
		if !exited || h.lastExit != sys.ExitCodeDeadlineExceeded {
			t.Errorf("%s past the deadline: errno %d, exited %v (%#x), want the deadline's exit", e.name, errno, exited, h.lastExit)
		}
	}
	if bounded != 12 {
		t.Errorf("%d functions checked, want the 10 path functions, fd_readdir and poll_oneoff", bounded)
	}
	if _, err := os.Lstat(filepath.Join(mount, "made")); err == nil {
		t.Error("a host function called past the deadline made an entry")
	}

	deepChain(t, mount, 300)
	pp, pl := h.str(0, "L/x")
	ctx := &countdown{Context: context.Background(), n: 2}
	if errno, exited := h.call(ctx, fns["path_filestat_get"], 3, 1, pp, pl, 100); !exited || h.lastExit != sys.ExitCodeContextCanceled {
		t.Errorf("a resolution the context stopped: errno %d, exited %v (%#x), want the cancel's exit", errno, exited, h.lastExit)
	}
}
