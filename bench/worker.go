package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	goruntime "runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/subako/subako-runner/runtime"
)

// benchWorker measures what IsolationWorkers costs against the in-process
// runtime, in the same run: a sequential call of the C and Go greet
// packages (interleaved blocks, medians), calls per second with 2×NumCPU
// callers on NumCPU workers, a worker's resident memory beside the
// package it holds, and how long the call after a SIGKILLed worker takes.
//
// The runtime does not expose its workers' process ids, so the bench finds
// them as its own child processes (/proc/*/stat): every worker runtime's
// workers are this program re-executed (main calls runtime.ServeWorker
// first), and the rows that need one pid run with a runtime of one worker
// while no other worker runtime is open.
func benchWorker(ctx context.Context, o options, t *table) error {
	if goruntime.GOOS != "linux" {
		logf("   worker: needs /proc (linux); skipped")
		return nil
	}
	testdata, err := filepath.Abs("testdata")
	if err != nil {
		return err
	}
	cgreet := filepath.Join(testdata, "packages", "cgreet")
	// The workers' Landlock lets them read the package directories only.
	readOnly := []string{testdata, o.work}
	args := json.RawMessage(`{"name":"Ada"}`)

	var log *zap.Logger
	if o.workerLog {
		log = zap.New(zapcore.NewCore(zapcore.NewConsoleEncoder(zap.NewDevelopmentEncoderConfig()), zapcore.Lock(os.Stderr), zap.DebugLevel))
	}
	inproc, err := runtime.New(ctx, runtime.Config{})
	if err != nil {
		return err
	}
	defer inproc.Close(ctx)
	wrt, err := runtime.New(ctx, runtime.Config{Isolation: runtime.IsolationWorkers, Logger: log,
		Workers: runtime.WorkerConfig{Count: goruntime.NumCPU(), ReadOnly: readOnly}})
	if err != nil {
		return fmt.Errorf("worker runtime: %w", err)
	}
	closeWrt := sync.OnceFunc(func() { wrt.Close(ctx) })
	defer closeWrt()
	logf("   worker sandbox: %+v", wrt.Sandbox())

	steps := []struct {
		row string
		fn  func() error
	}{
		{"latency", func() error { return workerLatencies(ctx, o, t, inproc, wrt, readOnly, cgreet, args) }},
		{"throughput", func() error { return workerThroughput(ctx, o, t, inproc, wrt, cgreet, args) }},
		// The rows below find their worker as this program's only child.
		{"rss", func() error { closeWrt(); return workerRSS(ctx, o, t, log, readOnly, cgreet, args) }},
		{"kill", func() error { closeWrt(); return workerKill(ctx, o, t, readOnly, cgreet, args) }},
	}
	for _, s := range steps {
		if !o.workerRows[s.row] {
			continue
		}
		if err := s.fn(); err != nil {
			return fmt.Errorf("%s: %w", s.row, err)
		}
	}
	return nil
}

// workerLatencies are the latency rows of the C and Go greet packages
// (as -pkgs asks), then the floor under them.
func workerLatencies(ctx context.Context, o options, t *table, inproc, wrt *runtime.Runtime, readOnly []string, cgreet string, args json.RawMessage) error {
	type pkg struct {
		name, dir string
		target    float64
	}
	var pkgs []pkg
	if o.pkgs["C"] {
		pkgs = append(pkgs, pkg{"C", cgreet, 1.5})
	}
	if o.pkgs["Go"] {
		goDir, err := goPackage(o.work, "greet")
		if err != nil {
			return err
		}
		pkgs = append(pkgs, pkg{"Go", goDir, 1.1})
	}
	for _, p := range pkgs {
		if err := workerLatency(ctx, o, t, inproc, wrt, readOnly, p.name, p.dir, args, p.target); err != nil {
			return fmt.Errorf("%s package: %w", p.name, err)
		}
	}
	rt, err := pingPong(ctx, o.workerCalls)
	if err != nil {
		return fmt.Errorf("round-trip floor: %w", err)
	}
	t.add("  floor: a 64-byte round trip to a child process (median / p90)", dur(quantile(rt, .5))+" / "+dur(quantile(rt, .9)), "-", 0, "", false)
	return nil
}

