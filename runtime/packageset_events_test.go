package runtime

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// blockingLoader calls started (once per load) and then waits until
// release closes, or, when it watches, its context ends.
type blockingLoader struct {
	inner   PackageLoader
	started chan string
	release chan struct{}
	watch   bool
}

func (l *blockingLoader) LoadPackage(ctx context.Context, key string) (*Artifact, string, error) {
	l.started <- key
	if l.watch {
		select {
		case <-l.release:
		case <-ctx.Done():
			return nil, "", ctx.Err()
		}
	} else {
		<-l.release
	}
	return l.inner.LoadPackage(ctx, key)
}

// Every PackageSet.Call ends in exactly one Observer event, whether or
// not it reached its package: a cancel or a deadline while it waited for
// the open (canceled), a loader that failed or a package Open refused
// (error, open_failed), a set already closed (error,
// package_set_closed), and a call that ran (its own outcome).
func TestPackageSetCallEndsInOneEvent(t *testing.T) {
	t.Parallel()
	rec := &recorder{}
	rt, err := New(context.Background(), Config{CompilationCacheDir: compiledCache, Observer: rec, TempDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Close(context.Background()) })
	d := setStore(t, rt, 2)
	// k1's package directory goes: its artifact opens, the package not.
	if err := os.RemoveAll(filepath.Join(d.Packages, "k1")); err != nil {
		t.Fatal(err)
	}
	bl := &blockingLoader{inner: d, started: make(chan string, 8), release: make(chan struct{})}
	s := newSet(t, rt, PackageSetConfig{Loader: PackageLoaderFunc(func(ctx context.Context, key string) (*Artifact, string, error) {
		switch key {
		case "slow":
			return bl.LoadPackage(ctx, "k0")
		case "down":
			return nil, "", errors.New("object store unavailable")
		}
		return d.LoadPackage(ctx, key)
	})})
	args := json.RawMessage(`{"name":"Ada"}`)
	call := func(ctx context.Context, key string) error {
		res, err := s.Call(ctx, key, CallRequest{Tool: "greet", Arguments: args})
		if res != nil {
			res.Release()
		}
		return err
	}
	type want struct {
		outcome Outcome
		code    string
	}
	var wants []want

	// Canceled while the open waits in the loader.
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- call(ctx, "slow") }()
	<-bl.started
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("canceled while waiting: %v", err)
	}
	wants = append(wants, want{OutcomeCanceled, ""})
	// A deadline while it waits (the same open, still under way).
	dctx, dcancel := context.WithTimeout(context.Background(), time.Millisecond)
	if err := call(dctx, "slow"); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("deadline while waiting: %v", err)
	}
	dcancel()
	wants = append(wants, want{OutcomeCanceled, ""})
	close(bl.release)

	for _, key := range []string{"down", "k1", "nothing/../k0"} {
		if err := call(context.Background(), key); err == nil || errors.Is(err, ErrPackageSetClosed) {
			t.Fatalf("%s: %v, want the open's error", key, err)
		}
		wants = append(wants, want{OutcomeError, CodeOpenFailed})
	}
	if err := call(context.Background(), "k0"); err != nil {
		t.Fatal(err)
	}
	wants = append(wants, want{OutcomeOK, ""})
	s.Close(context.Background())
	if err := call(context.Background(), "k0"); !errors.Is(err, ErrPackageSetClosed) {
		t.Fatalf("after Close: %v", err)
	}
	wants = append(wants, want{OutcomeError, CodePackageSetClosed})

	rec.mu.Lock()
	defer rec.mu.Unlock()
	var got []want
	for _, e := range rec.calls {
		got = append(got, want{e.Outcome, e.Code})
		if e.Package == "" || e.Tool != "greet" || e.Start.IsZero() {
			t.Errorf("event %+v: want the key (or package), the tool and the start", e)
		}
	}
	if fmt.Sprint(got) != fmt.Sprint(wants) {
		t.Fatalf("events %v; want %v (one per call)", got, wants)
	}
}

