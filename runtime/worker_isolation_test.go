package runtime

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/subako/subako-runner/hostmod/subakohttp"
	"github.com/subako/subako-runner/internal/devtools/testguest"
	"github.com/subako/subako-runner/internal/tmpvol"
	"github.com/subako/subako-runner/internal/wasmbin/wasmtest"
	"github.com/subako/subako-runner/limits"
)

// instanceCounter is an InstanceObserver that reports instance starts on
// a channel and keeps every call event.
type instanceCounter struct {
	started chan struct{}
	mu      sync.Mutex
	calls   []CallEvent
}

func newInstanceCounter() *instanceCounter { return &instanceCounter{started: make(chan struct{}, 64)} }

func (o *instanceCounter) Upload(context.Context, UploadEvent) {}
func (o *instanceCounter) Call(_ context.Context, e CallEvent) {
	o.mu.Lock()
	o.calls = append(o.calls, e)
	o.mu.Unlock()
}
func (o *instanceCounter) InstanceStarted(context.Context) {
	select {
	case o.started <- struct{}{}:
	default:
	}
}
func (o *instanceCounter) InstanceEnded(context.Context) {}

// drain forgets the starts reported so far (a Load's discovery): the next
// receive on started is an instance started after it. Load and Call
// return only once their worker's events have been delivered.
func (o *instanceCounter) drain() {
	for {
		select {
		case <-o.started:
		default:
			return
		}
	}
}

func (o *instanceCounter) events() []CallEvent {
	o.mu.Lock()
	defer o.mu.Unlock()
	return append([]CallEvent(nil), o.calls...)
}

// The 64-byte module whose name section once took the process down (it
// asked for 103 GB) is rejected in worker mode too, and the worker, the
// parent and the calls running beside it go on.
func TestWorkerNameBombRejectedWhileCallsGoOn(t *testing.T) {
	t.Parallel()
	rt := newWorkerRT(t, nil, Config{})
	pkg := load(t, rt, "../testdata/packages/cgreet")
	gen := rt.workers.pool.Slot(0).Generation()
	ctx := context.Background()
	var wg sync.WaitGroup
	errs := make(chan error, 20)
	for i := range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, err := pkg.Call(ctx, CallRequest{Tool: "greet", Arguments: json.RawMessage(fmt.Sprintf(`{"name":"n%d"}`, i))})
			if err != nil {
				errs <- err
				return
			}
			if res.Outcome != OutcomeOK {
				errs <- fmt.Errorf("outcome %s", res.Outcome)
			}
			res.Release()
		}()
	}
	bomb := wasmtest.NameCountBomb()
	for _, try := range []func() error{
		func() error { _, err := rt.Load(ctx, makePackage(t, writeModule(t, bomb), nil)); return err },
		func() error { _, err := rt.Validate(ctx, writeModule(t, bomb)); return err },
		func() error { _, err := rt.RunCommand(ctx, writeModule(t, bomb), Command{}); return err },
	} {
		var rej *RejectedError
		if err := try(); !errors.As(err, &rej) || rej.Rejections[0].Code != CodeInvalidModule {
			t.Fatalf("the name-section bomb: %v; want invalid_module", err)
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Errorf("a call beside the bomb: %v", err)
	}
	if g := rt.workers.pool.Slot(0).Generation(); g != gen {
		t.Errorf("the worker was replaced (generation %d → %d): the bomb must be rejected, not crash it", gen, g)
	}
}

