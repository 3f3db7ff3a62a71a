package main

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	goruntime "runtime"
	"runtime/debug"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"

	"github.com/subako/subako-runner/runtime"
)

// manyOptions are the many measure's flags.
type manyOptions struct {
	cPackages   int
	goPackages  int
	calls       int
	callers     int
	budget      int64
	workersRuns int
	costC       int
	costGo      int
	costPopcnt  int
	popcntOps   int
	gc          int
	memLimit    int64
	strict      bool
}

// registerManyFlags defines the many measure's flags.
func registerManyFlags(m *manyOptions) {
	flag.IntVar(&m.cPackages, "many-c", 500, "many: distinct C packages stored")
	flag.IntVar(&m.goPackages, "many-go", 8, "many: distinct Go SDK packages stored")
	flag.IntVar(&m.calls, "many-calls", 20000, "many: calls through the package set, in a Zipf order (s = 1.1)")
	flag.IntVar(&m.callers, "many-callers", 4, "many: goroutines making the calls")
	flag.Int64Var(&m.budget, "many-budget", 256<<20, "many: the package set's MaxBytes")
	flag.IntVar(&m.workersRuns, "workers-runs", 5, "many: SDK uploads with each compilation-workers setting")
	flag.IntVar(&m.costC, "cost-c", 100, "many: C packages opened at once to measure what one costs in RSS")
	flag.IntVar(&m.costGo, "cost-go", 3, "many: Go SDK packages opened at once to measure what one costs in RSS")
	flag.IntVar(&m.costPopcnt, "cost-popcnt", 10, "many, estimate: popcnt-heavy packages (the C package and a function of -popcnt-ops i8x16.popcnt) opened at once to measure what one costs in RSS")
	flag.IntVar(&m.popcntOps, "popcnt-ops", 70_000, "many, estimate: the i8x16.popcnt of the popcnt-heavy package's function (70,000: near the function compile cost bound)")
	flag.BoolVar(&m.strict, "many-strict", true, "many: the package set's StrictBudget (opens wait for room rather than go over the budget)")
	flag.IntVar(&m.gc, "many-gc", runtime.GCPercent, "many: the collector's target (GOGC) for the run")
	flag.Int64Var(&m.memLimit, "many-memlimit", -1, "many: the Go memory limit (GOMEMLIMIT) for the calls through the set; -1: half the budget + 64 MiB, as docs/embedding.md advises; 0: none")
}

// benchMany measures issue 27's rows: the SDK upload by compilation
// workers; what an open package costs in RSS against its estimate; and a
// backend's day in small: many distinct packages stored once, then calls
// in a Zipf order through a PackageSet with a byte budget, for peak RSS,
// failures, the resident call's latency and the first call of an evicted
// package.
func benchMany(ctx context.Context, o options, t *table) error {
	m := o.many
	prevGC := debug.SetGCPercent(m.gc) // by default as the command runs
	defer debug.SetGCPercent(prevGC)
	sdkDir, err := goPackage(o.work, "sdkgreet")
	if err != nil {
		return err
	}
	if err := benchWorkers(ctx, m, t, sdkDir); err != nil {
		return fmt.Errorf("workers: %w", err)
	}
	cache := filepath.Join(o.work, "many-cache")
	store := runtime.DirLoader{Artifacts: filepath.Join(o.work, "many-artifacts"), Packages: filepath.Join(o.work, "many-packages")}
	cKeys, goKeys, pKeys, err := storeMany(ctx, m, cache, store, sdkDir)
	if err != nil {
		return fmt.Errorf("storing: %w", err)
	}
	if err := benchCost(ctx, m, t, cache, store, cKeys, goKeys, pKeys); err != nil {
		return fmt.Errorf("cost: %w", err)
	}
	if err := zipfRun(ctx, m, t, cache, store, cKeys, goKeys); err != nil {
		return err
	}
	return bareMany(ctx, t, store, cKeys)
}