// Close stops the callers waiting for an open with ErrPackageSetClosed,
// never with a cancellation of their own, whether the loader watches its
// context (the open fails with context.Canceled) or not (the waiters
// return at once, and Close waits for the loader).
func TestPackageSetCloseStopsWaitersWithItsOwnError(t *testing.T) {
	t.Parallel()
	rt := newRuntime(t, nil)
	d := setStore(t, rt, 1)
	for _, watch := range []bool{true, false} {
		t.Run(fmt.Sprintf("watch=%v", watch), func(t *testing.T) {
			bl := &blockingLoader{inner: d, started: make(chan string, 1), release: make(chan struct{}), watch: watch}
			s, err := NewPackageSet(rt, PackageSetConfig{Loader: bl})
			if err != nil {
				t.Fatal(err)
			}
			const waiters = 5
			errs := make(chan error, waiters)
			for range waiters {
				go func() { errs <- greetVia(s, "k0") }()
			}
			<-bl.started
			closed := make(chan error, 1)
			go func() { closed <- s.Close(context.Background()) }()
			for range waiters {
				err := <-errs
				if !errors.Is(err, ErrPackageSetClosed) || errors.Is(err, context.Canceled) {
					t.Errorf("a waiter stopped by Close: %v; want ErrPackageSetClosed and no context error", err)
				}
			}
			close(bl.release)
			if err := <-closed; err != nil {
				t.Fatal(err)
			}
		})
	}
}

// The budget counts an open under way before its package exists: room is
// made (the idle package evicted) before the open, not after it, so the
// set never holds both at once.
func TestPackageSetOpenIsCountedBeforeItExists(t *testing.T) {
	t.Parallel()
	obs := &setEvents{}
	rt, err := New(context.Background(), Config{CompilationCacheDir: compiledCache, Observer: obs, TempDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Close(context.Background()) })
	d := setStore(t, rt, 2)
	probe := newSet(t, rt, PackageSetConfig{Loader: d})
	if err := greetVia(probe, "k0"); err != nil {
		t.Fatal(err)
	}
	one := probe.Stats().ResidentBytes
	probe.Close(context.Background())
	obs.mu.Lock()
	obs.log = nil
	obs.mu.Unlock()

	s := newSet(t, rt, PackageSetConfig{Loader: d, MaxBytes: one + one/2})
	for _, key := range []string{"k0", "k1"} {
		if err := greetVia(s, key); err != nil {
			t.Fatal(err)
		}
	}
	if got, want := obs.kinds(), "opened k0, evicted k0, opened k1"; got != want {
		t.Fatalf("events %q, want %q: k0 must go before k1 is opened", got, want)
	}
}

// Remove while two callers hold the package: it stays open for both, and
// closes when the last lets go, not under the second.
func TestPackageSetRemoveWithTwoHolders(t *testing.T) {
	t.Parallel()
	rt := newRuntime(t, nil)
	s := newSet(t, rt, PackageSetConfig{Loader: setStore(t, rt, 1)})
	for _, holders := range []int{1, 2} {
		var pkgs []*Package
		var releases []func()
		for range holders {
			p, release, err := s.Acquire(context.Background(), "k0")
			if err != nil {
				t.Fatal(err)
			}
			pkgs, releases = append(pkgs, p), append(releases, release)
			defer release() // a failure must not leave Close waiting (release runs once)
		}
		s.Remove("k0")
		for i := range holders {
			res, err := pkgs[i].Call(context.Background(), CallRequest{Tool: "greet", Arguments: json.RawMessage(`{"name":"Ada"}`)})
			if err != nil || res.Outcome != OutcomeOK {
				t.Fatalf("%d holders: holder %d after Remove and %d releases: %v %+v", holders, i, i, err, res)
			}
			res.Release()
			if st := s.Stats(); st.Resident != 1 {
				t.Fatalf("%d holders: %+v before holder %d's release, want the package open", holders, st, i)
			}
			releases[i]()
		}
		if st := s.Stats(); st.Resident != 0 || st.ResidentBytes != 0 || st.InUse != 0 {
			t.Fatalf("%d holders: %+v after the last release, want the package closed", holders, st)
		}
	}
}