// interleaved times each side's calls in blocks that take turns, the
// order of the sides alternating from one round to the next, each block
// after an untimed warm-up of its own (the garbage, the pools and the
// page faults the other side left), until each side has n timed calls or
// the time is up. Each timed call comes pause after the one before.
func interleaved(ctx context.Context, n int, limit, pause time.Duration, sides ...func() error) ([][]time.Duration, error) {
	const block, warm = 25, 5
	times := make([][]time.Duration, len(sides))
	deadline := time.Now().Add(limit)
	for round := 0; len(times[0]) < n && time.Now().Before(deadline); round++ {
		for k := range sides {
			j := k
			if round%2 == 1 {
				j = len(sides) - 1 - k
			}
			for i := -warm; i < min(block, n-len(times[j])); i++ {
				if pause > 0 {
					time.Sleep(pause)
				}
				start := time.Now()
				if err := sides[j](); err != nil {
					return nil, err
				}
				if i >= 0 {
					times[j] = append(times[j], time.Since(start))
				}
				if err := ctx.Err(); err != nil {
					return nil, err
				}
			}
		}
	}
	return times, nil
}

func workerLatency(ctx context.Context, o options, t *table, inproc, wrt *runtime.Runtime, readOnly []string, name, dir string, args json.RawMessage, target float64) error {
	ip, err := inproc.Load(ctx, dir)
	if err != nil {
		return err
	}
	defer ip.Close(ctx)
	wp, err := wrt.Load(ctx, dir)
	if err != nil {
		return fmt.Errorf("worker load: %w", err)
	}
	defer wp.Close(ctx)
	times, err := interleaved(ctx, o.workerCalls, 90*time.Second, 0, greetOnce(ctx, wp, args), greetOnce(ctx, ip, args))
	if err != nil {
		return err
	}
	w, in := quantile(times[0], .5), quantile(times[1], .5)
	ratio := float64(w) / float64(in)
	t.add(fmt.Sprintf("worker %s call vs in-process %s call", name, name), dur(w)+fmt.Sprintf(" (n=%d)", len(times[0])), dur(in),
		ratio, fmt.Sprintf("≤ %.2g×", target), ratio <= target)
	w90, in90 := quantile(times[0], .9), quantile(times[1], .9)
	t.add(fmt.Sprintf("  worker %s call p90 vs in-process p90", name), dur(w90), dur(in90), float64(w90)/float64(in90), "", false)
	// Calls that do not follow each other: both processes' threads have
	// gone to sleep, and their CPUs may have halted, in between.
	idle, err := interleaved(ctx, max(1, o.workerCalls/2), 60*time.Second, time.Millisecond, greetOnce(ctx, wp, args), greetOnce(ctx, ip, args))
	if err != nil {
		return err
	}
	wi, ini := quantile(idle[0], .5), quantile(idle[1], .5)
	t.add(fmt.Sprintf("  worker %s call 1 ms after the last vs in-process (medians)", name), dur(wi), dur(ini), float64(wi)/float64(ini), "", false)
	return workerCallPhases(ctx, o, t, readOnly, name, dir, args)
}

