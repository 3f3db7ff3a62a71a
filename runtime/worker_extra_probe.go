//go:build subakoprobe

package runtime

import (
	"context"
	"fmt"
	"net"
	"os"
	"syscall"
	"time"

	"github.com/subako/subako-runner/internal/sandbox"
)

// This file exists only in test builds (tag subakoprobe): it gives a
// worker the probe the process layer's tests send it, to try from inside
// the sandbox what a guest that escaped wazero would try next.

// unmeteredEnv, set in a test build's worker, turns both metering lines
// off (compile.Compiler.DisableMeteringForTests).
const unmeteredEnv = "SUBAKO_TEST_UNMETERED"

// skipLandlockEnv, set in a test build's worker, leaves Landlock out of
// its sandbox, as on a kernel without it.
const skipLandlockEnv = "SUBAKO_TEST_SKIP_LANDLOCK"

// testEnvVars are the test build's variables a worker inherits.
func testEnvVars() []string { return []string{unmeteredEnv, skipLandlockEnv} }

func testSandboxKnobs(cfg *sandbox.Config) {
	if os.Getenv(skipLandlockEnv) == "1" {
		sandbox.SkipLandlockForTests(cfg)
	}
}

// wireSandboxProbe asks a worker to try the escapes.
type wireSandboxProbe struct {
	// TCP is a loopback address a test listens on.
	TCP string
	// BigEvent, when set, makes the worker send a trace event of that
	// many line bytes, as a lying worker would, and nothing else.
	BigEvent int
}

// wireProbeOutcome is one attempt: Err is empty when it succeeded.
type wireProbeOutcome struct {
	Name string
	Err  string
}

func (w *workerServer) serveExtra(ctx context.Context, kind wireKind, header []byte) ([]byte, error) {
	if kind != wireProbeSandbox {
		return nil, fmt.Errorf("%w: kind %d is not a request", errMalformed, kind)
	}
	var req wireSandboxProbe
	if err := decodeWire(header, kind, &req); err != nil {
		return nil, err
	}
	if req.BigEvent > 0 {
		w.event(wireTrace, wireTraceMsg{Event: TraceEvent{Kind: TraceStderr, Line: make([]byte, req.BigEvent)}})
		return encodeWire(wireReply, []wireProbeOutcome(nil)), nil
	}
	var out []wireProbeOutcome
	try := func(name string, f func() error) {
		o := wireProbeOutcome{Name: name}
		if err := f(); err != nil {
			o.Err = err.Error()
		}
		out = append(out, o)
	}
	try("open /etc/passwd", func() error {
		f, err := os.Open("/etc/passwd")
		if err == nil {
			f.Close()
		}
		return err
	})
	try("tcp connect "+req.TCP, func() error {
		c, err := net.DialTimeout("tcp", req.TCP, 5*time.Second)
		if err == nil {
			c.Close()
		}
		return err
	})
	try("execve /bin/true", func() error {
		// Success replaces this worker with /bin/true, which exits: the
		// test sees its worker die instead of an answer.
		return syscall.Exec("/bin/true", []string{"true"}, nil)
	})
	try(fmt.Sprintf("read /proc/%d/mem (the parent's memory)", os.Getppid()), func() error {
		f, err := os.Open(fmt.Sprintf("/proc/%d/mem", os.Getppid()))
		if err != nil {
			return err
		}
		defer f.Close()
		_, err = f.ReadAt(make([]byte, 16), 0x400000)
		return err
	})
	try("socket(AF_UNIX)", func() error {
		fd, err := syscall.Socket(syscall.AF_UNIX, syscall.SOCK_STREAM, 0)
		if err == nil {
			syscall.Close(fd)
		}
		return err
	})
	return encodeWire(wireReply, out), nil
}

// applyTestKnobs is what a test build's worker does with its knobs.
func (w *workerServer) applyTestKnobs() {
	if os.Getenv(unmeteredEnv) == "1" {
		w.rt.compiler.DisableMeteringForTests()
	}
}