// benchWorkers uploads the SDK package (no compilation cache: the upload
// compiles) with one compilation worker and with NumCPU, alternating.
func benchWorkers(ctx context.Context, m manyOptions, t *table, dir string) error {
	cpus := goruntime.NumCPU()
	if m.workersRuns <= 0 {
		return nil
	}
	var one, all []time.Duration
	var ratios []float64 // each run's all/one: the two share the machine's speed of the moment
	for i := range m.workersRuns {
		for _, w := range []int{1, cpus} {
			rt, err := runtime.New(ctx, runtime.Config{CompilationWorkers: w})
			if err != nil {
				return err
			}
			start := time.Now()
			p, err := rt.Load(ctx, dir)
			d := time.Since(start)
			if err == nil {
				p.Close(ctx)
			}
			rt.Close(ctx)
			if err != nil {
				return err
			}
			logf("   SDK upload, run %d, %d workers: %v", i, w, d.Round(time.Millisecond))
			if w == 1 {
				one = append(one, d)
			} else {
				all = append(all, d)
			}
			debug.FreeOSMemory()
		}
		ratios = append(ratios, float64(all[i])/float64(one[i]))
	}
	ratio := median(ratios)
	t.add(fmt.Sprintf("SDK package upload, compilation workers = CPUs (%d) vs 1 (n=%d, median of the runs' ratios)", cpus, len(all)),
		dur(quantile(all, .5)), dur(quantile(one, .5)), ratio, "≤ 0.6×", ratio <= 0.6)
	return nil
}

// withSection appends a custom section named name to a module: the same
// program under another hash, as distinct uploads are (wazero refuses an
// empty one at the end of a module, so it carries its name as data too).
func withSection(module []byte, name string) []byte {
	payload := append(binary.AppendUvarint(nil, uint64(len(name))), name...)
	payload = append(payload, name...)
	out := append(append([]byte(nil), module...), 0)
	out = binary.AppendUvarint(out, uint64(len(payload)))
	return append(out, payload...)
}

// storeMany uploads the distinct packages once, as a backend does at
// upload time: package directories and artifacts in store, compiled code
// in cache.
func storeMany(ctx context.Context, m manyOptions, cache string, store runtime.DirLoader, sdkDir string) (cKeys, goKeys, popcntKeys []string, err error) {
	rt, err := runtime.New(ctx, runtime.Config{CompilationCacheDir: cache})
	if err != nil {
		return nil, nil, nil, err
	}
	defer rt.Close(ctx)
	upload := func(key, from string) error {
		module, err := os.ReadFile(filepath.Join(from, runtime.ModuleFile))
		if err != nil {
			return err
		}
		dir := filepath.Join(store.Packages, key)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dir, runtime.ModuleFile), withSection(module, key), 0o644); err != nil {
			return err
		}
		manifest := fmt.Sprintf(`{"abi":1,"name":%q,"version":"0.1.0"}`, key)
		if err := os.WriteFile(filepath.Join(dir, runtime.ManifestFile), []byte(manifest), 0o644); err != nil {
			return err
		}
		p, err := rt.Load(ctx, dir)
		if err != nil {
			return err
		}
		defer p.Close(ctx)
		return store.Save(key, p)
	}
	start := time.Now()
	for i := range m.cPackages {
		key := fmt.Sprintf("c%d", i)
		if err := upload(key, filepath.Join("testdata", "packages", "cgreet")); err != nil {
			return nil, nil, nil, fmt.Errorf("%s: %w", key, err)
		}
		cKeys = append(cKeys, key)
	}
	logf("   %d C packages uploaded in %v", m.cPackages, time.Since(start).Round(time.Millisecond))
	start = time.Now()
	for i := range m.goPackages {
		key := fmt.Sprintf("go%d", i)
		if err := upload(key, sdkDir); err != nil {
			return nil, nil, nil, fmt.Errorf("%s: %w", key, err)
		}
		goKeys = append(goKeys, key)
		debug.FreeOSMemory()
	}
	logf("   %d Go SDK packages uploaded in %v", m.goPackages, time.Since(start).Round(time.Millisecond))
	if m.costPopcnt > 0 {
		dir, err := popcntPackage(filepath.Dir(store.Packages), m.popcntOps)
		if err != nil {
			return nil, nil, nil, err
		}
		for i := range m.costPopcnt {
			key := fmt.Sprintf("popcnt%d", i)
			if err := upload(key, dir); err != nil {
				return nil, nil, nil, fmt.Errorf("%s: %w", key, err)
			}
			popcntKeys = append(popcntKeys, key)
		}
	}
	return cKeys, goKeys, popcntKeys, nil
}

