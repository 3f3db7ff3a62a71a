package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	goruntime "runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/subako/subako-runner/runtime"
)

// benchScale measures calls per second of concurrent callers with
// GOMAXPROCS 1 and 2, in many short rounds of each, interleaved; a
// setting's rate is its calls over its rounds' time together. The speed of
// this machine's cores drifts by a fifth from one second to the next (the
// steal column shows only part of it), so the two settings must sample the
// same moments: a best round of each compares two different machines. The
// bare-wazero floor of the same module runs the same rounds as a control,
// and so do child processes at GOMAXPROCS 1 (the machine control): what two
// of them get against one is what the machine gives two busy cores. Each
// round also records the CPU time the process got per second of wall time.
func benchScale(ctx context.Context, o options, t *table) error {
	goDir, err := goPackage(o.work, "greet")
	if err != nil {
		return err
	}
	rt, err := runtime.New(ctx, runtime.Config{})
	if err != nil {
		return err
	}
	defer rt.Close(ctx)
	prev := goruntime.GOMAXPROCS(0)
	defer goruntime.GOMAXPROCS(prev)
	if goruntime.NumCPU() < 2 {
		logf("   only %d CPU: the 2-core round cannot use two cores", goruntime.NumCPU())
	}
	args := json.RawMessage(`{"name":"Ada"}`)
	stdin, err := callLine("greet", args)
	if err != nil {
		return err
	}
	// The targets hold for the collector's target the command line runs
	// with (runtime.GCPercent, docs/RATIONALE.md); Go's default is
	// measured too, for embedders who keep it.
	prevGC := debug.SetGCPercent(100)
	defer debug.SetGCPercent(prevGC)
	for _, gc := range []int{runtime.GCPercent, 100} {
		debug.SetGCPercent(gc)
		for _, p := range []struct{ name, dir string }{
			{"C", filepath.Join("testdata", "packages", "cgreet")},
			{"Go", goDir},
		} {
			if !o.pkgs[p.name] {
				continue
			}
			if err := scaleOf(ctx, o, t, rt, p.name, p.dir, args, stdin, gc); err != nil {
				return fmt.Errorf("%s package: %w", p.name, err)
			}
			goruntime.GOMAXPROCS(prev)
		}
	}
	return nil
}

// greetOnce is one greet call through pkg, its result released.
func greetOnce(ctx context.Context, pkg *runtime.Package, args json.RawMessage) func() error {
	return func() error {
		res, err := pkg.Call(ctx, runtime.CallRequest{Tool: "greet", Arguments: args})
		if err != nil {
			return err
		}
		defer res.Release()
		if res.Outcome != runtime.OutcomeOK {
			return fmt.Errorf("outcome %s crash %+v", res.Outcome, res.Crash)
		}
		return nil
	}
}

// machineSide names the machine control's rounds in total: n is the number
// of child processes, not GOMAXPROCS.
const machineSide = "processes"