// workerCallPhases splits a call by the timestamps of its CallEvent
// (the worker's clock is the parent's: one machine): from Call to the
// instance's start (the parent's preparation, the request's encoding and
// trip, the worker's decoding and session), the guest (instantiation and
// run), and from the guest's end to Call's return (the instance's close,
// the result's trip back, the parent's decoding and view); the same for the
// in-process runtime beside it. It also gives the CPU time each process
// spends per call (rusage, /proc schedstat), which counts the Go
// scheduler's spinning while it waits for the other side.
func workerCallPhases(ctx context.Context, o options, t *table, readOnly []string, name, dir string, args json.RawMessage) error {
	var phases [2][3][]time.Duration
	var cpu [2][2]time.Duration
	var wall [2]time.Duration
	for side, iso := range []runtime.Isolation{runtime.IsolationWorkers, runtime.IsolationInProcess} {
		obs := &lastCall{}
		cfg := runtime.Config{Isolation: iso, Observer: obs}
		if iso == runtime.IsolationWorkers {
			cfg.Workers = runtime.WorkerConfig{Count: 1, ReadOnly: readOnly}
		}
		pkg, closePkg, err := loadIn(ctx, cfg, dir)
		if err != nil {
			return err
		}
		once := greetOnce(ctx, pkg, args)
		for range 20 {
			if err := once(); err != nil {
				closePkg()
				return err
			}
		}
		n := o.workerCalls
		parent0, kids0, start := cpuTime(), childrenCPU(), time.Now()
		for range n {
			if err := once(); err != nil {
				closePkg()
				return err
			}
			end := time.Now()
			e := obs.get()
			if e.InstanceStart.IsZero() {
				continue
			}
			guestEnd := e.InstanceStart.Add(e.Instantiate + e.Run)
			phases[side][0] = append(phases[side][0], e.InstanceStart.Sub(e.Start))
			phases[side][1] = append(phases[side][1], e.Instantiate+e.Run)
			phases[side][2] = append(phases[side][2], end.Sub(guestEnd))
		}
		wall[side] = time.Since(start) / time.Duration(n)
		cpu[side] = [2]time.Duration{(cpuTime() - parent0) / time.Duration(n), (childrenCPU() - kids0) / time.Duration(n)}
		closePkg()
	}
	med := func(side, i int) string { return dur(quantile(phases[side][i], .5)) }
	t.add(fmt.Sprintf("  worker %s call phases: Call → instance start / guest / guest end → return (medians)", name),
		fmt.Sprintf("%s / %s / %s", med(0, 0), med(0, 1), med(0, 2)), fmt.Sprintf("%s / %s / %s in-process", med(1, 0), med(1, 1), med(1, 2)), 0, "", false)
	t.add(fmt.Sprintf("  worker %s call CPU per call: parent / worker (wall)", name),
		fmt.Sprintf("%s / %s (%s)", dur(cpu[0][0]), dur(cpu[0][1]), dur(wall[0])), fmt.Sprintf("%s (%s) in-process", dur(cpu[1][0]), dur(wall[1])), 0, "", false)
	return nil
}

// lastCall is an Observer that keeps the last CallEvent.
type lastCall struct {
	mu sync.Mutex
	e  runtime.CallEvent
}

func (l *lastCall) Upload(context.Context, runtime.UploadEvent) {}

func (l *lastCall) Call(_ context.Context, e runtime.CallEvent) {
	l.mu.Lock()
	l.e = e
	l.mu.Unlock()
}

func (l *lastCall) get() runtime.CallEvent {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.e
}

