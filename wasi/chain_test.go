package wasi

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/subako/subako-runner/fsmount"
	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/sys"
)

// chainDepth is the red team's chain: the deepest a link's target
// (fsmount.PathMax-1 bytes of "d/d/…") reaches.
const chainDepth = 2040

// deepChain makes, in the directory mount, the chain d/d/…/d of depth
// directories with a directory x at its bottom, and the link L to the
// bottom, as a guest can over a few calls.
func deepChain(t testing.TB, mount string, depth int) {
	t.Helper()
	r, err := os.OpenRoot(mount)
	if err != nil {
		t.Fatal(err)
	}
	for range depth {
		if err := r.Mkdir("d", 0o755); err != nil {
			t.Fatal(err)
		}
		sub, err := r.OpenRoot("d")
		r.Close()
		if err != nil {
			t.Fatal(err)
		}
		r = sub
	}
	defer r.Close()
	if err := r.Mkdir("x", 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(strings.Repeat("d/", depth-1)+"d", mount+"/L"); err != nil {
		t.Fatal(err)
	}
}

// chainAttack is the path of the repro: L/x/../x/../… as long as a path
// may be. Every ".." made os.Root walk the whole chain again.
func chainAttack() string {
	return "L" + strings.Repeat("/x/..", (4095-1)/5)
}

// BenchmarkChainAttack is the red team's repro: one path_filestat_get of
// chainAttack beneath a 2,040-deep chain.
func BenchmarkChainAttack(b *testing.B) {
	h := newHostBench(b)
	deepChain(b, h.in.cfg.Mounts.Mounts()[0].Host, chainDepth)
	pp, pl := h.str(0, chainAttack())
	for b.Loop() {
		h.call(h.ctx, pathFilestatGet, 3, 1, pp, pl, 100)
	}
}

// TestChainGuestEndsAtItsDeadline runs the whole repro as a guest
// (testdata/wasi/wat/chain_stat.wat: path_filestat_get of chainAttack in
// an endless loop, beneath the chain) in plain wazero, where nothing but
// the host function can stop it: the instance must end with the
// deadline's exit code. Before, it never ended.
func TestChainGuestEndsAtItsDeadline(t *testing.T) {
	bin, err := os.ReadFile("../testdata/wasi/wat/chain_stat.wasm")
	if err != nil {
		t.Fatal(err)
	}
	mount := t.TempDir()
	deepChain(t, mount, chainDepth)
	set, err := fsmount.Open([]fsmount.Mount{{Guest: fsmount.GuestTmp, Host: mount}})
	if err != nil {
		t.Fatal(err)
	}
	defer set.Close()
	ctx := context.Background()
	r, compiled := compileWithWASI(t, bin)
	in := NewInstance(Config{Mounts: set})
	defer in.Close()
	// Any deadline would do; the assertion is on how the run ended.
	const timeout = 500 * time.Millisecond
	dctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	start := time.Now()
	mod, runErr := r.InstantiateModule(WithInstance(dctx, in), compiled, wazero.NewModuleConfig().WithName(""))
	if mod != nil {
		mod.Close(ctx)
	}
	var exit *sys.ExitError
	if !errors.As(runErr, &exit) || exit.ExitCode() != sys.ExitCodeDeadlineExceeded {
		t.Fatalf("the guest ended with %v, want the deadline's exit code", runErr)
	}
	t.Logf("ended %v after a deadline of %v", time.Since(start)-timeout, timeout)
}