// A worker killed in the middle of a call ends that call with a
// *WorkerError (one event, code worker_exited), and the package's next
// call runs on the fresh worker, which opens the package again.
func TestWorkerKilledMidCall(t *testing.T) {
	t.Parallel()
	obs := newInstanceCounter()
	rt := newWorkerRT(t, nil, Config{Observer: obs})
	pkg := load(t, rt, makePackage(t, testguest.Go(t, guests+"misbehave"), nil))
	slot := rt.workers.pool.Slot(0)
	gen, pid := slot.Generation(), slot.Pid()
	obs.drain()
	done := make(chan error, 1)
	go func() {
		_, err := pkg.Call(context.Background(), CallRequest{Tool: "timeout_sleep"})
		done <- err
	}()
	<-obs.started // the guest is running in the worker
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	err := <-done
	var werr *WorkerError
	if !errors.As(err, &werr) || !errors.Is(err, ErrWorkerExited) || werr.Pid != pid {
		t.Fatalf("the call on a killed worker: %v; want a *WorkerError of pid %d", err, pid)
	}
	if werr.Reason != "crashed" || !strings.Contains(werr.Status, "killed") {
		t.Errorf("reason %q status %q; want crashed, killed", werr.Reason, werr.Status)
	}
	res := call(t, pkg, CallRequest{Tool: "ok"})
	if res.Outcome != OutcomeOK {
		t.Fatalf("the next call: %s %+v", res.Outcome, res.Crash)
	}
	if g := slot.Generation(); g == gen || slot.Pid() == pid {
		t.Errorf("the slot was not given a fresh worker (generation %d, pid %d)", g, slot.Pid())
	}
	var killed int
	for _, e := range obs.events() {
		if e.Outcome == OutcomeError && e.Code == CodeWorkerExited {
			killed++
		}
	}
	if killed != 1 {
		t.Errorf("%d events with worker_exited; want exactly 1: %+v", killed, obs.events())
	}
}