// rss returns VmRSS after a collection that gives freed memory back.
func rss() (int64, error) {
	// Twice: wazero unmaps closed modules' code in finalizers, which the
	// first collection queues.
	goruntime.GC()
	time.Sleep(10 * time.Millisecond)
	goruntime.GC()
	debug.FreeOSMemory()
	return procStatus("VmRSS")
}

// benchCost opens many packages of each kind at once in a fresh runtime
// and divides the RSS they add by their number: what one open package
// really costs, against Package.ResidentBytes.
func benchCost(ctx context.Context, m manyOptions, t *table, cache string, store runtime.DirLoader, cKeys, goKeys, popcntKeys []string) error {
	for _, kind := range []struct {
		name string
		keys []string
		n    int
	}{{"C", cKeys, m.costC}, {"Go SDK", goKeys, m.costGo}, {fmt.Sprintf("popcnt-heavy C (%d i8x16.popcnt)", m.popcntOps), popcntKeys, m.costPopcnt}} {
		n := min(kind.n, len(kind.keys))
		if n == 0 {
			continue
		}
		rt, err := runtime.New(ctx, runtime.Config{CompilationCacheDir: cache})
		if err != nil {
			return err
		}
		before, err := rss()
		if err != nil {
			rt.Close(ctx)
			return err
		}
		var estimate, metered int64
		var pkgs []*runtime.Package
		for _, key := range kind.keys[:n] {
			a, path, err := store.LoadPackage(ctx, key)
			if err == nil {
				var p *runtime.Package
				if p, err = rt.Open(ctx, a, path); err == nil {
					pkgs = append(pkgs, p)
					estimate += p.ResidentBytes()
					metered += int64(len(a.Metered))
				}
			}
			if err != nil {
				rt.Close(ctx)
				return fmt.Errorf("%s: %w", key, err)
			}
		}
		after, err := rss()
		for _, p := range pkgs {
			p.Close(ctx)
		}
		rt.Close(ctx)
		if err != nil {
			return err
		}
		real := (after - before) / int64(n)
		est := estimate / int64(n)
		logf("   %s: %d open packages add %s of RSS: %s each (metered module %s; estimate %s)",
			kind.name, n, mib(after-before), mib(real), mib(metered/int64(n)), mib(est))
		t.add(fmt.Sprintf("open %s package: estimated resident bytes vs RSS added (n=%d open at once; metered module %s)", kind.name, n, mib(metered/int64(n))),
			mib(est), mib(real), float64(est)/float64(real), "0.8×–1.5×", float64(est) >= 0.8*float64(real) && float64(est) <= 1.5*float64(real))
		debug.FreeOSMemory()
	}
	return nil
}

