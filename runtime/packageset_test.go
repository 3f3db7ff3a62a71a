package runtime

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	goruntime "runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

const cgreetDir = "../testdata/packages/cgreet"

// withCustomSection returns module with a custom section named name
// appended: the same code under another hash, as distinct uploads of
// one program are.
func withCustomSection(module []byte, name string) []byte {
	// A name and data: wazero refuses an empty custom section at the very
	// end of a module (io.EOF reading its zero bytes).
	payload := append(binary.AppendUvarint(nil, uint64(len(name))), name...)
	payload = append(payload, name...)
	out := append([]byte(nil), module...)
	out = append(out, 0) // custom section id
	out = binary.AppendUvarint(out, uint64(len(payload)))
	return append(out, payload...)
}

// setStore uploads n distinct copies of the C greet package under keys
// k0..k<n-1> as a backend does: package directories under pkgs, artifacts
// under arts. It returns the loader over them.
func setStore(t *testing.T, rt *Runtime, n int) DirLoader {
	t.Helper()
	module, err := os.ReadFile(filepath.Join(cgreetDir, ModuleFile))
	if err != nil {
		t.Fatal(err)
	}
	manifest, err := os.ReadFile(filepath.Join(cgreetDir, ManifestFile))
	if err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	d := DirLoader{Artifacts: filepath.Join(root, "artifacts"), Packages: filepath.Join(root, "packages")}
	for i := range n {
		key := fmt.Sprintf("k%d", i)
		dir := filepath.Join(d.Packages, key)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		writeStoreFile(t, filepath.Join(dir, ModuleFile), withCustomSection(module, key))
		writeStoreFile(t, filepath.Join(dir, ManifestFile), manifest)
		p, err := rt.Load(context.Background(), dir)
		if err != nil {
			t.Fatal(err)
		}
		if err := d.Save(key, p); err != nil {
			t.Fatal(err)
		}
		p.Close(context.Background())
	}
	return d
}

func newSet(t *testing.T, rt *Runtime, cfg PackageSetConfig) *PackageSet {
	t.Helper()
	s, err := NewPackageSet(rt, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close(context.Background()) })
	return s
}

// greetVia calls greet on key through s and checks the answer.
func greetVia(s *PackageSet, key string) error {
	res, err := s.Call(context.Background(), key, CallRequest{Tool: "greet", Arguments: json.RawMessage(`{"name":"Ada"}`)})
	if err != nil {
		return err
	}
	defer res.Release()
	if res.Outcome != OutcomeOK || !strings.Contains(viewText(res), "Hello, Ada!") {
		return fmt.Errorf("%s: outcome %s crash %+v view %q", key, res.Outcome, res.Crash, viewText(res))
	}
	return nil
}

// countingLoader counts LoadPackage calls and can fail the first ones.
type countingLoader struct {
	inner PackageLoader
	calls atomic.Int64
	fail  atomic.Int64  // fail this many more calls
	gate  chan struct{} // when set, every load waits for it to close
}

func (l *countingLoader) LoadPackage(ctx context.Context, key string) (*Artifact, string, error) {
	l.calls.Add(1)
	if l.gate != nil {
		<-l.gate
	}
	if l.fail.Add(-1) >= 0 {
		return nil, "", errors.New("object store unavailable")
	}
	return l.inner.LoadPackage(ctx, key)
}