// subako_http in worker mode runs in the parent: the credential the
// policy injects reaches the server, and the worker's memory never holds
// its bytes, while it does hold what the guest sent (the scan can find
// what is there).
func TestWorkerHTTPCredentialStaysInParent(t *testing.T) {
	t.Parallel()
	secret := "s3cr3t-" + randomHex(t)
	marker := "marker-" + randomHex(t)
	var sawCredential, sawMarker bool
	var mu sync.Mutex
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		sawCredential = sawCredential || r.Header.Get("Authorization") == "Bearer "+secret
		sawMarker = sawMarker || r.URL.Query().Get("m") == marker
		fmt.Fprint(w, "authorized reply")
	}))
	defer srv.Close()
	port := srv.Listener.Addr().(*net.TCPAddr).Port
	host := fmt.Sprintf("api.test:%d", port)
	policy, err := subakohttp.NewPolicy(subakohttp.PolicyConfig{
		Allow:        []string{host},
		Resolve:      map[string][]string{host: {"127.0.0.1"}},
		AllowPrivate: []string{"127.0.0.1/32"},
		Credentials: []subakohttp.Credential{{Pattern: host, Header: "Authorization", Value: func(context.Context) (string, bool) {
			return "Bearer " + secret, true
		}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	rt := newWorkerRT(t, nil, Config{})
	pkg := load(t, rt, makePackage(t, testguest.Go(t, guests+"httpprobe"), nil))
	res, doc := httpCall(t, pkg, policy, nil, "", fmt.Sprintf(`{"url":"http://%s/hello?m=%s"}`, host, marker))
	ok, _ := doc["ok"].(map[string]any)
	if ok == nil || !strings.Contains(fmt.Sprint(ok["body"]), "authorized reply") {
		t.Fatalf("the request through the parent: %v", doc)
	}
	mu.Lock()
	if !sawCredential || !sawMarker {
		t.Fatalf("the server saw credential %v, marker %v; want both", sawCredential, sawMarker)
	}
	mu.Unlock()
	if res.Stats.HTTPRequests != 1 {
		t.Errorf("stats count %d requests; want 1 (the parent's count)", res.Stats.HTTPRequests)
	}
	found := scanProcessMemory(t, rt.workers.pool.Slot(0).Pid(), []byte(secret), []byte(marker))
	if !found[1] {
		t.Fatal("the scan of the worker's memory did not find the marker the guest sent: it cannot be trusted to find the secret either")
	}
	if found[0] {
		t.Fatal("the worker's memory holds the credential")
	}
}

// processResident is the resident set of process pid.
func processResident(t *testing.T, pid int) int64 {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/statm", pid))
	if err != nil {
		t.Skipf("no /proc/<pid>/statm here: %v", err)
	}
	f := strings.Fields(string(b))
	pages, err := strconv.ParseInt(f[1], 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	return pages * int64(os.Getpagesize())
}

// processPeak is the most memory process pid has held (VmHWM).
func processPeak(t *testing.T, pid int) int64 {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Skipf("no /proc/<pid>/status here: %v", err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kib, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			if err != nil {
				t.Fatalf("VmHWM of %d: %q: %v", pid, v, err)
			}
			return kib << 10
		}
	}
	t.Fatalf("no VmHWM for %d", pid)
	return 0
}

func randomHex(t *testing.T) string {
	b := make([]byte, 12)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}

// scanProcessMemory reports, for each needle, whether the readable memory
// of process pid holds it.
func scanProcessMemory(t *testing.T, pid int, needles ...[]byte) []bool {
	t.Helper()
	maps, err := os.Open(fmt.Sprintf("/proc/%d/maps", pid))
	if err != nil {
		t.Skipf("cannot read the worker's memory map here: %v", err)
	}
	defer maps.Close()
	mem, err := os.Open(fmt.Sprintf("/proc/%d/mem", pid))
	if err != nil {
		t.Skipf("cannot read the worker's memory here: %v", err)
	}
	defer mem.Close()
	found := make([]bool, len(needles))
	sc := bufio.NewScanner(maps)
	var buf []byte
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 2 || f[1][0] != 'r' || (len(f) >= 6 && strings.HasPrefix(f[5], "[v")) {
			continue
		}
		from, to, _ := strings.Cut(f[0], "-")
		lo, err1 := strconv.ParseUint(from, 16, 64)
		hi, err2 := strconv.ParseUint(to, 16, 64)
		if err1 != nil || err2 != nil || hi-lo > 1<<30 {
			continue
		}
		buf = append(buf[:0], make([]byte, hi-lo)...)
		n, _ := mem.ReadAt(buf, int64(lo))
		for i, nd := range needles {
			found[i] = found[i] || bytes.Contains(buf[:n], nd)
		}
	}
	return found
}

// A call whose guest outlives its limit is still ended by the worker's
// own layers (metering, the deadline): a crashed Result, and the worker
// stays.
func TestWorkerTimeoutIsACrashAndTheWorkerStays(t *testing.T) {
	heavy(t) // a Go guest: slow to start under -race
	t.Parallel()
	// A long grace: the worker's own deadline must end the guest first,
	// however loaded the machine.
	rt := newWorkerRT(t, nil, Config{Workers: WorkerConfig{Grace: 30 * time.Second}})
	pkg := load(t, rt, makePackage(t, testguest.Go(t, guests+"misbehave"), nil))
	gen := rt.workers.pool.Slot(0).Generation()
	lim := limits.Default()
	lim.CallTimeout = 300_000_000 // 300 ms
	res := call(t, pkg, CallRequest{Tool: "timeout_sleep", Limits: &lim})
	if res.Outcome != OutcomeCrashed || res.Crash.Reason != CrashTimeout {
		t.Fatalf("outcome %s crash %+v; want crash timeout", res.Outcome, res.Crash)
	}
	if strings.Contains(res.Crash.Message, "killed") {
		t.Errorf("the worker was killed for a guest its own deadline stops: %q", res.Crash.Message)
	}
	if g := rt.workers.pool.Slot(0).Generation(); g != gen {
		t.Errorf("generation %d → %d: the worker was replaced", gen, g)
	}
}

// Every entry point works through workers: Validate then Discover, Probe,
// the artifact and Open (on another runtime's workers), and a package set
// that opens, evicts and opens again, releasing the workers' handles.
func TestWorkerEntryPoints(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rt := newWorkerRT(t, nil, Config{})
	c, err := rt.Validate(ctx, "../testdata/packages/cgreet")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(ctx)
	if len(c.Imports()) == 0 || len(c.Source.Module) == 0 {
		t.Fatalf("the checked module: %d imports, %d bytes", len(c.Imports()), len(c.Source.Module))
	}
	pkg, err := rt.Discover(ctx, c, "../testdata/packages/cgreet")
	if err != nil {
		t.Fatal(err)
	}
	defer pkg.Close(ctx)
	if _, ok := pkg.Tool("greet"); !ok {
		t.Fatalf("tools %v", pkg.Tools())
	}
	pr, err := pkg.Probe(ctx, Probe{Messages: []json.RawMessage{json.RawMessage(`{"jsonrpc":"2.0","id":"x","method":"tools/list","params":{}}`)}}, CallRequest{})
	if err != nil || len(pr.Responses) != 1 || pr.Responses[0].ID.String() != `"x"` || !strings.Contains(string(pr.Responses[0].Result), "greet") {
		t.Fatalf("probe: %+v, %v", pr, err)
	}

	a := pkg.Artifact()
	rt2 := newWorkerRT(t, nil, Config{})
	opened, err := rt2.Open(ctx, a, "../testdata/packages/cgreet")
	if err != nil {
		t.Fatal(err)
	}
	defer opened.Close(ctx)
	if opened.Opened == nil {
		t.Fatal("Opened is not set")
	}
	res := call(t, opened, CallRequest{Tool: "greet", Arguments: json.RawMessage(`{"name":"Open"}`)})
	if !strings.Contains(viewText(res), "Open") {
		t.Fatalf("view %q", viewText(res))
	}

	// A set of one package at a time, two keys in turn.
	store := t.TempDir()
	for _, key := range []string{"a", "b"} {
		if err := a.Save(store + "/" + key); err != nil {
			t.Fatal(err)
		}
	}
	set, err := NewPackageSet(rt, PackageSetConfig{MaxPackages: 1, Loader: PackageLoaderFunc(func(ctx context.Context, key string) (*Artifact, string, error) {
		a, err := ReadArtifact(store + "/" + key)
		return a, "../testdata/packages/cgreet", err
	})})
	if err != nil {
		t.Fatal(err)
	}
	defer set.Close(ctx)
	for i := range 6 {
		key := []string{"a", "b"}[i%2]
		res, err := set.Call(ctx, key, CallRequest{Tool: "greet", Arguments: json.RawMessage(`{"name":"set"}`)})
		if err != nil || res.Outcome != OutcomeOK {
			t.Fatalf("set call %d: %v", i, err)
		}
		res.Release()
	}
	if st := set.Stats(); st.Evictions < 4 {
		t.Fatalf("stats %+v: want the two keys evicting each other", st)
	}
	rt.workers.mu.Lock()
	held := rt.workers.held[0]
	rt.workers.mu.Unlock()
	if want := pkg.ResidentBytes() + set.Stats().ResidentBytes; held != want {
		t.Errorf("the slot's account is %d bytes; want %d (the package and the set's one open package)", held, want)
	}
}

// The caller's cancellation and the runtime's close end a call in a
// worker as they end one in process: the caller's context error, and
// ErrClosed.
func TestWorkerCallCanceledAndClosed(t *testing.T) {
	heavy(t) // a Go guest: slow to start under -race
	t.Parallel()
	for _, closeRT := range []bool{false, true} {
		obs := newInstanceCounter()
		rt := newWorkerRT(t, nil, Config{Observer: obs})
		pkg := load(t, rt, makePackage(t, testguest.Go(t, guests+"misbehave"), nil))
		obs.drain()
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() {
			_, err := pkg.Call(ctx, CallRequest{Tool: "timeout_sleep"})
			done <- err
		}()
		<-obs.started
		if closeRT {
			if err := rt.Close(context.Background()); err != nil {
				t.Fatal(err)
			}
		} else {
			cancel()
		}
		err := <-done
		cancel()
		switch {
		case closeRT && !errors.Is(err, ErrClosed):
			t.Errorf("a call the runtime's close ended: %v; want ErrClosed", err)
		case !closeRT && !errors.Is(err, context.Canceled):
			t.Errorf("a call its caller canceled: %v; want context.Canceled", err)
		}
		if closeRT {
			if _, err := pkg.Call(context.Background(), CallRequest{Tool: "ok"}); !errors.Is(err, ErrClosed) {
				t.Errorf("a call after Close: %v; want ErrClosed", err)
			}
		}
	}
}

// A worker over its memory ceiling is killed: the call it ran ends with a
// *WorkerError of reason memory, and the next call has a fresh worker.
func TestWorkerOverItsMemoryCeilingIsKilled(t *testing.T) {
	heavy(t)
	t.Parallel()
	lim := limits.Default()
	lim.Memory = 2 << 30
	// 150 MiB above the most a worker held to load the module: a
	// race-built worker needs far more for the compile than a plain one
	// (with a flat 200 MiB ceiling the load itself ended it, twice).
	memhog := makePackage(t, testguest.Go(t, guests+"memhog"), nil)
	probe := newWorkerRT(t, nil, Config{})
	load(t, probe, memhog)
	peak := processPeak(t, probe.workers.pool.Slot(0).Pid())
	rt := newWorkerRT(t, &lim, Config{Workers: WorkerConfig{MemoryMax: peak + 150<<20}})
	pkg := load(t, rt, memhog)
	// Filling 1 GiB takes the guest far longer than the pool takes to see
	// its resident set pass the ceiling.
	_, err := pkg.Call(context.Background(), CallRequest{Tool: "alloc", Arguments: json.RawMessage(`{"mib":1024}`)})
	var werr *WorkerError
	if !errors.As(err, &werr) || werr.Reason != "memory" {
		t.Fatalf("a call past the worker's memory ceiling: %v; want a *WorkerError of reason memory", err)
	}
	res := call(t, pkg, CallRequest{Tool: "alloc", Arguments: json.RawMessage(`{"mib":16}`)})
	if res.Outcome != OutcomeOK {
		t.Fatalf("the next call: %s %+v", res.Outcome, res.Crash)
	}
}

// An upload whose checks end their worker (here: compiling the Go SDK's
// module takes more memory than a 100 MiB worker may have) is tried once
// more on a fresh worker, then rejected as worker_exited; the runtime goes
// on serving.
func TestWorkerUploadThatKillsItsWorkerIsRejected(t *testing.T) {
	t.Parallel()
	testdata, err := filepath.Abs("../testdata")
	if err != nil {
		t.Fatal(err)
	}
	sdk := makePackage(t, testguest.Go(t, guests+"sdkgreet"), nil)
	// The ceiling is 100 MiB above what an idle worker holds (far more
	// under -race than without).
	idle := processResident(t, newWorkerRT(t, nil, Config{}).workers.pool.Slot(0).Pid())
	// No shared compilation cache: the module must really be compiled.
	rt, err := New(context.Background(), Config{Isolation: IsolationWorkers,
		Workers: WorkerConfig{Count: 1, MemoryMax: idle + 100<<20, ReadOnly: []string{testdata, filepath.Dir(sdk)}}})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close(context.Background())
	_, err = rt.Load(context.Background(), sdk)
	var rej *RejectedError
	if !errors.As(err, &rej) || len(rej.Rejections) != 1 || rej.Rejections[0].Code != CodeWorkerExited {
		t.Fatalf("Load: %v; want the rejection worker_exited", err)
	}
	// Two workers died: the slot's third process is starting or ready
	// (replacements start as soon as a worker dies, off the caller's path).
	for deadline := time.Now().Add(30 * time.Second); rt.workers.pool.Slot(0).Generation() < 3; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("generation %d: the upload should have been tried on two workers, each killed", rt.workers.pool.Slot(0).Generation())
		}
	}
	res := call(t, load(t, rt, "../testdata/packages/cgreet"), CallRequest{Tool: "greet", Arguments: json.RawMessage(`{"name":"after"}`)})
	if res.Outcome != OutcomeOK {
		t.Fatalf("a call after the rejection: %s", res.Outcome)
	}
}