// zipfRun calls the stored packages through one PackageSet in a Zipf
// order from several goroutines, and compares the resident C call with a
// single package's, and the first call of an evicted SDK package with
// wazero's own warm-cache compile of its module.
func zipfRun(ctx context.Context, m manyOptions, t *table, cache string, store runtime.DirLoader, cKeys, goKeys []string) error {
	// The memory limit an embedder of a set sets (docs/embedding.md),
	// for the baselines as for the set's calls.
	limit := m.memLimit
	if limit < 0 {
		limit = m.budget/2 + 64<<20
	}
	if limit > 0 {
		defer debug.SetMemoryLimit(debug.SetMemoryLimit(limit))
	}
	evicted := &evictions{keys: map[string]bool{}}
	rt, err := runtime.New(ctx, runtime.Config{CompilationCacheDir: cache, Observer: evicted})
	if err != nil {
		return err
	}
	defer rt.Close(ctx)
	cArgs := json.RawMessage(`{"name":"Ada"}`)
	call := func(p *runtime.Package) error { return greetOnce(ctx, p, cArgs)() }

	// The order: ranks of a Zipf law over every key; the SDK packages at
	// fixed ranks spread from hot to cold (a random placement could leave
	// them all in the tail and measure nothing of them).
	keys := make([]string, 0, len(cKeys)+len(goKeys))
	keys = append(keys, cKeys...)
	r := rand.New(rand.NewSource(27))
	r.Shuffle(len(keys), func(i, j int) { keys[i], keys[j] = keys[j], keys[i] })
	for i, key := range goKeys {
		rank := []int{3, 10, 30, 60, 100, 150, 250, 400}[i%8] + i/8
		rank = min(rank, len(keys))
		keys = append(keys[:rank], append([]string{key}, keys[rank:]...)...)
	}
	z := rand.NewZipf(r, 1.1, 1, uint64(len(keys)-1))
	order := make([]string, m.calls)
	for i := range order {
		order[i] = keys[z.Uint64()]
	}

	set, err := runtime.NewPackageSet(rt, runtime.PackageSetConfig{Loader: store, MaxBytes: m.budget, StrictBudget: m.strict})
	if err != nil {
		return err
	}
	base, err := rss()
	if err != nil {
		return err
	}
	// The peak is the run's: VmHWM is reset here (clear_refs 5, Linux 4.0+).
	resetHWM := os.WriteFile("/proc/self/clear_refs", []byte("5"), 0) == nil
	var (
		next       atomic.Int64
		failed     atomic.Int64
		mu         sync.Mutex
		resident   []time.Duration // C calls on an open package: Lookup + Call
		evictedSDK []time.Duration // first call of an SDK package opened before
		firstErr   error
	)
	isGo := map[string]bool{}
	for _, k := range goKeys {
		isGo[k] = true
	}
	start := time.Now()
	var wg sync.WaitGroup
	for range m.callers {
		wg.Go(func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= len(order) || ctx.Err() != nil {
					return
				}
				key := order[i]
				began := time.Now()
				wasEvicted := evicted.was(key)
				p, release, ok := set.Lookup(key)
				var err error
				if !ok {
					p, release, err = set.Acquire(ctx, key)
				}
				if err == nil {
					err = call(p)
					release()
				}
				d := time.Since(began)
				if err != nil {
					failed.Add(1)
					mu.Lock()
					if firstErr == nil {
						firstErr = fmt.Errorf("%s: %w", key, err)
					}
					mu.Unlock()
					continue
				}
				mu.Lock()
				switch {
				case ok && !isGo[key]:
					resident = append(resident, d)
				case !ok && isGo[key] && wasEvicted:
					evictedSDK = append(evictedSDK, d)
				}
				mu.Unlock()
			}
		})
	}
	// RSS is also sampled while the calls run, for the log.
	done := make(chan struct{})
	var sampled atomic.Int64
	go func() {
		for {
			select {
			case <-done:
				return
			case <-time.After(100 * time.Millisecond):
				if v, err := procStatus("VmRSS"); err == nil && v > sampled.Load() {
					sampled.Store(v)
				}
			}
		}
	}()
	wg.Wait()
	close(done)
	took := time.Since(start)
	peak, err := procStatus("VmHWM")
	if err != nil {
		return err
	}
	st := set.Stats()
	if err := set.Close(ctx); err != nil {
		return err
	}
	after := set.Stats()
	logf("   %d calls in %v from %d goroutines; RSS before %s, peak %s (sampled %s); stats %+v; after Close resident %d (%d bytes)",
		len(order), took.Round(time.Millisecond), m.callers, mib(base), mib(peak), mib(sampled.Load()), st, after.Resident, after.ResidentBytes)
	if firstErr != nil {
		logf("   first failure: %v", firstErr)
	}
	memLimit := "none"
	if limit > 0 {
		memLimit = mib(limit)
	}
	what := fmt.Sprintf("many packages: peak RSS vs budget (%d C + %d Go SDK packages, %d calls, %d goroutines, Zipf s=1.1, StrictBudget %v, GOMEMLIMIT %s)", len(cKeys), len(goKeys), len(order), m.callers, m.strict, memLimit)
	if !resetHWM {
		what += " [VmHWM not resettable: peak includes the uploads]"
	}
	t.add(what, mib(peak), mib(m.budget), float64(peak)/float64(m.budget), "≤ budget + 256 MiB", peak <= m.budget+256<<20)
	t.add("many packages: calls failed", fmt.Sprint(failed.Load()), fmt.Sprintf("of %d", len(order)), 0, "0", failed.Load() == 0)
	logf("   during the Zipf run: resident C call median %s (n=%d), first call of an evicted SDK package median %s (n=%d)",
		dur(quantile(resident, .5)), len(resident), dur(quantile(evictedSDK, .5)), len(evictedSDK))
	if err := quietPhases(ctx, m, t, rt, cache, store, cKeys, goKeys, evicted, call); err != nil {
		return err
	}
	t.add("many packages: set stats (hits / misses / opens / evictions / open waits / mean open)",
		fmt.Sprintf("%d / %d / %d / %d / %d / %s", st.Hits, st.Misses, st.Opens, st.Evictions, st.OpenWaits, dur(st.OpenTime/time.Duration(max(st.Opens, 1)))), "", 0, "", false)
	t.add("many packages: resident after Close", fmt.Sprintf("%d packages, %d bytes", after.Resident, after.ResidentBytes), "", 0, "0", after.Resident == 0 && after.ResidentBytes == 0)
	if failed.Load() > 0 {
		return errors.Join(errors.New("many packages: calls failed"), firstErr)
	}
	return nil
}