func scaleOf(ctx context.Context, o options, t *table, rt *runtime.Runtime, name, dir string, args json.RawMessage, stdin []byte, gc int) error {
	pkg, err := rt.Load(ctx, dir)
	if err != nil {
		return err
	}
	defer pkg.Close(ctx)
	wasm, err := os.ReadFile(filepath.Join(dir, runtime.ModuleFile))
	if err != nil {
		return err
	}
	fl, err := newFloor(ctx, wasm, false)
	if err != nil {
		return err
	}
	defer fl.close(ctx)
	sides := []struct {
		name string
		once func() error
	}{
		{"runtime", greetOnce(ctx, pkg, args)},
		{"bare wazero", func() error {
			_, err := fl.run(ctx, stdin)
			return err
		}},
	}
	// The machine control, at the target's collector setting: the same
	// calls in processes of their own at GOMAXPROCS 1, one alone and two at
	// once. Two processes share nothing but the machine, so what they lose
	// against one is what the machine (its caches, memory, the hypervisor)
	// takes from two busy cores, and what one process on two cores loses
	// beyond that is the process's own.
	var kids []*scaleChild
	if gc == runtime.GCPercent {
		kids, err = startScaleChildren(ctx, o, dir, gc, 2)
		if err != nil {
			return fmt.Errorf("machine control: %w", err)
		}
		defer stopScaleChildren(kids)
	}
	total := map[string]map[int]measured{}
	keep := func(side string, n int, m measured) {
		if total[side] == nil {
			total[side] = map[int]measured{}
		}
		total[side][n] = total[side][n].then(m)
	}
	for r := 0; r < o.scaleRounds; r++ {
		// Which setting goes first alternates, so neither is always the
		// one that follows the other side's rounds.
		order := []int{1, 2}
		if r%2 == 1 {
			order = []int{2, 1}
		}
		for _, side := range sides {
			// A side's rounds run together, after an untimed warm-up of
			// its own calls: the runtime's rounds must not pay for
			// sweeping and returning the bare floor's garbage (its linear
			// memories are Go slices, about six times the bytes a
			// runtime call allocates), nor the floor's for the runtime's.
			goruntime.GOMAXPROCS(order[0])
			goruntime.GC()
			if _, err := callRate(ctx, side.once, o.scaleCallers, o.scaleRound/2); err != nil {
				return fmt.Errorf("%s: %w", side.name, err)
			}
			for _, procs := range order {
				goruntime.GOMAXPROCS(procs)
				m, err := callRate(ctx, side.once, o.scaleCallers, o.scaleRound)
				if err != nil {
					return fmt.Errorf("%s: %w", side.name, err)
				}
				logf("   %s %s GOGC=%d GOMAXPROCS=%d round %d: %s", name, side.name, gc, procs, r+1, m)
				keep(side.name, procs, m)
			}
		}
		for _, n := range order[:len(kids)] {
			m, err := scaleRound(kids[:n])
			if err != nil {
				return fmt.Errorf("machine control: %w", err)
			}
			logf("   %s %d process(es) at GOMAXPROCS=1, GOGC=%d, round %d: %s", name, n, gc, r+1, m)
			keep(machineSide, n, m)
		}
	}
	for i, side := range sides {
		one, two := total[side.name][1], total[side.name][2]
		ratio := two.rate() / one.rate()
		label := fmt.Sprintf("%s calls/s, %d callers, GOGC=%d: 2 cores vs 1", name, o.scaleCallers, gc)
		if i > 0 {
			label = fmt.Sprintf("%s %s runs/s (control), GOGC=%d: 2 cores vs 1", name, side.name, gc)
		}
		if i == 0 && gc == runtime.GCPercent {
			t.add(label, two.String(), one.String(), ratio, "≥ 1.8×", ratio >= 1.8)
		} else {
			t.add(label, two.String(), one.String(), ratio, "", false)
		}
	}
	if kids != nil {
		one, two := total[machineSide][1], total[machineSide][2]
		t.add(fmt.Sprintf("  %s machine control: 2 processes at GOMAXPROCS=1 vs 1", name), two.String(), one.String(), two.rate()/one.rate(), "", false)
		inProc := total[sides[0].name][2]
		t.add(fmt.Sprintf("  %s one process on 2 cores vs 2 processes", name), inProc.String(), two.String(), inProc.rate()/two.rate(), "", false)
	}
	return nil
}

// measured is rounds of calls: the calls completed, the wall time, the CPU
// time the process (or processes) used, and the CPU time the hypervisor
// gave to something else, on all of the machine's CPUs (steal).
type measured struct {
	Calls int64         `json:"calls"`
	Wall  time.Duration `json:"wall"`
	CPU   time.Duration `json:"cpu"`
	Steal time.Duration `json:"steal"`
}

// then is m followed by a later round n.
func (m measured) then(n measured) measured {
	return measured{m.Calls + n.Calls, m.Wall + n.Wall, m.CPU + n.CPU, m.Steal + n.Steal}
}

func (m measured) rate() float64 { return float64(m.Calls) / m.Wall.Seconds() }

func (m measured) String() string {
	return fmt.Sprintf("%.0f/s (%.2f cores, steal %.2f)", m.rate(), float64(m.CPU)/float64(m.Wall), float64(m.Steal)/float64(m.Wall))
}

// cpuTime is the CPU time this process has used, user and system.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// callRate runs callers goroutines calling once for d.
func callRate(ctx context.Context, once func() error, callers int, d time.Duration) (measured, error) {
	// Bounded in time by d and in count by a generous cap.
	const maxCalls = 1_000_000
	var done atomic.Int64
	var firstErr error
	var failOnce sync.Once
	stop := time.Now().Add(d)
	start, cpu0, steal0 := time.Now(), cpuTime(), stealTime()
	var wg sync.WaitGroup
	for c := 0; c < callers; c++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for time.Now().Before(stop) && done.Load() < maxCalls && ctx.Err() == nil {
				if err := once(); err != nil {
					failOnce.Do(func() { firstErr = err })
					return
				}
				done.Add(1)
			}
		}()
	}
	wg.Wait()
	m := measured{Calls: done.Load(), Wall: time.Since(start), CPU: cpuTime() - cpu0, Steal: stealTime() - steal0}
	if firstErr != nil {
		return measured{}, firstErr
	}
	return m, ctx.Err()
}

// stealTime is the time the hypervisor ran something else on this
// machine's CPUs, all of them together (the steal column of /proc/stat); 0
// where there is no such count.
func stealTime() time.Duration {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0
	}
	line, _, _ := strings.Cut(string(b), "\n")
	f := strings.Fields(line)
	if len(f) < 9 || f[0] != "cpu" {
		return 0
	}
	ticks, err := strconv.ParseInt(f[8], 10, 64)
	if err != nil {
		return 0
	}
	// /proc/stat counts in USER_HZ, 100 a second on every Linux.
	return time.Duration(ticks) * 10 * time.Millisecond
}