// The trace and progress of work done in a worker reach the runtime's
// hooks before the work's answer: when Load and Call return, every line of
// their instances, their ends included, has been traced, as in process.
func TestWorkerTraceArrivesBeforeTheAnswer(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var kinds []TraceKind
	var steps []ProgressStep
	rt := newWorkerRT(t, nil, Config{
		Trace: func(e TraceEvent) {
			mu.Lock()
			kinds = append(kinds, e.Kind)
			mu.Unlock()
		},
		Progress: func(e ProgressEvent) {
			mu.Lock()
			steps = append(steps, e.Step)
			mu.Unlock()
		},
	})
	snapshot := func() ([]TraceKind, []ProgressStep) {
		mu.Lock()
		defer mu.Unlock()
		return append([]TraceKind(nil), kinds...), append([]ProgressStep(nil), steps...)
	}
	pkg := load(t, rt, "../testdata/packages/cgreet")
	k, s := snapshot()
	if len(k) == 0 || k[len(k)-1] != TraceExit || len(s) == 0 {
		t.Fatalf("after Load: trace %v, progress %v; want discovery's lines ending in its exit, and progress", k, s)
	}
	for i := range 5 {
		call(t, pkg, CallRequest{Tool: "greet", Arguments: json.RawMessage(`{"name":"t"}`)})
		k2, _ := snapshot()
		if len(k2) <= len(k) || k2[len(k2)-1] != TraceExit {
			t.Fatalf("after call %d: trace %v; want the call's lines ending in its exit", i, k2[len(k):])
		}
		k = k2
	}
}

