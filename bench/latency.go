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
	"strings"
	"sync"
	"time"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"
	"github.com/tetratelabs/wazero/sys"

	"github.com/subako/subako-runner/hostmod/subakohttp"
	"github.com/subako/subako-runner/internal/fuel"
	"github.com/subako/subako-runner/runtime"
)

// floor is a bare wazero runtime with the module compiled once: the least
// work that runs one call of the module (instantiate, run _start with the
// request on stdin, close). With metered set it runs the fuel-instrumented
// module under a Meter, as the runtime does.
type floor struct {
	r       wazero.Runtime
	cm      wazero.CompiledModule
	metered bool
}

func newFloor(ctx context.Context, wasm []byte, metered bool) (*floor, error) {
	r := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfig().WithCoreFeatures(api.CoreFeaturesV2))
	f := &floor{r: r, metered: metered}
	if _, err := wasi_snapshot_preview1.Instantiate(ctx, r); err != nil {
		r.Close(ctx)
		return nil, err
	}
	if metered {
		if _, err := fuel.Instantiate(ctx, r); err != nil {
			r.Close(ctx)
			return nil, err
		}
	}
	cm, err := f.compile(ctx, wasm)
	if err != nil {
		r.Close(ctx)
		return nil, err
	}
	f.cm = cm
	if err := stubHTTP(ctx, r, cm); err != nil {
		r.Close(ctx)
		return nil, err
	}
	return f, nil
}

// compile compiles wasm on the floor's runtime, metered if the floor is. A
// module compiled after the first must import what the first does (the
// host modules are instantiated for the first).
func (f *floor) compile(ctx context.Context, wasm []byte) (wazero.CompiledModule, error) {
	if f.metered {
		var err error
		if wasm, err = fuel.Instrument(wasm); err != nil {
			return nil, err
		}
	}
	return f.r.CompileModule(ctx, wasm)
}

// stubHTTP defines a subako_http whose functions all answer -1, when the
// module imports it: the floor must instantiate, not serve HTTP.
func stubHTTP(ctx context.Context, r wazero.Runtime, cm wazero.CompiledModule) error {
	var b wazero.HostModuleBuilder
	for _, fn := range cm.ImportedFunctions() {
		mod, name, _ := fn.Import()
		if mod != subakohttp.ModuleName {
			continue
		}
		if b == nil {
			b = r.NewHostModuleBuilder(subakohttp.ModuleName)
		}
		results := fn.ResultTypes()
		b = b.NewFunctionBuilder().WithGoModuleFunction(api.GoModuleFunc(func(_ context.Context, _ api.Module, stack []uint64) {
			for i := range results {
				stack[i] = api.EncodeI32(-1)
			}
		}), fn.ParamTypes(), results).Export(name)
	}
	if b == nil {
		return nil
	}
	_, err := b.Instantiate(ctx)
	return err
}

// floorTables lets a floor run's tables grow to 2^20 elements (8 MiB): a
// metered instance must have a table budget.
type floorTables struct{}

func (floorTables) GrowTable(_, size, delta uint32) bool { return uint64(size)+uint64(delta) <= 1<<20 }

// run instantiates the module with stdin and returns its stdout.
func (f *floor) run(ctx context.Context, stdin []byte) ([]byte, error) {
	return f.runModule(ctx, f.cm, stdin)
}

// runModule is run for cm, a module of f.compile's.
func (f *floor) runModule(ctx context.Context, cm wazero.CompiledModule, stdin []byte) ([]byte, error) {
	var out bytes.Buffer
	var m *fuel.Meter
	if f.metered {
		m = fuel.NewMeter(0)
		ctx = fuel.WithTableBudget(fuel.WithMeter(ctx, m), floorTables{})
	}
	cfg := wazero.NewModuleConfig().WithName("").WithStdin(bytes.NewReader(stdin)).WithStdout(&out).WithArgs("module.wasm")
	mod, err := f.r.InstantiateModule(ctx, cm, cfg)
	if mod != nil {
		if m != nil {
			m.Finish(mod)
		}
		mod.Close(ctx)
	}
	var exit *sys.ExitError
	if errors.As(err, &exit) && exit.ExitCode() == 0 {
		err = nil
	}
	return out.Bytes(), err
}

func (f *floor) close(ctx context.Context) { f.r.Close(ctx) }