func durs(ds []time.Duration) []string {
	out := make([]string, len(ds))
	for i, d := range ds {
		out[i] = d.Round(time.Millisecond).String()
	}
	return out
}

// evictions records which keys a PackageSet evicted (a PackageSetObserver).
type evictions struct {
	mu   sync.Mutex
	keys map[string]bool
}

func (e *evictions) Upload(context.Context, runtime.UploadEvent) {}
func (e *evictions) Call(context.Context, runtime.CallEvent)     {}
func (e *evictions) PackageSet(_ context.Context, ev runtime.PackageSetEvent) {
	if ev.Kind == runtime.PackageSetEvicted {
		e.mu.Lock()
		e.keys[ev.Key] = true
		e.mu.Unlock()
	}
}

func (e *evictions) was(key string) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.keys[key]
}

// quietPhases measures what the Zipf run mixes with everything else: C
// calls on packages resident among hundreds (Zipf over the C keys alone,
// the set warmed so that they are open, only calls that found their
// package open), against one package alone; and, one call at a time,
// the first call of SDK packages the set evicted, against wazero's own
// warm-cache compile. Each is measured in pairs with its baseline, one
// right after the other, and the ratio is the median of the pairs': the
// two sides then share the machine's speed of the moment, which drifts
// by a fifth from one second to the next (as the fuel measure found).
func quietPhases(ctx context.Context, m manyOptions, t *table, rt *runtime.Runtime, cache string, store runtime.DirLoader, cKeys, goKeys []string,
	evicted *evictions, call func(*runtime.Package) error) error {
	set, err := runtime.NewPackageSet(rt, runtime.PackageSetConfig{Loader: store, MaxBytes: m.budget})
	if err != nil {
		return err
	}
	defer set.Close(ctx)
	for _, key := range cKeys {
		if err := callVia(ctx, set, key, call); err != nil {
			return err
		}
	}
	// The single package: the first C key, opened alone beside the set.
	a, path, err := store.LoadPackage(ctx, cKeys[0])
	if err != nil {
		return err
	}
	single, err := rt.Open(ctx, a, path)
	if err != nil {
		return err
	}
	defer single.Close(ctx)
	// The same packages held outside the set's lookup (an Acquire each,
	// released at the end), for the set's own cost.
	held := map[string]*runtime.Package{}
	for _, key := range cKeys {
		p, release, err := set.Acquire(ctx, key)
		if err != nil {
			return err
		}
		defer release()
		held[key] = p
	}
	r := rand.New(rand.NewSource(28))
	z := rand.NewZipf(r, 1.1, 1, uint64(len(cKeys)-1))
	const batches, perBatch = 10, 400
	var resident, alone, direct []time.Duration
	var ratios, setRatios []float64
	for b := range batches {
		order := make([]string, perBatch)
		for i := range order {
			order[i] = cKeys[z.Uint64()]
		}
		residentCall := func(i int) (time.Duration, bool, error) {
			began := time.Now()
			p, release, ok := set.Lookup(order[i])
			if !ok {
				return 0, false, callVia(ctx, set, order[i], call)
			}
			defer release()
			err := call(p)
			return time.Since(began), true, err
		}
		aloneCall := func(int) (time.Duration, bool, error) {
			began := time.Now()
			err := call(single)
			return time.Since(began), true, err
		}
		directCall := func(i int) (time.Duration, bool, error) {
			began := time.Now()
			err := call(held[order[i]])
			return time.Since(began), true, err
		}
		sides := [3]func(int) (time.Duration, bool, error){aloneCall, residentCall, directCall}
		var got [3][]time.Duration
		for k := range sides {
			k := (k + b) % len(sides) // which side goes first rotates
			if got[k], err = timedCalls(m.callers, perBatch, sides[k]); err != nil {
				return err
			}
		}
		alone, resident, direct = append(alone, got[0]...), append(resident, got[1]...), append(direct, got[2]...)
		ratios = append(ratios, float64(quantile(got[1], .5))/float64(quantile(got[0], .5)))
		setRatios = append(setRatios, float64(quantile(got[1], .5))/float64(quantile(got[2], .5)))
	}
	ratio := median(ratios)
	t.add(fmt.Sprintf("many packages: resident C call median (n=%d, %d C packages open) vs single-package C call (%d goroutines each; median of %d interleaved batches' ratios)", len(resident), set.Stats().Resident, m.callers, batches),
		dur(quantile(resident, .5)), dur(quantile(alone, .5)), ratio, "≤ 1.2×", ratio <= 1.2)
	// What the set itself adds: the same calls in the same order on the
	// same packages, held outside it. The rest of the gap to one package
	// is the machine's: 500 modules' code and state do not stay in the
	// CPU's caches as one module's does.
	ratio = median(setRatios)
	t.add(fmt.Sprintf("many packages: resident C call through the set vs the same packages called directly (n=%d; median of %d interleaved batches' ratios)", len(direct), batches),
		dur(quantile(resident, .5)), dur(quantile(direct, .5)), ratio, "≤ 1.2×", ratio <= 1.2)
	if len(goKeys) < 2 {
		return nil
	}
	// Round after round over the SDK packages: the budget holds two, so
	// from the second round every first call opens an evicted package,
	// each right after a wazero warm-cache compile of its metered module.
	var firsts, floors []time.Duration
	ratios = ratios[:0]
	for round := range 3 {
		for _, key := range goKeys {
			was := evicted.was(key)
			if _, release, ok := set.Lookup(key); ok {
				release()
				continue
			}
			measured := round > 0 && was
			var floor time.Duration
			if measured {
				// Each side starts from a collected heap: neither inherits
				// the collector's debt of what ran before it (the
				// collection the set starts once a first call released its
				// package would otherwise run beside the next baseline),
				// nor the pages the other just faulted in.
				goruntime.GC()
				if floor, err = warmCompile(ctx, cache, filepath.Join(store.Artifacts, key, "metered.wasm")); err != nil {
					return fmt.Errorf("wazero warm compile: %w", err)
				}
				goruntime.GC()
			}
			began := time.Now()
			if err := callVia(ctx, set, key, call); err != nil {
				return err
			}
			if measured {
				first := time.Since(began)
				firsts, floors = append(firsts, first), append(floors, floor)
				ratios = append(ratios, float64(first)/float64(floor))
			}
		}
	}
	logf("   wazero warm-cache CompileModule of an SDK package: %s", strings.Join(durs(floors), ", "))
	ratio = median(ratios)
	t.add(fmt.Sprintf("many packages: first call of an evicted SDK package (n=%d, one at a time) vs wazero warm-cache CompileModule (median of the pairs' ratios)", len(firsts)),
		dur(quantile(firsts, .5)), dur(quantile(floors, .5)), ratio, "≤ 1.3×", len(firsts) > 0 && ratio <= 1.3)
	return nil
}