func TestPackageSetConcurrentFirstUseSharesOneOpen(t *testing.T) {
	t.Parallel()
	rt := newRuntime(t, nil)
	l := &countingLoader{inner: setStore(t, rt, 1), gate: make(chan struct{})}
	s := newSet(t, rt, PackageSetConfig{Loader: l})
	const callers = 16
	errs := make(chan error, callers)
	for range callers {
		go func() { errs <- greetVia(s, "k0") }()
	}
	// Every caller is parked on the one open (the loader holds it) before
	// it goes on: they all miss, and one load serves them all.
	for s.Stats().Misses < callers {
		goruntime.Gosched()
	}
	close(l.gate)
	for range callers {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
	st := s.Stats()
	if l.calls.Load() != 1 || st.Opens != 1 || st.Misses != callers || st.Hits != 0 {
		t.Fatalf("loader calls %d, stats %+v; want one load and open for %d misses", l.calls.Load(), st, callers)
	}
	if err := greetVia(s, "k0"); err != nil {
		t.Fatal(err)
	}
	if st := s.Stats(); st.Hits != 1 || st.Opens != 1 || st.Resident != 1 || st.InUse != 0 {
		t.Fatalf("after a second call: %+v", st)
	}
}

func TestPackageSetFailedOpenIsNotRemembered(t *testing.T) {
	t.Parallel()
	rt := newRuntime(t, nil)
	l := &countingLoader{inner: setStore(t, rt, 1), gate: make(chan struct{})}
	l.fail.Store(1)
	s := newSet(t, rt, PackageSetConfig{Loader: l})
	const callers = 4
	errs := make(chan error, callers)
	for range callers {
		go func() { errs <- greetVia(s, "k0") }()
	}
	for s.Stats().Misses < callers {
		goruntime.Gosched()
	}
	close(l.gate)
	for range callers {
		if err := <-errs; err == nil || !strings.Contains(err.Error(), "object store unavailable") || !strings.Contains(err.Error(), "k0") {
			t.Errorf("a caller of the failed open: %v", err)
		}
	}
	if st := s.Stats(); st.OpenFailures != 1 || st.Opens != 0 || st.Resident != 0 || st.InUse != 0 || l.calls.Load() != 1 {
		t.Fatalf("after the failed open: loader calls %d, %+v", l.calls.Load(), st)
	}
	// The store is back: the next call opens.
	if err := greetVia(s, "k0"); err != nil {
		t.Fatal(err)
	}
	if st := s.Stats(); st.Opens != 1 || l.calls.Load() != 2 {
		t.Fatalf("after the retry: loader calls %d, %+v", l.calls.Load(), st)
	}
	// An unknown key and a key that would leave the store fail the same
	// way, and leave nothing behind.
	for _, key := range []string{"k9", "../packages", "..", "a/b", ""} {
		if err := greetVia(s, key); err == nil {
			t.Errorf("key %q opened", key)
		}
	}
	if st := s.Stats(); st.Resident != 1 {
		t.Fatalf("failed keys stayed: %+v", st)
	}
}

// TestPackageSetEvictsUnderLoad runs calls on more packages than the set
// may keep, from several goroutines: every call succeeds, the set evicts,
// and it never holds more idle packages than its bound.
func TestPackageSetEvictsUnderLoad(t *testing.T) {
	t.Parallel()
	rt := newRuntime(t, nil)
	const keys, max = 4, 2
	s := newSet(t, rt, PackageSetConfig{Loader: setStore(t, rt, keys), MaxPackages: max})
	var wg sync.WaitGroup
	var failed atomic.Int64
	for g := range 4 {
		wg.Go(func() {
			for i := range 12 {
				if err := greetVia(s, fmt.Sprintf("k%d", (g+i*3)%keys)); err != nil {
					failed.Add(1)
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	st := s.Stats()
	if failed.Load() != 0 || st.Evictions == 0 || st.Resident > max || st.InUse != 0 || st.Opens != st.Evictions+int64(st.Resident) {
		t.Fatalf("stats %+v after %d failed calls", st, failed.Load())
	}
}

// TestPackageSetNeverClosesAPackageInUse holds one package while others
// push it out of the set: it stays usable until released, and only then
// closes.
func TestPackageSetNeverClosesAPackageInUse(t *testing.T) {
	t.Parallel()
	rt := newRuntime(t, nil)
	d := setStore(t, rt, 3)
	var obs setEvents
	rt.observer = &obs
	s := newSet(t, rt, PackageSetConfig{Loader: d, MaxPackages: 1})
	held, release, err := s.Acquire(context.Background(), "k0")
	if err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{"k1", "k2", "k1"} {
		if err := greetVia(s, key); err != nil {
			t.Fatal(err)
		}
	}
	// k0 is the least recently used but in use: k1 went when k2 came and
	// came back; k0 is still open and answers.
	if st := s.Stats(); st.Resident != 2 || st.InUse != 1 {
		t.Fatalf("with k0 held: %+v", st)
	}
	res, err := held.Call(context.Background(), CallRequest{Tool: "greet", Arguments: json.RawMessage(`{"name":"Ada"}`)})
	if err != nil || res.Outcome != OutcomeOK {
		t.Fatalf("the held package after others came: %v %+v", err, res)
	}
	res.Release()
	release()
	release() // a second release does nothing
	st := s.Stats()
	if st.Resident != 1 || st.InUse != 0 {
		t.Fatalf("after the release: %+v", st)
	}
	// Released and over the bound, k0 was closed: its Package refuses.
	if res, err := held.Call(context.Background(), CallRequest{Tool: "greet", Arguments: json.RawMessage(`{}`)}); err == nil && res.Outcome == OutcomeOK {
		t.Fatal("the evicted package still ran a call")
	}
	// Room is made before an open: k1 goes before k2 opens, k2 before k1
	// comes back.
	if got := obs.kinds(); got != "opened k0, opened k1, evicted k1, opened k2, evicted k2, opened k1, evicted k0" {
		t.Fatalf("events: %s", got)
	}
}

// setEvents records a set's events (and ignores the others).
type setEvents struct {
	mu  sync.Mutex
	log []string
}

func (o *setEvents) Upload(context.Context, UploadEvent) {}
func (o *setEvents) Call(context.Context, CallEvent)     {}
func (o *setEvents) PackageSet(_ context.Context, e PackageSetEvent) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.log = append(o.log, e.Kind+" "+e.Key)
}

func (o *setEvents) kinds() string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return strings.Join(o.log, ", ")
}

func TestPackageSetByteBudget(t *testing.T) {
	t.Parallel()
	rt := newRuntime(t, nil)
	d := setStore(t, rt, 3)
	s := newSet(t, rt, PackageSetConfig{Loader: d})
	if err := greetVia(s, "k0"); err != nil {
		t.Fatal(err)
	}
	one := s.Stats().ResidentBytes
	if one <= int64(len(withCustomSection(nil, "k0"))) {
		t.Fatalf("one package's estimate: %d bytes", one)
	}
	s.Close(context.Background())
	// Room for two (each copy's estimate is within a few bytes of k0's).
	s = newSet(t, rt, PackageSetConfig{Loader: d, MaxBytes: 2*one + one/2})
	for _, key := range []string{"k0", "k1", "k2", "k0"} {
		if err := greetVia(s, key); err != nil {
			t.Fatal(err)
		}
		if st := s.Stats(); st.ResidentBytes > 2*one+one/2 {
			t.Fatalf("after %s: %+v over the budget", key, st)
		}
	}
	// CollectAfter defaults to a quarter of the budget: each eviction
	// (more than that) started a collection, unless one still ran.
	if st := s.Stats(); st.Resident != 2 || st.Evictions != 2 || st.Misses != 4 || st.Collections < 1 {
		t.Fatalf("%+v: want k0 evicted by k2 and k1 by k0's return, and a collection", st)
	}
	// Opens count too: with room for every package, nothing is evicted,
	// and two opens of one package's estimate each start a collection.
	s = newSet(t, rt, PackageSetConfig{Loader: d, CollectAfter: 2 * one})
	for _, key := range []string{"k0", "k1"} {
		if err := greetVia(s, key); err != nil {
			t.Fatal(err)
		}
	}
	if st := s.Stats(); st.Evictions != 0 || st.Collections != 1 {
		t.Fatalf("%+v: want one collection after opening twice CollectAfter/2, and no eviction", st)
	}
	s = newSet(t, rt, PackageSetConfig{Loader: d, MaxBytes: 2*one + one/2, CollectAfter: -1})
	for _, key := range []string{"k0", "k1", "k2", "k0"} {
		if err := greetVia(s, key); err != nil {
			t.Fatal(err)
		}
	}
	if st := s.Stats(); st.Evictions != 2 || st.Collections != 0 {
		t.Fatalf("%+v: want no collection with CollectAfter -1", st)
	}
}

// TestPackageSetCloseDrains closes the set while a package is in use:
// new calls are refused at once, the package in use still works, Close
// returns only after its release, and the accounting is back to zero.
func TestPackageSetCloseDrains(t *testing.T) {
	t.Parallel()
	rt := newRuntime(t, nil)
	s := newSet(t, rt, PackageSetConfig{Loader: setStore(t, rt, 2)})
	for _, key := range []string{"k0", "k1"} {
		if err := greetVia(s, key); err != nil {
			t.Fatal(err)
		}
	}
	held, release, err := s.Acquire(context.Background(), "k0")
	if err != nil {
		t.Fatal(err)
	}
	closed := make(chan error, 1)
	go func() { closed <- s.Close(context.Background()) }()
	for {
		if err := greetVia(s, "k1"); errors.Is(err, ErrPackageSetClosed) {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		goruntime.Gosched()
	}
	select {
	case err := <-closed:
		t.Fatalf("Close returned (%v) while a package was in use", err)
	default:
	}
	res, err := held.Call(context.Background(), CallRequest{Tool: "greet", Arguments: json.RawMessage(`{"name":"Ada"}`)})
	if err != nil || res.Outcome != OutcomeOK {
		t.Fatalf("the held package while Close waits: %v %+v", err, res)
	}
	res.Release()
	release()
	if err := <-closed; err != nil {
		t.Fatal(err)
	}
	if st := s.Stats(); st.Resident != 0 || st.ResidentBytes != 0 || st.InUse != 0 {
		t.Fatalf("after Close: %+v", st)
	}
	if _, _, err := s.Acquire(context.Background(), "k0"); !errors.Is(err, ErrPackageSetClosed) {
		t.Fatalf("Acquire after Close: %v", err)
	}
	if err := s.Close(context.Background()); err != nil {
		t.Fatalf("a second Close: %v", err)
	}
}

// TestPackageSetRefusesATamperedStore tampers with the stored artifact:
// the set refuses it with the very error ReadArtifact or Open gives, and
// runs nothing.
func TestPackageSetRefusesATamperedStore(t *testing.T) {
	t.Parallel()
	rt := newRuntime(t, nil)
	d := setStore(t, rt, 1)
	unmetered := readFile(t, filepath.Join(d.Packages, "k0", ModuleFile))
	saved := copyStore(t, filepath.Join(d.Artifacts, "k0"))
	cases := []struct {
		name   string
		tamper func(store string)
		want   string
	}{
		{"metered.wasm altered", func(store string) {
			b := readFile(t, filepath.Join(store, artifactMetered))
			b[len(b)/2] ^= 0xff
			writeStoreFile(t, filepath.Join(store, artifactMetered), b)
		}, "hash"},
		{"unmetered module planted with its hash", func(store string) {
			writeStoreFile(t, filepath.Join(store, artifactMetered), unmetered)
			sum := sha256.Sum256(unmetered)
			editArtifact(t, store, "meteredSha256", hex.EncodeToString(sum[:]))
		}, "store was changed"},
		{"moduleSha256 altered", func(store string) {
			sum := sha256.Sum256([]byte("another module"))
			editArtifact(t, store, "moduleSha256", hex.EncodeToString(sum[:]))
		}, "changed since its upload"},
	}
	for _, c := range cases {
		store := filepath.Join(d.Artifacts, "k0")
		for _, name := range []string{artifactJSON, artifactMetered} {
			writeStoreFile(t, filepath.Join(store, name), readFile(t, filepath.Join(saved, name)))
		}
		c.tamper(store)
		var direct error
		a, direct := ReadArtifact(store)
		if direct == nil {
			var p *Package
			if p, direct = rt.Open(context.Background(), a, filepath.Join(d.Packages, "k0")); p != nil {
				p.Close(context.Background())
			}
		}
		if direct == nil || !strings.Contains(direct.Error(), c.want) {
			t.Fatalf("%s: directly: %v, want %q", c.name, direct, c.want)
		}
		s := newSet(t, rt, PackageSetConfig{Loader: d})
		err := greetVia(s, "k0")
		if err == nil || !strings.Contains(err.Error(), direct.Error()) {
			t.Errorf("%s: through the set: %v, want %q", c.name, err, direct)
		}
		if st := s.Stats(); st.Resident != 0 || st.OpenFailures != 1 {
			t.Errorf("%s: %+v", c.name, st)
		}
	}
	// The untouched store opens through the set: the refusals were the
	// tampering's. (Through a PackageLoaderFunc: a function is a loader.)
	for _, name := range []string{artifactJSON, artifactMetered} {
		writeStoreFile(t, filepath.Join(d.Artifacts, "k0", name), readFile(t, filepath.Join(saved, name)))
	}
	if err := greetVia(newSet(t, rt, PackageSetConfig{Loader: PackageLoaderFunc(d.LoadPackage)}), "k0"); err != nil {
		t.Fatal(err)
	}
}

func TestPackageSetRemove(t *testing.T) {
	t.Parallel()
	rt := newRuntime(t, nil)
	l := &countingLoader{inner: setStore(t, rt, 1)}
	s := newSet(t, rt, PackageSetConfig{Loader: l})
	for range 2 {
		if err := greetVia(s, "k0"); err != nil {
			t.Fatal(err)
		}
	}
	s.Remove("k0")
	s.Remove("nothing")
	if st := s.Stats(); st.Resident != 0 || st.ResidentBytes != 0 || st.Evictions != 0 {
		t.Fatalf("after Remove: %+v", st)
	}
	if err := greetVia(s, "k0"); err != nil {
		t.Fatal(err)
	}
	if l.calls.Load() != 2 {
		t.Fatalf("loads: %d, want the key loaded again after Remove", l.calls.Load())
	}
}

func TestPackageSetLookupNeverOpens(t *testing.T) {
	t.Parallel()
	rt := newRuntime(t, nil)
	l := &countingLoader{inner: setStore(t, rt, 1)}
	s := newSet(t, rt, PackageSetConfig{Loader: l})
	if _, _, ok := s.Lookup("k0"); ok || l.calls.Load() != 0 {
		t.Fatalf("Lookup of a package not open: %v, %d loads", ok, l.calls.Load())
	}
	if err := greetVia(s, "k0"); err != nil {
		t.Fatal(err)
	}
	p, release, ok := s.Lookup("k0")
	if !ok || p == nil {
		t.Fatal("Lookup of an open package failed")
	}
	if st := s.Stats(); st.InUse != 1 || st.Hits != 1 || st.Misses != 1 {
		t.Fatalf("while looked up: %+v", st)
	}
	release()
	if st := s.Stats(); st.InUse != 0 || l.calls.Load() != 1 {
		t.Fatalf("after release: %+v, %d loads", st, l.calls.Load())
	}
}

// TestPackageSetOpenWaitsForRoom holds the only package a strict
// one-package set may keep: another key's open waits until it is released, then closes it
// and opens, so the set never holds two.
func TestPackageSetOpenWaitsForRoom(t *testing.T) {
	t.Parallel()
	rt := newRuntime(t, nil)
	d := setStore(t, rt, 2)
	var obs setEvents
	rt.observer = &obs
	s := newSet(t, rt, PackageSetConfig{Loader: d, MaxPackages: 1, StrictBudget: true})
	_, release, err := s.Acquire(context.Background(), "k0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- greetVia(s, "k1") }()
	for s.Stats().OpenWaits == 0 {
		goruntime.Gosched()
	}
	if st := s.Stats(); st.Resident != 1 {
		t.Fatalf("while k0 is held: %+v", st)
	}
	release()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if got := obs.kinds(); got != "opened k0, evicted k0, opened k1" {
		t.Fatalf("events: %s", got)
	}
	// A waiting open ends with its caller's context.
	_, release, err = s.Acquire(context.Background(), "k1")
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		for s.Stats().OpenWaits < 2 {
			goruntime.Gosched()
		}
		cancel()
	}()
	if _, _, err := s.Acquire(ctx, "k0"); !errors.Is(err, context.Canceled) {
		t.Fatalf("a waiting open whose caller gave up: %v", err)
	}
}

// TestPackageSetCollectsAfterTheFirstCall: the collection an open sets
// off (its own bytes, and those of the packages closed to make room for
// it) waits until the package's first caller released it, so that it does
// not run beside that call; an open that nobody waits for counts at once.
func TestPackageSetCollectsAfterTheFirstCall(t *testing.T) {
	t.Parallel()
	rt := newRuntime(t, nil)
	d := setStore(t, rt, 2)
	s := newSet(t, rt, PackageSetConfig{Loader: d, CollectAfter: 1})
	ctx := context.Background()
	_, release, err := s.Acquire(ctx, "k0")
	if err != nil {
		t.Fatal(err)
	}
	if n := s.Stats().Collections; n != 0 {
		t.Fatalf("%d collections while the opened package's first call is under way; want none yet", n)
	}
	release()
	if n := s.Stats().Collections; n != 1 {
		t.Fatalf("%d collections after the first call released the package; want 1", n)
	}
	release() // a second release of the same Acquire changes nothing
	_, release, err = s.Acquire(ctx, "k0")
	if err != nil {
		t.Fatal(err)
	}
	release()
	if n := s.Stats().Collections; n != 1 {
		t.Fatalf("%d collections after a call that opened nothing; want still 1", n)
	}
}
