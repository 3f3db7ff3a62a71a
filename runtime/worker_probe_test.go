//go:build subakoprobe

package runtime

import (
	"context"
	"errors"
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/subako/subako-runner/internal/devtools/testguest"
	"github.com/subako/subako-runner/limits"
)

// These tests need the test build's probes: go test -tags subakoprobe
// (make test runs them).

// From inside a worker, what a guest that escaped wazero would try next is
// refused, layer by layer: the file system outside the worker's
// directories, the network, a new program, the parent's memory, a socket.
func TestWorkerSandboxRefusesEscapes(t *testing.T) {
	rt := newWorkerRT(t, nil, Config{})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var accepted atomic.Int32
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			accepted.Add(1)
			c.Close()
		}
	}()
	m, _, err := rt.workers.call(context.Background(), 0, "probe", encodeWire(wireProbeSandbox, wireSandboxProbe{TCP: ln.Addr().String()}))
	if err != nil {
		t.Fatalf("the probe: %v (a probe that succeeds at execve ends its worker)", err)
	}
	var out []wireProbeOutcome
	if err := decodeWire(m, wireReply, &out); err != nil {
		t.Fatal(err)
	}
	if len(out) != 5 {
		t.Fatalf("%d outcomes: %+v", len(out), out)
	}
	for _, o := range out {
		t.Logf("%s: %s", o.Name, o.Err)
		if o.Err == "" {
			t.Errorf("%s succeeded inside the worker", o.Name)
		}
	}
	if n := accepted.Load(); n != 0 {
		t.Errorf("the listener accepted %d connections from the worker", n)
	}
	r := rt.Sandbox()
	if !r.Complete() {
		t.Logf("sandbox incomplete on this machine: %v", r.Missing)
	}
}

// spinModule is a command whose _start loops forever with no host call:
// with metering off, nothing inside the process can stop it.
func spinModule() []byte {
	return []byte{
		0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00,
		0x01, 0x04, 0x01, 0x60, 0x00, 0x00, // type: () -> ()
		0x03, 0x02, 0x01, 0x00, // one function of type 0
		0x05, 0x03, 0x01, 0x00, 0x01, // memory: min 1
		0x07, 0x13, 0x02, // exports: 2
		0x06, '_', 's', 't', 'a', 'r', 't', 0x00, 0x00,
		0x06, 'm', 'e', 'm', 'o', 'r', 'y', 0x02, 0x00,
		0x0a, 0x09, 0x01, 0x07, 0x00, 0x03, 0x40, 0x0c, 0x00, 0x0b, 0x0b, // loop br 0 end end
	}
}

// With both metering lines off (the test build's knob), a looping guest
// is stopped by the process layer alone: the parent kills its worker at
// the deadline and the grace, the run ends timeout, and a fresh worker
// serves what comes next. With metering on (the control), the worker's own
// deadline ends it and the worker stays.
func TestWorkerUnmeteredGuestKilledAtDeadline(t *testing.T) {
	lim := limits.Default()
	lim.CallTimeout = 300 * time.Millisecond
	lim.CompileTimeout = 2 * time.Second
	path := writeModule(t, spinModule())
	for _, unmetered := range []bool{false, true} {
		if unmetered {
			t.Setenv(unmeteredEnv, "1")
		}
		// The control's grace is long: on a loaded machine its own
		// deadline must end the guest first, however slowly.
		grace := 30 * time.Second
		if unmetered {
			grace = 200 * time.Millisecond
		}
		rt := newWorkerRT(t, &lim, Config{Workers: WorkerConfig{Grace: grace}})
		slot := rt.workers.pool.Slot(0)
		gen := slot.Generation()
		res, err := rt.RunCommand(context.Background(), path, Command{})
		if err != nil {
			t.Fatalf("unmetered=%v: %v", unmetered, err)
		}
		if res.Crash == nil || res.Crash.Reason != CrashTimeout {
			t.Fatalf("unmetered=%v: %+v; want crash timeout", unmetered, res)
		}
		killed := strings.Contains(res.Crash.Message, "worker process was killed")
		if killed != unmetered {
			t.Fatalf("unmetered=%v: killed=%v (%s)", unmetered, killed, res.Crash.Message)
		}
		if unmetered {
			// A fresh worker takes the slot, and works.
			if _, _, err := rt.workers.call(context.Background(), 0, "release", encodeWire(wireRelease, wireHandleReq{})); err != nil {
				t.Fatalf("the fresh worker: %v", err)
			}
			if slot.Generation() == gen {
				t.Fatal("the slot kept its killed worker")
			}
		} else if slot.Generation() != gen {
			t.Fatal("a metered guest cost its worker")
		}
	}
}

