package runtime

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	goruntime "runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/subako/subako-runner/internal/devtools/testguest"
)

// soakSetDuration is how long TestSoakPackageSet runs: SUBAKO_SOAK_DURATION
// (a Go duration; make soak sets it), or the test is skipped: it runs for
// minutes and is not part of make test.
func soakSetDuration(t *testing.T) time.Duration {
	t.Helper()
	s := os.Getenv("SUBAKO_SOAK_DURATION")
	if s == "" {
		t.Skip("set SUBAKO_SOAK_DURATION (e.g. 3m), or run make soak")
	}
	d, err := time.ParseDuration(s)
	if err != nil || d <= 0 {
		t.Fatalf("SUBAKO_SOAK_DURATION=%q: want a positive duration", s)
	}
	return d
}

// soakEnv reads an integer knob of the soak, or def.
func soakEnv(t *testing.T, name string, def int) int {
	t.Helper()
	s := os.Getenv(name)
	if s == "" {
		return def
	}
	n, err := strconv.Atoi(s)
	if err != nil || n <= 0 {
		t.Fatalf("%s=%q: want a positive integer", name, s)
	}
	return n
}

// soakCounter counts a window's calls and events by a label; the Observer
// side of the soak.
type soakCounter struct {
	mu     sync.Mutex
	counts map[string]int
}

func (c *soakCounter) add(label string) {
	c.mu.Lock()
	if c.counts == nil {
		c.counts = map[string]int{}
	}
	c.counts[label]++
	c.mu.Unlock()
}

// take returns the counts since the last take and starts again.
func (c *soakCounter) take() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	m := c.counts
	c.counts = nil
	return m
}

// soakObserver counts every call event by outcome (and code or crash) and
// every set event by kind.
type soakObserver struct {
	calls, set soakCounter
	n          atomic.Int64
}

func (o *soakObserver) Upload(context.Context, UploadEvent) {}
func (o *soakObserver) Call(_ context.Context, e CallEvent) {
	o.n.Add(1)
	label := string(e.Outcome)
	if e.Code != "" {
		label += "/" + e.Code
	}
	if e.Crash != "" {
		label += "/" + e.Crash
	}
	o.calls.add(label)
}
func (o *soakObserver) PackageSet(_ context.Context, e PackageSetEvent) { o.set.add(e.Kind) }

// soakPackage is one key of the soak's store: its tool and whether a
// crash is its module's expected behaviour.
type soakPackage struct {
	key, tool string
	args      json.RawMessage
	misbehave bool
}

// rssKiB is the process's resident set (VmRSS), in KiB.
func rssKiB() int64 {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return -1
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
			n, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			return n
		}
	}
	return -1
}

func countFDs() int {
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return -1
	}
	return len(fds)
}

func formatCounts(m map[string]int) string {
	keys := slices.Sorted(func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	})
	var parts []string
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s=%d", k, m[k]))
	}
	return strings.Join(parts, " ")
}

