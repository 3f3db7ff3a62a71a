package main

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"

	"github.com/subako/subako-runner/internal/devtools/testguest"
	"github.com/subako/subako-runner/runtime"
)

// childEnv marks this test binary re-executed as a child that waits for
// its stdin to close (TestChildren's).
const childEnv = "SUBAKO_BENCH_TEST_CHILD"

func TestMain(m *testing.M) {
	// The benchmarks' worker runtimes start this binary as their workers.
	runtime.ServeWorker()
	if os.Getenv(childEnv) == "1" {
		var b [1]byte
		os.Stdin.Read(b[:])
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func TestParseStat(t *testing.T) {
	for _, c := range []struct {
		name, line  string
		state, ppid string
		fail        bool
	}{
		{"plain", "123 (bench) S 77 123 77 0 -1", "S", "77", false},
		{"spaces and parentheses in the name", "123 (a) b (c) d) Z 9 1 1", "Z", "9", false},
		{"no name", "123 bench S 77", "", "", true},
		{"cut after the name", "123 (bench) S", "", "", true},
		{"empty", "", "", "", true},
	} {
		t.Run(c.name, func(t *testing.T) {
			f, err := parseStat([]byte(c.line))
			if c.fail {
				if err == nil {
					t.Fatalf("parsed %q as %q", c.line, f)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if f[0] != c.state || f[1] != c.ppid {
				t.Fatalf("state %q ppid %q, want %q %q", f[0], f[1], c.state, c.ppid)
			}
		})
	}
}

// TestChildren: a child this process starts is among its children while it
// runs, and not once it has been waited for.
func TestChildren(t *testing.T) {
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skip("no /proc")
	}
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"=1")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pid := cmd.Process.Pid
	if kids := children(); !slices.Contains(kids, pid) {
		stdin.Close()
		cmd.Wait()
		t.Fatalf("children %v lack the child %d", kids, pid)
	}
	stdin.Close()
	if err := cmd.Wait(); err != nil {
		t.Fatal(err)
	}
	if kids := children(); slices.Contains(kids, pid) {
		t.Fatalf("children %v still hold %d after its exit", kids, pid)
	}
}

// benchRuntimes are the two sides of the worker rows: an in-process
// runtime and one of IsolationWorkers (workers: NumCPU), both closed
// at the end of the benchmark.
func benchRuntimes(b *testing.B) map[string]*runtime.Runtime {
	testdata, err := filepath.Abs("../testdata")
	if err != nil {
		b.Fatal(err)
	}
	out := map[string]*runtime.Runtime{}
	for name, cfg := range map[string]runtime.Config{
		"in-process": {},
		"workers": {Isolation: runtime.IsolationWorkers,
			Workers: runtime.WorkerConfig{ReadOnly: []string{testdata, os.TempDir()}}},
	} {
		rt, err := runtime.New(context.Background(), cfg)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { rt.Close(context.Background()) })
		out[name] = rt
	}
	return out
}

// benchGreet runs one greet call per iteration of the package at dir on
// each side (b.Run: in-process, workers); parallel calls from
// GOMAXPROCS callers at once.
func benchGreet(b *testing.B, dir string, parallel bool) {
	ctx := context.Background()
	args := json.RawMessage(`{"name":"Ada"}`)
	rts := benchRuntimes(b)
	for _, side := range []string{"in-process", "workers"} {
		b.Run(side, func(b *testing.B) {
			pkg, err := rts[side].Load(ctx, dir)
			if err != nil {
				b.Fatal(err)
			}
			defer pkg.Close(ctx)
			once := greetOnce(ctx, pkg, args)
			b.ReportAllocs()
			if !parallel {
				for b.Loop() {
					if err := once(); err != nil {
						b.Fatal(err)
					}
				}
				return
			}
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if err := once(); err != nil {
						b.Error(err)
						return
					}
				}
			})
		})
	}
}

// BenchmarkWorkerCGreetCall is the row "worker C call vs in-process C
// call" as a go test benchmark: compare the sub-benchmarks' ns/op (the
// parent's allocations only, for workers).
func BenchmarkWorkerCGreetCall(b *testing.B) {
	benchGreet(b, "../testdata/packages/cgreet", false)
}

// BenchmarkWorkerGoGreetCall is the row "worker Go call vs in-process Go
// call".
func BenchmarkWorkerGoGreetCall(b *testing.B) {
	benchGreet(b, testguest.Package(b, testguest.Go(b, "../testdata/guests/greet"), "greet", nil), false)
}

// BenchmarkWorkerCGreetCallParallel is calls from GOMAXPROCS callers at
// once (-cpu 2,4: the row's 2×NumCPU callers on this machine's cores).
func BenchmarkWorkerCGreetCallParallel(b *testing.B) {
	benchGreet(b, "../testdata/packages/cgreet", true)
}