// A machine without a layer (here Landlock, left out by the test knob)
// still runs workers and says which layer is missing; RequireSandbox
// refuses to run without it.
func TestWorkerMissingLayerIsReportedAndCanBeRequired(t *testing.T) {
	t.Setenv(skipLandlockEnv, "1")
	rt := newWorkerRT(t, nil, Config{})
	r := rt.Sandbox()
	if r.Complete() || r.Landlock != 0 || len(r.Missing) == 0 || !strings.Contains(strings.ToLower(strings.Join(r.Missing, " ")), "landlock") {
		t.Fatalf("report %+v; want Landlock missing and said so", r)
	}
	res := call(t, load(t, rt, "../testdata/packages/cgreet"), CallRequest{Tool: "greet", Arguments: []byte(`{"name":"x"}`)})
	if res.Outcome != OutcomeOK {
		t.Fatalf("a call without Landlock: %s", res.Outcome)
	}
	_, err := New(context.Background(), Config{Isolation: IsolationWorkers, CompilationCacheDir: compiledCache,
		Workers: WorkerConfig{Count: 1, RequireSandbox: true}})
	if err == nil || !strings.Contains(strings.ToLower(err.Error()), "landlock") {
		t.Fatalf("New with RequireSandbox on a machine without Landlock: %v; want an error naming it", err)
	}
}

// When the parent kills a worker for one operation's overrun, the other
// calls it was running are not blamed for it: they end with a
// *WorkerError (retry), not a crash "timeout" of their packages.
func TestWorkerKilledForANeighbourIsNotATimeout(t *testing.T) {
	t.Setenv(unmeteredEnv, "1")
	obs := newInstanceCounter()
	rt := newWorkerRT(t, nil, Config{Observer: obs, Workers: WorkerConfig{Grace: 200 * time.Millisecond}})
	pkg := load(t, rt, makePackage(t, testguest.Go(t, guests+"misbehave"), nil))
	obs.drain() // discovery's instance
	done := make(chan error, 1)
	go func() {
		_, err := pkg.Call(context.Background(), CallRequest{Tool: "timeout_sleep"})
		done <- err
	}()
	<-obs.started // the call's
	lim := limits.Default()
	lim.CallTimeout = 300 * time.Millisecond
	lim.CompileTimeout = 2 * time.Second
	res, err := rt.RunCommand(context.Background(), writeModule(t, spinModule()), Command{Limits: &lim})
	if err != nil || res.Crash == nil || res.Crash.Reason != CrashTimeout {
		t.Fatalf("the looping command: %+v, %v; want crash timeout", res, err)
	}
	err = <-done
	var werr *WorkerError
	if !errors.As(err, &werr) || werr.Reason != "deadline" {
		t.Fatalf("the call beside it: %v; want a *WorkerError of reason deadline", err)
	}
}

// An event bigger than any trace line is a worker's lie: the parent kills
// the worker before it decodes the event, and no hook sees it.
func TestWorkerOversizedEventKillsItsWorker(t *testing.T) {
	var traced atomic.Int32
	rt := newWorkerRT(t, nil, Config{Trace: func(TraceEvent) { traced.Add(1) }})
	slot := rt.workers.pool.Slot(0)
	gen := slot.Generation()
	over := int(rt.workers.maxEvent())
	_, _, err := rt.workers.call(context.Background(), 0, "probe", encodeWire(wireProbeSandbox, wireSandboxProbe{BigEvent: over}))
	// The answer may or may not have left before the kill; the worker
	// must be gone either way.
	t.Logf("probe: %v", err)
	for deadline := time.Now().Add(30 * time.Second); slot.Generation() == gen; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("a worker that sent an event past the bound was not killed")
		}
	}
	if n := traced.Load(); n != 0 {
		t.Fatalf("the hook saw %d events from the lying worker", n)
	}
	// A line within the bound is traced and costs nothing.
	if _, _, err := rt.workers.call(context.Background(), 0, "probe", encodeWire(wireProbeSandbox, wireSandboxProbe{BigEvent: 100})); err != nil {
		t.Fatal(err)
	}
	if traced.Load() != 1 {
		t.Fatalf("an event within the bound: %d traced, want 1", traced.Load())
	}
}