// TestSoakPackageSet runs a PackageSet as a backend would, for
// SUBAKO_SOAK_DURATION: many packages (copies of the C greet package, the
// Go greet guest and the misbehaving guest, each copy under its own hash),
// 8 goroutines calling keys in a Zipf order, a byte budget that holds a
// fraction of them (evictions), random cancels and tiny deadlines. Every
// window it prints RSS, goroutines, descriptors, the calls' outcomes (as
// the Observer saw them) and the set's events. It fails on a blame error:
// a well-behaved package's call that crashed, a host error, a call
// without exactly one event.
func TestSoakPackageSet(t *testing.T) {
	duration := soakSetDuration(t)
	window := time.Duration(soakEnv(t, "SUBAKO_SOAK_WINDOW_SECONDS", 60)) * time.Second
	nC := soakEnv(t, "SUBAKO_SOAK_C_PACKAGES", 240)
	nGo := soakEnv(t, "SUBAKO_SOAK_GO_PACKAGES", 12)
	nBad := soakEnv(t, "SUBAKO_SOAK_MISBEHAVING_PACKAGES", 12)
	const workers = 8

	obs := &soakObserver{}
	rt, err := New(context.Background(), Config{CompilationCacheDir: compiledCache, Observer: obs, TempDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close(context.Background())

	root := t.TempDir()
	d := DirLoader{Artifacts: filepath.Join(root, "artifacts"), Packages: filepath.Join(root, "packages")}
	var pkgs []soakPackage
	var total int64 // the packages' estimates (with module.wasm, which an open does not keep)
	store := func(key string, module []byte, assets map[string]string, p soakPackage) {
		dir := filepath.Join(d.Packages, key)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		writeStoreFile(t, filepath.Join(dir, ModuleFile), withCustomSection(module, key))
		manifest := fmt.Sprintf(`{"abi":1,"name":%q,"version":"0.1.0","description":"soak"}`, strings.ReplaceAll(key, "-", ""))
		writeStoreFile(t, filepath.Join(dir, ManifestFile), []byte(manifest))
		for name, content := range assets {
			writeStoreFile(t, filepath.Join(dir, name), []byte(content))
		}
		pkg, err := rt.Load(context.Background(), dir)
		if err != nil {
			t.Fatalf("%s: %v", key, err)
		}
		if err := d.Save(key, pkg); err != nil {
			t.Fatal(err)
		}
		total += pkg.ResidentBytes()
		pkg.Close(context.Background())
		p.key = key
		pkgs = append(pkgs, p)
	}
	cModule := readFile(t, filepath.Join(cgreetDir, ModuleFile))
	goModule := readFile(t, testguest.Go(t, guests+"greet"))
	badModule := readFile(t, testguest.Go(t, guests+"misbehave"))
	setupStart := time.Now()
	greetArgs := json.RawMessage(`{"name":"Ada"}`)
	// Interleaved, so that the Zipf order's hot keys are of every kind.
	badModes := []string{"ok", "jsonrpc_error", "not_jsonrpc", "exited_before_response_code", "panic", "exit_code_now", "invalid_result", "unexpected_id"}
	for i := 0; i < max(nC, nGo, nBad); i++ {
		if i < nC {
			store(fmt.Sprintf("c%d", i), cModule, nil, soakPackage{tool: "greet", args: greetArgs})
		}
		if i < nGo {
			store(fmt.Sprintf("go%d", i), goModule, nil, soakPackage{tool: "greet", args: greetArgs})
		}
		if i < nBad {
			store(fmt.Sprintf("bad%d", i), badModule, nil, soakPackage{tool: badModes[i%len(badModes)], args: json.RawMessage(`{}`), misbehave: true})
		}
	}
	// The budget: about a quarter of every package's estimate.
	budget := total / 4
	t.Logf("%d packages (%d C, %d Go, %d misbehaving), estimated %d MiB in all, budget %d MiB; set up in %v",
		len(pkgs), nC, nGo, nBad, total>>20, budget>>20, time.Since(setupStart).Round(time.Second))
	obs.calls.take()
	obs.set.take()

	s := newSet(t, rt, PackageSetConfig{Loader: d, MaxBytes: budget})
	var (
		calls    atomic.Int64
		badMu    sync.Mutex
		bad      []string
		returned soakCounter
	)
	blame := func(msg string) {
		badMu.Lock()
		if len(bad) < 20 {
			bad = append(bad, msg)
		}
		badMu.Unlock()
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rnd := rand.New(rand.NewPCG(uint64(w), uint64(time.Now().UnixNano())))
			zipf := rand.NewZipf(rnd, 1.1, 1, uint64(len(pkgs)-1))
			for {
				select {
				case <-stop:
					return
				default:
				}
				p := pkgs[zipf.Uint64()]
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				switch r := rnd.IntN(100); {
				case r < 10: // a tiny deadline
					cancel()
					ctx, cancel = context.WithTimeout(context.Background(), time.Duration(rnd.Int64N(int64(3*time.Millisecond)+1)))
				case r < 15: // a cancel at a random moment
					after := time.Duration(rnd.Int64N(int64(20 * time.Millisecond)))
					cctx, ccancel := context.WithCancel(context.Background())
					timer := time.AfterFunc(after, ccancel)
					ctx, cancel = cctx, func() { timer.Stop(); ccancel() }
				}
				res, err := s.Call(ctx, p.key, CallRequest{Tool: p.tool, Arguments: p.args})
				cancel()
				calls.Add(1)
				switch {
				case err != nil && (errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)):
					returned.add("canceled")
				case err != nil:
					returned.add("error")
					blame(fmt.Sprintf("%s %s: host error: %v", p.key, p.tool, err))
				default:
					returned.add(string(res.Outcome))
					if res.Outcome == OutcomeCrashed && !p.misbehave {
						blame(fmt.Sprintf("%s %s: crashed %s: %s", p.key, p.tool, res.Crash.Reason, res.Crash.Message))
					}
					if err := res.Release(); err != nil {
						blame(fmt.Sprintf("%s: Release: %v", p.key, err))
					}
				}
			}
		}()
	}
	start := time.Now()
	t.Logf("%-6s %8s %8s %5s %4s  %s | %s | %s", "t", "calls", "RSS MiB", "gor", "fds", "returned", "Observer calls", "set events")
	var rssSum, rssN int64
	for end := start.Add(duration); time.Now().Before(end); {
		time.Sleep(min(window, time.Until(end)))
		rss := rssKiB()
		rssSum += rss
		rssN++
		st := s.Stats()
		t.Logf("%-6s %8d %8.1f %5d %4d  %s | %s | %s | resident %d (%d MiB)",
			time.Since(start).Round(time.Second), calls.Load(), float64(rss)/1024, goruntime.NumGoroutine(), countFDs(),
			formatCounts(returned.take()), formatCounts(obs.calls.take()), formatCounts(obs.set.take()), st.Resident, st.ResidentBytes>>20)
	}
	close(stop)
	wg.Wait()
	closeStart := time.Now()
	if err := s.Close(context.Background()); err != nil {
		t.Errorf("Close: %v", err)
	}
	goruntime.GC()
	t.Logf("after Close (%v): RSS %.1f MiB (mean over the windows %.1f), %d goroutines, %d fds; last: %s | %s | %s",
		time.Since(closeStart).Round(time.Millisecond), float64(rssKiB())/1024, float64(rssSum)/float64(max(rssN, 1))/1024,
		goruntime.NumGoroutine(), countFDs(), formatCounts(returned.take()), formatCounts(obs.calls.take()), formatCounts(obs.set.take()))
	if n, e := calls.Load(), obs.n.Load(); n != e {
		t.Errorf("%d calls, %d Observer events: want one each", n, e)
	}
	st := s.Stats()
	t.Logf("set: %+v", st)
	if st.Evictions == 0 {
		t.Errorf("no eviction: the budget did not bind")
	}
	for _, b := range bad {
		t.Error(b)
	}
}