// bareMany is the resident row's comparison with no host around: the
// same C modules, metered, each compiled once in one bare wazero runtime,
// called in the same Zipf order as the resident row's calls, against the
// first one alone, in interleaved batches. It runs apart from zipfRun,
// after it, so that its compiled modules are not in the memory the set's
// rows measure. Its calls are made from one goroutine: from several, the
// memory wazero maps and unmaps for each instance costs the bare call
// three times its one-goroutine time on 2 cores, the same for one module
// as for 500, and hides the cost the row is there to show.
func bareMany(ctx context.Context, t *table, store runtime.DirLoader, cKeys []string) error {
	if len(cKeys) < 2 {
		return nil // nothing to compare
	}
	bare, modules, err := bareFloor(ctx, store, cKeys)
	if err != nil {
		return fmt.Errorf("bare wazero: %w", err)
	}
	defer bare.close(ctx)
	stdin, err := callLine("greet", json.RawMessage(`{"name":"Ada"}`))
	if err != nil {
		return err
	}
	bareCall := func(cm wazero.CompiledModule) (time.Duration, bool, error) {
		began := time.Now()
		out, err := bare.runModule(ctx, cm, stdin)
		d := time.Since(began)
		if err == nil && !bytes.Contains(out, []byte("Hello, Ada!")) {
			err = fmt.Errorf("bare wazero: stdout %q lacks the greeting", out)
		}
		return d, true, err
	}
	r := rand.New(rand.NewSource(28)) // the resident row's order
	z := rand.NewZipf(r, 1.1, 1, uint64(len(modules)-1))
	const batches, perBatch = 10, 400
	var many, alone []time.Duration
	var ratios []float64
	for b := range batches {
		order := make([]wazero.CompiledModule, perBatch)
		for i := range order {
			order[i] = modules[z.Uint64()]
		}
		sides := [2]func(int) (time.Duration, bool, error){
			func(int) (time.Duration, bool, error) { return bareCall(modules[0]) },
			func(i int) (time.Duration, bool, error) { return bareCall(order[i]) },
		}
		var got [2][]time.Duration
		for k := range sides {
			k := (k + b) % len(sides) // which side goes first alternates
			if got[k], err = timedCalls(1, perBatch, sides[k]); err != nil {
				return err
			}
		}
		alone, many = append(alone, got[0]...), append(many, got[1]...)
		ratios = append(ratios, float64(quantile(got[1], .5))/float64(quantile(got[0], .5)))
	}
	// No target: the ratio is the machine's and the engine's, what calling
	// many modules' code costs against one module's.
	ratio := median(ratios)
	t.add(fmt.Sprintf("many packages: bare wazero, the same %d metered C modules in one runtime called in the resident row's order vs the first one alone (one goroutine; n=%d; median of %d interleaved batches' ratios)", len(modules), len(many), batches),
		dur(quantile(many, .5)), dur(quantile(alone, .5)), ratio, "", false)
	return nil
}