// What a guest in a worker did to /volume/tmp is never taken on the
// worker's word: the parent looks at every directory a worker call used
// before it goes back to the pool, so the calls after it get a fresh one.
func TestWorkerTouchedTmpIsLookedAt(t *testing.T) {
	if !tmpvol.Recycles(t.TempDir()) {
		t.Skip("no directory metadata to compare on this platform: nothing is reused")
	}
	t.Parallel()
	rt := newWorkerRT(t, nil, Config{TempDir: t.TempDir()})
	pkg := load(t, rt, makePackage(t, testguest.Go(t, guests+"volops"), nil))
	ops := []struct{ op, path, to string }{
		{"create", "/volume/tmp/f", ""},
		{"churn", "/volume/tmp/f", ""},
		{"chtimes", "/volume/tmp", ""},
		{"mkdir", "/volume/tmp/d", ""},
		{"symlink", "/volume/tmp/l", "x"},
	}
	if testing.Short() {
		ops = ops[:1] // a Go guest's calls are slow under -race
	}
	for _, op := range ops {
		rt.volumes.Flush()
		unlooked := unlookedVolumes(rt)
		volop(t, pkg, op.op, op.path, op.to)
		if unlookedVolumes(rt) != unlooked {
			t.Errorf("after %s: /volume/tmp went back to the pool without a look", op.op)
		}
		expectFresh(t, rt, pkg, op.op)
	}
	// A call that left /volume/tmp alone: its directory is looked at too,
	// by the pool's goroutine (Flush waits for it), and goes back to the
	// pool for the next call.
	rt.volumes.Flush()
	_, looked, unlooked := rt.volumes.Counts()
	volop(t, pkg, "none", "", "")
	rt.volumes.Flush()
	if _, l, u := rt.volumes.Counts(); l != looked+1 || u != unlooked {
		t.Errorf("an untouched /volume/tmp of a worker's call: looked %d → %d, unlooked %d → %d; want one look", looked, l, unlooked, u)
	}
}