// workerThroughput is calls/s of the C package with 2×NumCPU callers: the
// worker runtime (NumCPU workers; the one package lives in one of them)
// against the in-process runtime, in interleaved rounds. Beside it, the
// same with the package loaded once per worker and the callers spread
// over the copies, and the CPU each side spends per call.
func workerThroughput(ctx context.Context, o options, t *table, inproc, wrt *runtime.Runtime, dir string, args json.RawMessage) error {
	ip, err := inproc.Load(ctx, dir)
	if err != nil {
		return err
	}
	defer ip.Close(ctx)
	wp, err := wrt.Load(ctx, dir)
	if err != nil {
		return err
	}
	defer wp.Close(ctx)
	// One copy per worker: a new package goes to the worker holding the
	// fewest bytes, so NumCPU loads land one on each.
	spread := []*runtime.Package{wp}
	for range goruntime.NumCPU() - 1 {
		p, err := wrt.Load(ctx, dir)
		if err != nil {
			return err
		}
		defer p.Close(ctx)
		spread = append(spread, p)
	}
	// A call that hangs fails its round after 10 s instead of the call's
	// time limit.
	bounded := func(p *runtime.Package) func() error {
		return func() error {
			cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			defer cancel()
			return greetOnce(cctx, p, args)()
		}
	}
	var next sync.Mutex
	var turn int
	spreadOnce := func() error {
		next.Lock()
		p := spread[turn%len(spread)]
		turn++
		next.Unlock()
		return bounded(p)()
	}
	callers := 2 * goruntime.NumCPU()
	sides := []struct {
		name string
		once func() error
	}{
		{"worker", bounded(wp)},
		{"in-process", bounded(ip)},
		{"worker, a copy per worker", spreadOnce},
	}
	label := fmt.Sprintf("worker C calls/s on %d cores vs in-process", goruntime.NumCPU())
	failed := func(side string, err error) error {
		// The row fails; the measure goes on to its other rows.
		logf("   worker throughput, %s: %v", side, err)
		t.add(label, "failed: "+side+": "+err.Error(), "-", 0, "≥ 0.9×", false)
		return nil
	}
	total := make([]measured, len(sides))
	kidCPU := make([]time.Duration, len(sides))
	for r := 0; r < o.workerRounds; r++ {
		for k := range sides {
			j := k
			if r%2 == 1 {
				j = len(sides) - 1 - k
			}
			goruntime.GC()
			if _, err := callRate(ctx, sides[j].once, callers, o.scaleRound/2); err != nil {
				return failed(sides[j].name, err)
			}
			k0 := childrenCPU()
			m, err := callRate(ctx, sides[j].once, callers, o.scaleRound)
			if err != nil {
				return failed(sides[j].name, err)
			}
			kidCPU[j] += childrenCPU() - k0
			logf("   worker throughput, %s, round %d: %s", sides[j].name, r+1, m)
			total[j] = total[j].then(m)
		}
	}
	w, in, sp := total[0], total[1], total[2]
	ratio := w.rate() / in.rate()
	t.add(label, w.String(), in.String(), ratio, "≥ 0.9×", ratio >= 0.9)
	t.add(fmt.Sprintf("  worker C calls/s, a copy in each of %d workers, vs in-process", len(spread)), sp.String(), in.String(), sp.rate()/in.rate(), "", false)
	for j, s := range sides {
		m := total[j]
		if m.Calls == 0 {
			continue
		}
		t.add(fmt.Sprintf("  %s, %d callers: parent CPU / worker CPU per call", s.name, callers),
			fmt.Sprintf("%s / %s", dur(m.CPU/time.Duration(m.Calls)), dur(kidCPU[j]/time.Duration(m.Calls))), "-", 0, "", false)
	}
	return nil
}

// oneWorker is a runtime of one worker (while it is the only one open, the
// only child process of this program); cacheDir "" is the runtime's own.
func oneWorker(ctx context.Context, readOnly []string, log *zap.Logger, cacheDir string) (*runtime.Runtime, error) {
	rt, err := runtime.New(ctx, runtime.Config{Isolation: runtime.IsolationWorkers, Logger: log, CompilationCacheDir: cacheDir,
		Workers: runtime.WorkerConfig{Count: 1, ReadOnly: readOnly}})
	if err != nil {
		return nil, fmt.Errorf("worker runtime: %w", err)
	}
	return rt, nil
}

// theWorker is the pid of this program's only live child process.
func theWorker() (int, error) {
	kids := children()
	if len(kids) != 1 {
		return 0, fmt.Errorf("want one worker process, found children %v", kids)
	}
	return kids[0], nil
}

// workerRSS is a worker's resident set after it loaded the C package and
// served 100 calls, less what the runtime estimates the package's compiled
// code and metadata hold (Package.ResidentBytes): the worker process's own
// cost.
func workerRSS(ctx context.Context, o options, t *table, log *zap.Logger, readOnly []string, dir string, args json.RawMessage) error {
	rt, err := oneWorker(ctx, readOnly, log, "")
	if err != nil {
		return err
	}
	defer rt.Close(ctx)
	pid, err := theWorker()
	if err != nil {
		return err
	}
	idle, err := vmRSS(pid)
	if err != nil {
		return err
	}
	idleParts := rssParts(pid)
	pkg, err := rt.Load(ctx, dir)
	if err != nil {
		return err
	}
	defer pkg.Close(ctx)
	once := greetOnce(ctx, pkg, args)
	for range 100 {
		if err := once(); err != nil {
			return err
		}
	}
	if p, err := theWorker(); err != nil || p != pid {
		return fmt.Errorf("the worker changed during the calls (pid %d, then %d, %v)", pid, p, err)
	}
	rss, err := vmRSS(pid)
	if err != nil {
		return err
	}
	est := pkg.ResidentBytes()
	over := rss - est
	t.add("worker RSS overhead per worker", mib(over), fmt.Sprintf("VmRSS %s − package estimate %s", mib(rss), mib(est)), 0,
		"≤ 30 MiB", over <= 30<<20)
	t.add("  worker RSS after 100 calls: its parts", rssParts(pid), "-", 0, "", false)
	logMappings(pid)
	t.add("  worker RSS idle (before any package)", mib(idle), idleParts, 0, "", false)
	// The same for a replacement worker, which opens the package from the
	// compilation cache instead of compiling it.
	if err := sleepCtx(ctx, 1200*time.Millisecond); err != nil {
		return err
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		return err
	}
	for i := 0; i < 100; {
		if err := once(); err != nil {
			if errors.Is(err, runtime.ErrWorkerExited) && i == 0 {
				continue
			}
			return err
		}
		i++
	}
	if p, err := theWorker(); err == nil {
		if rss, err := vmRSS(p); err == nil {
			t.add("  worker RSS overhead, a replacement (the package opened from the cache)", mib(rss-est), fmt.Sprintf("VmRSS %s: %s", mib(rss), rssParts(p)), 0, "", false)
		}
	}
	if self, err := vmRSS(os.Getpid()); err == nil {
		t.add("  this bench process's RSS, for scale", mib(self), rssParts(os.Getpid()), 0, "", false)
	}
	return nil
}