// wazeroCLI builds the wazero command once (from the module cache) and
// returns its path.
func wazeroCLI(ctx context.Context, work string) (string, error) {
	bin := filepath.Join(work, "wazero")
	if _, err := os.Stat(bin); err == nil {
		return bin, nil
	}
	cmd := exec.CommandContext(ctx, "go", "build", "-o", bin, "github.com/tetratelabs/wazero/cmd/wazero")
	cmd.Stderr = os.Stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("building the wazero CLI: %w", err)
	}
	return bin, nil
}

// runProcess runs one `wazero run` of module with stdin and returns its
// stdout.
func runProcess(ctx context.Context, bin, cacheDir, module string, stdin []byte) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "run", "-cachedir", cacheDir, module)
	cmd.Stdin = bytes.NewReader(stdin)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return out, fmt.Errorf("wazero run: %w: %s", err, stderr.Bytes())
	}
	return out, nil
}

// benchLatency measures one greet call of the C and Go packages through
// the runtime, the bare-wazero floor (plain and metered module), and one
// `wazero run` process per call.
func benchLatency(ctx context.Context, o options, t *table) error {
	goDir, err := goPackage(o.work, "greet")
	if err != nil {
		return err
	}
	cli, err := wazeroCLI(ctx, o.work)
	if err != nil {
		return err
	}
	rt, err := runtime.New(ctx, runtime.Config{})
	if err != nil {
		return err
	}
	defer rt.Close(ctx)
	for _, p := range []struct{ name, dir string }{
		{"C", filepath.Join("testdata", "packages", "cgreet")},
		{"Go", goDir},
	} {
		if !o.pkgs[p.name] {
			continue
		}
		if err := latencyOf(ctx, o, t, rt, cli, p.name, p.dir); err != nil {
			return fmt.Errorf("%s package: %w", p.name, err)
		}
	}
	return nil
}

func latencyOf(ctx context.Context, o options, t *table, rt *runtime.Runtime, cli, name, dir string) error {
	pkg, err := rt.Load(ctx, dir)
	if err != nil {
		return err
	}
	defer pkg.Close(ctx)
	module := filepath.Join(dir, runtime.ModuleFile)
	wasm, err := os.ReadFile(module)
	if err != nil {
		return err
	}
	args := json.RawMessage(`{"name":"Ada"}`)
	stdin, err := callLine("greet", args)
	if err != nil {
		return err
	}
	const want = "Hello, Ada!"

	plain, err := newFloor(ctx, wasm, false)
	if err != nil {
		return err
	}
	defer plain.close(ctx)
	metered, err := newFloor(ctx, wasm, true)
	if err != nil {
		return err
	}
	defer metered.close(ctx)

	callOnce := func() error {
		res, err := pkg.Call(ctx, runtime.CallRequest{Tool: "greet", Arguments: args})
		if err != nil {
			return err
		}
		defer res.Release()
		if res.Outcome != runtime.OutcomeOK || !strings.Contains(string(res.Result), want) {
			return fmt.Errorf("call: outcome %s crash %+v result %s", res.Outcome, res.Crash, res.Result)
		}
		return nil
	}
	floorOnce := func(f *floor) func() error {
		return func() error {
			out, err := f.run(ctx, stdin)
			if err != nil {
				return fmt.Errorf("floor: %w (stdout %q)", err, out)
			}
			if !bytes.Contains(out, []byte(want)) {
				return fmt.Errorf("floor: stdout %q lacks the greeting", out)
			}
			return nil
		}
	}
	sides := []func() error{callOnce, floorOnce(plain), floorOnce(metered)}
	times := make([][]time.Duration, len(sides))
	deadline := time.Now().Add(60 * time.Second)
	// The sides take turns in blocks: each side runs in the steady state
	// of its own garbage, not in the other's (the floor's linear memory is
	// on the Go heap, 128 KiB and more a run, and a rotation call by call
	// would charge every side for the collections the floor makes
	// necessary). The first calls of each block are not timed: they pay
	// for the collection the block before left due, and for pools and the
	// code's page faults.
	const block, warm = 50, 10
	for done := 0; done < o.calls && time.Now().Before(deadline); done += block {
		for j := range sides {
			for i := -warm; i < min(block, o.calls-done); i++ {
				start := time.Now()
				if err := sides[j](); err != nil {
					return err
				}
				if i >= 0 {
					times[j] = append(times[j], time.Since(start))
				}
				if err := ctx.Err(); err != nil {
					return err
				}
			}
		}
	}

	cacheDir := filepath.Join(o.work, "wazero-cli-cache")
	if _, err := runProcess(ctx, cli, cacheDir, module, stdin); err != nil { // fills the cache
		return err
	}
	var procs []time.Duration
	deadline = time.Now().Add(60 * time.Second)
	for i := 0; i < o.procCalls && time.Now().Before(deadline); i++ {
		start := time.Now()
		out, err := runProcess(ctx, cli, cacheDir, module, stdin)
		if err != nil {
			return err
		}
		procs = append(procs, time.Since(start))
		if !bytes.Contains(out, []byte(want)) {
			return fmt.Errorf("wazero run: stdout %q lacks the greeting", out)
		}
	}

	call, fl, flm, proc := quantile(times[0], .5), quantile(times[1], .5), quantile(times[2], .5), quantile(procs, .5)
	call90, fl90 := quantile(times[0], .9), quantile(times[1], .9)
	n := len(times[0])
	t.add(fmt.Sprintf("%s call median (n=%d) vs bare wazero", name, n), dur(call), dur(fl),
		float64(call)/float64(fl), "≤ 1.5×", float64(call) <= 1.5*float64(fl))
	t.add(fmt.Sprintf("%s call p90 vs bare wazero p90", name), dur(call90), dur(fl90),
		float64(call90)/float64(fl90), "≤ 2×", float64(call90) <= 2*float64(fl90))
	t.add(fmt.Sprintf("%s call median vs bare wazero, metered module", name), dur(call), dur(flm),
		float64(call)/float64(flm), "", false)
	t.add(fmt.Sprintf("%s `wazero run` process (n=%d) vs call, medians", name, len(procs)), dur(proc), dur(call),
		float64(proc)/float64(call), "≥ 20×", float64(proc) >= 20*float64(call))
	return phasesOf(ctx, o, t, name, dir, args, fl)
}