// bareFloor compiles the stored modules of keys, metered, in one bare
// wazero runtime (a floor), in the order of keys.
func bareFloor(ctx context.Context, store runtime.DirLoader, keys []string) (*floor, []wazero.CompiledModule, error) {
	if len(keys) == 0 {
		return nil, nil, errors.New("no modules")
	}
	read := func(key string) ([]byte, error) {
		return os.ReadFile(filepath.Join(store.Packages, key, runtime.ModuleFile))
	}
	wasm, err := read(keys[0])
	if err != nil {
		return nil, nil, err
	}
	f, err := newFloor(ctx, wasm, true)
	if err != nil {
		return nil, nil, err
	}
	modules := []wazero.CompiledModule{f.cm}
	for _, key := range keys[1:] {
		wasm, err := read(key)
		var cm wazero.CompiledModule
		if err == nil {
			cm, err = f.compile(ctx, wasm)
		}
		if err != nil {
			f.close(ctx)
			return nil, nil, fmt.Errorf("%s: %w", key, err)
		}
		modules = append(modules, cm)
	}
	return f, modules, nil
}

// timedCalls makes n calls from callers goroutines, call i by one(i),
// and returns the durations of those it timed.
func timedCalls(callers, n int, one func(i int) (d time.Duration, timed bool, err error)) ([]time.Duration, error) {
	var next atomic.Int64
	var mu sync.Mutex
	var ds []time.Duration
	var firstErr error
	var wg sync.WaitGroup
	for range callers {
		wg.Go(func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= n {
					return
				}
				d, timed, err := one(i)
				mu.Lock()
				if err != nil && firstErr == nil {
					firstErr = err
				}
				if timed && err == nil {
					ds = append(ds, d)
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return ds, firstErr
}

// warmCompile is one wazero CompileModule of the module at path from the
// warm cache (see warmCompileBytes).
func warmCompile(ctx context.Context, cache, path string) (time.Duration, error) {
	wasm, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	return warmCompileBytes(ctx, cache, wasm)
}

// warmCompileBytes is what wazero itself needs to hand back a compiled
// module from its warm file cache (decode, validate, hash the bytes, read
// and map the machine code), in a fresh wazero runtime configured as
// runtime.New does: the reopen measures' floor.
func warmCompileBytes(ctx context.Context, cache string, wasm []byte) (time.Duration, error) {
	cc, err := wazero.NewCompilationCacheWithDir(cache)
	if err != nil {
		return 0, err
	}
	defer cc.Close(ctx)
	wz := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfig().
		WithCoreFeatures(api.CoreFeaturesV2).WithMemoryLimitPages(65536).WithCompilationCache(cc))
	defer wz.Close(ctx)
	start := time.Now()
	c, err := wz.CompileModule(ctx, wasm)
	d := time.Since(start)
	if err != nil {
		return 0, err
	}
	c.Close(ctx)
	return d, nil
}

// callVia makes one call on key through set.
func callVia(ctx context.Context, set *runtime.PackageSet, key string, call func(*runtime.Package) error) error {
	p, release, err := set.Acquire(ctx, key)
	if err != nil {
		return err
	}
	defer release()
	if err := call(p); err != nil {
		return fmt.Errorf("%s: %w", key, err)
	}
	return nil
}