// workerKill SIGKILLs the worker holding the C package and times the
// next successful call from the kill: the replacement's start, the
// package's reopening from the compilation cache, the call. A call that
// raced the kill fails with a *runtime.WorkerError and is retried.
func workerKill(ctx context.Context, o options, t *table, readOnly []string, dir string, args json.RawMessage) error {
	// The pool logs the end of every worker process it did not end itself:
	// its time is when the parent reaped the killed worker.
	var mu sync.Mutex
	var reaped time.Time
	log := zap.New(zapcore.NewCore(zapcore.NewJSONEncoder(zap.NewProductionEncoderConfig()), zapcore.AddSync(discard{}), zap.WarnLevel),
		zap.Hooks(func(e zapcore.Entry) error {
			if e.Message == "worker process ended" {
				mu.Lock()
				reaped = e.Time
				mu.Unlock()
			}
			return nil
		}))
	cache := filepath.Join(o.work, "worker-kill-cache")
	rt, err := oneWorker(ctx, readOnly, log, cache)
	if err != nil {
		return err
	}
	defer rt.Close(ctx)
	pkg, err := rt.Load(ctx, dir)
	if err != nil {
		return err
	}
	defer pkg.Close(ctx)
	once := greetOnce(ctx, pkg, args)
	for range 20 {
		if err := once(); err != nil {
			return err
		}
	}
	// The reopening alone, measured apart: Open of the package's artifact
	// in the worker, from the compilation cache, as the replacement does.
	var opens []time.Duration
	for range 10 {
		start := time.Now()
		p, err := rt.Open(ctx, pkg.Artifact(), dir)
		if err != nil {
			return fmt.Errorf("open: %w", err)
		}
		opens = append(opens, time.Since(start))
		p.Close(ctx)
	}
	// A fresh worker's path to its first call, as a replacement's: New of
	// a runtime of one worker returns once the worker said hello (its
	// exec, Go's start and package inits, the sandbox, the worker's own
	// runtime); then the package's Open from the same warm compilation
	// cache, and one call. Beside them the exec of this program doing
	// nothing (-child-pingpong reading /dev/null).
	var starts, freshOpens, freshCalls, execs []time.Duration
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	for range 5 {
		start := time.Now()
		r, err := oneWorker(ctx, readOnly, nil, cache)
		if err != nil {
			return err
		}
		starts = append(starts, time.Since(start))
		start = time.Now()
		p, err := r.Open(ctx, pkg.Artifact(), dir)
		if err != nil {
			r.Close(ctx)
			return fmt.Errorf("fresh worker: open: %w", err)
		}
		freshOpens = append(freshOpens, time.Since(start))
		start = time.Now()
		err = greetOnce(ctx, p, args)()
		freshCalls = append(freshCalls, time.Since(start))
		p.Close(ctx)
		r.Close(ctx)
		if err != nil {
			return fmt.Errorf("fresh worker: call: %w", err)
		}
		start = time.Now()
		null, err := os.Open(os.DevNull)
		if err != nil {
			return err
		}
		cmd := exec.CommandContext(ctx, exe, "-child-pingpong")
		cmd.ExtraFiles = []*os.File{null} // EOF at once
		err = cmd.Run()
		null.Close()
		if err != nil {
			return fmt.Errorf("exec: %w", err)
		}
		execs = append(execs, time.Since(start))
	}
	var total, toReap, toSpawn, first []time.Duration
	retries := 0
	for i := range o.workerKills {
		// A worker that dies within a second of its start counts toward
		// the pool's crash-loop backoff: let this one grow older first.
		if err := sleepCtx(ctx, 1200*time.Millisecond); err != nil {
			return err
		}
		pid, err := theWorker()
		if err != nil {
			return err
		}
		start := time.Now()
		if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
			return err
		}
		firstErr := time.Duration(0)
		for {
			if time.Since(start) > 30*time.Second {
				return fmt.Errorf("no successful call 30 s after the kill")
			}
			err := once()
			if err == nil {
				break
			}
			if !errors.Is(err, runtime.ErrWorkerExited) {
				return fmt.Errorf("call after the kill: %w", err)
			}
			var werr *runtime.WorkerError
			if !errors.As(err, &werr) {
				return fmt.Errorf("call after the kill: %T is not a *runtime.WorkerError: %w", err, err)
			}
			retries++
			if firstErr == 0 {
				firstErr = time.Since(start)
			}
		}
		d := time.Since(start)
		total = append(total, d)
		mu.Lock()
		r := reaped
		mu.Unlock()
		if r.After(start) {
			toReap = append(toReap, r.Sub(start))
		}
		if kid, err := theWorker(); err == nil {
			if at, err := startTime(kid); err == nil && at.After(start.Add(-10*time.Millisecond)) {
				toSpawn = append(toSpawn, at.Sub(start))
			}
		}
		if firstErr > 0 {
			first = append(first, firstErr)
		}
		logf("   kill %d: next successful call after %v", i+1, d.Round(10*time.Microsecond))
	}
	med, mx := quantile(total, .5), quantile(total, 1)
	t.add("killed worker: next call's latency", fmt.Sprintf("median %s, max %s (n=%d)", dur(med), dur(mx), len(total)), "-", 0,
		"≤ 100 ms", med <= 100*time.Millisecond)
	t.add("  killed worker: kill → reaped (median)", dur(quantile(toReap, .5)), "-", 0, "", false)
	t.add("  killed worker: kill → replacement process started (median, 10 ms clock)", dur(quantile(toSpawn, .5)), "-", 0, "", false)
	t.add("  killed worker: reopening the package in a worker (Open, median)", dur(quantile(opens, .5)), "-", 0, "", false)
	t.add("  fresh worker: New (start to hello) / Open from the cache / first call (medians of 5)",
		fmt.Sprintf("%s / %s / %s", dur(quantile(starts, .5)), dur(quantile(freshOpens, .5)), dur(quantile(freshCalls, .5))),
		dur(quantile(execs, .5))+" exec of this program doing nothing", 0, "", false)
	t.add("  killed worker: calls that raced the kill and were retried", strconv.Itoa(retries), "-", 0, "", false)
	return nil
}