// phasesOf names what a call costs above the floor: it runs the same
// calls on a runtime with a Trace and splits each at the trace's events
// into the host's work before the guest gets its request (admission, the
// temp volume, mounts, the session, the request's encoding), the instance
// from its start to its end (what the floor measures: instantiation, the
// guest's run, its exit after stdin closes; the host's reading of the
// answer on stdout happens inside it), and the host's work after it
// (parsing the result, the view, stats, Release).
func phasesOf(ctx context.Context, o options, t *table, name, dir string, args json.RawMessage, floorMedian time.Duration) error {
	var mu sync.Mutex
	var sent, exited time.Time
	pkg, closePkg, err := loadIn(ctx, runtime.Config{Trace: func(e runtime.TraceEvent) {
		mu.Lock()
		defer mu.Unlock()
		switch e.Kind {
		case runtime.TraceSend:
			sent = e.Time
		case runtime.TraceExit:
			exited = e.Time
		}
	}}, dir)
	if err != nil {
		return err
	}
	defer closePkg()
	var before, instance, after, total []time.Duration
	deadline := time.Now().Add(30 * time.Second)
	for i := -5; i < o.calls && time.Now().Before(deadline); i++ {
		start := time.Now()
		res, err := pkg.Call(ctx, runtime.CallRequest{Tool: "greet", Arguments: args})
		if err != nil {
			return err
		}
		res.Release()
		end := time.Now()
		if res.Outcome != runtime.OutcomeOK {
			return fmt.Errorf("traced call: outcome %s crash %+v", res.Outcome, res.Crash)
		}
		mu.Lock()
		s, x := sent, exited
		mu.Unlock()
		if i < 0 || s.Before(start) || x.Before(s) || end.Before(x) {
			continue // warm-up, or events not of this call
		}
		// The request is in stdin before the instance starts: sending is
		// where the host's preparation ends and the instance begins.
		before = append(before, s.Sub(start))
		instance = append(instance, x.Sub(s))
		after = append(after, end.Sub(x))
		total = append(total, end.Sub(start))
	}
	b, in, a := quantile(before, .5), quantile(instance, .5), quantile(after, .5)
	t.add(fmt.Sprintf("%s call, host before the instance (median)", name), dur(b), "-", 0, "", false)
	t.add(fmt.Sprintf("%s call, the instance vs the bare wazero call", name), dur(in), dur(floorMedian), float64(in)/float64(floorMedian), "", false)
	t.add(fmt.Sprintf("%s call, host after the instance (median)", name), dur(a), "-", 0, "", false)
	t.add(fmt.Sprintf("%s call traced, whole (median)", name), dur(quantile(total, .5)), "-", 0, "", false)
	return nil
}