// A package outside the directories a worker may read fails to load with
// an error that says where to allow it.
func TestWorkerOutsideItsDirectoriesSaysSo(t *testing.T) {
	t.Parallel()
	testdata, err := filepath.Abs("../testdata")
	if err != nil {
		t.Fatal(err)
	}
	rt, err := New(context.Background(), Config{Isolation: IsolationWorkers, CompilationCacheDir: compiledCache,
		Workers: WorkerConfig{Count: 1, ReadOnly: []string{testdata}}})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close(context.Background())
	if rt.Sandbox().Landlock == 0 {
		t.Skip("no Landlock here: the worker may read anything")
	}
	outside := makePackage(t, testguest.Go(t, guests+"greet"), nil) // in the test's temporary directory
	_, err = rt.Load(context.Background(), outside)
	if err == nil || !strings.Contains(err.Error(), "WorkerConfig.ReadOnly") {
		t.Fatalf("Load of a package outside the worker's directories: %v; want an error naming WorkerConfig.ReadOnly", err)
	}
	if _, err := rt.Load(context.Background(), "../testdata/packages/cgreet"); err != nil {
		t.Fatalf("a package inside them: %v", err)
	}
}

// A Discover in flight on a worker that dies ends as an upload whose
// worker died does: rejected worker_exited (the Checked went with the
// worker), never a wait.
func TestWorkerDiscoverEndsWhenTheWorkerDies(t *testing.T) {
	heavy(t) // a Go guest: slow to start under -race
	t.Parallel()
	obs := newInstanceCounter()
	rt := newWorkerRT(t, nil, Config{Observer: obs})
	dir := makePackage(t, testguest.Go(t, guests+"misbehave"), map[string]string{"mode": "timeout_sleep"})
	c, err := rt.Validate(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { _, err := rt.Discover(context.Background(), c, dir); done <- err }()
	<-obs.started // discovery runs (and sleeps forever)
	if err := syscall.Kill(rt.workers.pool.Slot(0).Pid(), syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	err = <-done
	var rej *RejectedError
	if !errors.As(err, &rej) || rej.Rejections[0].Code != CodeWorkerExited {
		t.Fatalf("Discover on a killed worker: %v; want the rejection worker_exited", err)
	}
}

// Package.Close stays safe after Runtime.Close, as in process: the
// package went with its worker, and closing it again is no error.
func TestWorkerPackageCloseAfterRuntimeClose(t *testing.T) {
	t.Parallel()
	rt := newWorkerRT(t, nil, Config{})
	pkg, err := rt.Load(context.Background(), "../testdata/packages/cgreet")
	if err != nil {
		t.Fatal(err)
	}
	if err := rt.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := pkg.Close(context.Background()); err != nil {
		t.Fatalf("Package.Close after Runtime.Close: %v", err)
	}
}