type discard struct{}

func (discard) Write(b []byte) (int, error) { return len(b), nil }

func sleepCtx(ctx context.Context, d time.Duration) error {
	tm := time.NewTimer(d)
	defer tm.Stop()
	select {
	case <-tm.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// procStat is the fields of /proc/<pid>/stat after the command name:
// state is [0], ppid [1].
func procStat(pid int) ([]string, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return nil, err
	}
	return parseStat(b)
}

// parseStat splits a /proc/<pid>/stat line after its command name, which
// is in parentheses and may itself hold spaces and parentheses (a process
// names itself): the last ')' ends it.
func parseStat(b []byte) ([]string, error) {
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return nil, errors.New("stat: no command name")
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 2 {
		return nil, errors.New("stat: no state and ppid")
	}
	return f, nil
}

// children is the pids of this process's live (not zombie) children.
func children() []int {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	self := strconv.Itoa(os.Getpid())
	var out []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		f, err := procStat(pid)
		if err != nil || len(f) < 2 || f[1] != self || f[0] == "Z" || f[0] == "X" {
			continue
		}
		out = append(out, pid)
	}
	return out
}

// childrenCPU is the CPU time of this process's live children (the
// workers): the sum over their threads of /proc/<pid>/task/<tid>/schedstat's
// time on a CPU, in nanoseconds (stat's utime and stime count 10 ms ticks).
func childrenCPU() time.Duration {
	var total time.Duration
	for _, pid := range children() {
		tasks, _ := filepath.Glob("/proc/" + strconv.Itoa(pid) + "/task/*/schedstat")
		for _, f := range tasks {
			b, err := os.ReadFile(f)
			if err != nil {
				continue
			}
			fields := strings.Fields(string(b))
			if len(fields) == 0 {
				continue
			}
			ns, _ := strconv.ParseInt(fields[0], 10, 64)
			total += time.Duration(ns)
		}
	}
	return total
}

