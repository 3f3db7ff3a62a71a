package main

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/subako/subako-runner/internal/wasmbin/wasmtest"
)

// TestSIGTERMEndsARunawayGuest: the process honours SIGTERM whatever the
// guest does with its fuel: a tight loop, and a loop behind 150 failed
// memory.grow(0x10000) that used to buy it seconds without a check (it
// ignored SIGTERM for 6.5 s), and a loop of host calls (sched_yield)
// through call_indirect, which paid no host call's cost and made a slice's
// worth of host calls between two returns to the meter. The command's limit is a minute, so only the
// signal can end it, as the caller's interruption (130). The time from the
// signal to the exit is logged; the test bounds only a hang.
func TestSIGTERMEndsARunawayGuest(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	bin := runnerBinary(t)
	loop := []byte{0x03, 0x40, 0x0c, 0x00, 0x0b}                                                                   // loop br 0 end
	fill := []byte{0x03, 0x40, 0x41, 0x00, 0x41, 0x07, 0x41, 0x80, 0x80, 0x04, 0xfc, 0x0b, 0x00, 0x0c, 0x00, 0x0b} // memory.fill 64 KiB, forever
	grows := wasmtest.Repeat([]byte{0x41, 0x80, 0x80, 0x04, 0x40, 0x00, 0x1a}, nil, 150)
	hostLoop, err := os.ReadFile(filepath.Join("..", "..", "testdata", "fuel", "hostloop.wasm"))
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name string
		wasm []byte
	}{
		{"tight loop", wasmtest.Module{Bodies: [][]byte{loop}}.Bytes()},
		{"failed grows, then memory.fill", wasmtest.Module{Bodies: [][]byte{append(grows, fill...)}}.Bytes()},
		{"host calls through call_indirect", hostLoop},
	} {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "module.wasm")
			if err := os.WriteFile(path, tt.wasm, 0o644); err != nil {
				t.Fatal(err)
			}
			// A signal that comes before the process has installed its
			// handler kills it by the default action, which is not what
			// is tested: then the run starts again and the signal waits
			// longer (a loaded machine starts a process slowly).
			for _, wait := range []time.Duration{300 * time.Millisecond, time.Second, 3 * time.Second} {
				if !interruptsWithin(t, bin, path, wait) {
					return
				}
				t.Logf("SIGTERM %v after the start came before the handler; again, later", wait)
			}
			t.Fatal("SIGTERM killed the process before its handler was installed, three times")
		})
	}
}

// interruptsWithin runs module with a minute's limit, sends SIGTERM after
// wait, and checks the process ends with the interruption's 130; it
// reports whether the signal came too early (the process died of it).
func interruptsWithin(t *testing.T, bin, module string, wait time.Duration) (early bool) {
	t.Helper()
	cmd := exec.Command(bin, "run", "--timeout", "60s", module)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	time.Sleep(wait) // a moment for the guest to be running
	sent := time.Now()
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			if ws, ok := exit.Sys().(syscall.WaitStatus); ok && ws.Signaled() && ws.Signal() == syscall.SIGTERM {
				return true
			}
		}
		if !errors.As(err, &exit) || exit.ExitCode() != 130 {
			t.Fatalf("exit %v; want 130", err)
		}
		t.Logf("exited %v after SIGTERM", time.Since(sent))
	case <-time.After(30 * time.Second):
		cmd.Process.Kill()
		t.Fatal("still running 30 s after SIGTERM")
	}
	return false
}

// TestHostCallsThroughATableRunOutOfFuel: the red team's guest, 100,000
// sched_yield through call_indirect, under --fuel 1e7: each call pays
// the host call's cost as a direct call does, so the budget runs out
// (it exited 0). Under the default budget the same guest finishes.
func TestHostCallsThroughATableRunOutOfFuel(t *testing.T) {
	bin := runnerBinary(t)
	module := filepath.Join("..", "..", "testdata", "fuel", "hostcalls.wasm")
	out, err := exec.Command(bin, "run", "--fuel", "1e7", module).CombinedOutput()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 134 || !strings.Contains(string(out), "out_of_fuel") {
		t.Fatalf("run --fuel 1e7: %v, %s; want out_of_fuel (134)", err, out)
	}
	if out, err := exec.Command(bin, "run", module).CombinedOutput(); err != nil {
		t.Fatalf("run under the default budget: %v, %s; want success", err, out)
	}
}