// startTime is when process pid started, to the clock tick.
func startTime(pid int) (time.Time, error) {
	f, err := procStat(pid)
	if err != nil || len(f) < 20 {
		return time.Time{}, fmt.Errorf("/proc/%d/stat: %v", pid, err)
	}
	// starttime is field 22 of stat ([19] here), in ticks since boot.
	ticks, err := strconv.ParseInt(f[19], 10, 64)
	if err != nil {
		return time.Time{}, err
	}
	up, err := os.ReadFile("/proc/uptime")
	if err != nil {
		return time.Time{}, err
	}
	sec, err := strconv.ParseFloat(strings.Fields(string(up))[0], 64)
	if err != nil {
		return time.Time{}, err
	}
	boot := time.Now().Add(-time.Duration(sec * float64(time.Second)))
	return boot.Add(time.Duration(ticks) * 10 * time.Millisecond), nil
}

// vmRSS is VmRSS of /proc/<pid>/status, in bytes.
func vmRSS(pid int) (int64, error) {
	return statusBytes(pid, "VmRSS")
}

// statusBytes is a field of /proc/<pid>/status counted in kB, in bytes.
func statusBytes(pid int, field string) (int64, error) {
	return procKB("/proc/"+strconv.Itoa(pid)+"/status", field)
}

// procKB is the "field: N kB" line of a /proc file, in bytes.
func procKB(path, field string) (int64, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, field+":"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			return kb << 10, err
		}
	}
	return 0, fmt.Errorf("no %s in %s", field, path)
}

// rssParts describes a process's resident set: anonymous memory (its
// own), file-backed pages (mostly this program's text, shared with the
// parent and the other workers), and Pss (each shared page divided among
// the processes mapping it).
func rssParts(pid int) string {
	anon, err1 := statusBytes(pid, "RssAnon")
	file, err2 := statusBytes(pid, "RssFile")
	pss, err3 := procKB("/proc/"+strconv.Itoa(pid)+"/smaps_rollup", "Pss")
	if err := errors.Join(err1, err2, err3); err != nil {
		return err.Error()
	}
	return fmt.Sprintf("anon %s, file %s, Pss %s", mib(anon), mib(file), mib(pss))
}

// logMappings logs process pid's largest resident mappings: what its
// anonymous memory is (the Go heap's arenas, compiled code, linear
// memories) for whoever chases the RSS row.
func logMappings(pid int) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/smaps")
	if err != nil {
		return
	}
	type mapping struct {
		head string
		rss  int64
	}
	var maps []mapping
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		switch {
		case len(f) >= 5 && strings.Contains(f[0], "-") && len(f[1]) == 4:
			maps = append(maps, mapping{head: line})
		case len(f) >= 2 && f[0] == "Rss:" && len(maps) > 0:
			kb, _ := strconv.ParseInt(f[1], 10, 64)
			maps[len(maps)-1].rss = kb << 10
		}
	}
	sort.Slice(maps, func(i, j int) bool { return maps[i].rss > maps[j].rss })
	for _, m := range maps[:min(len(maps), 12)] {
		logf("   worker %d mapping: %s resident %s", pid, strings.Join(strings.Fields(m.head), " "), mib(m.rss))
	}
}
