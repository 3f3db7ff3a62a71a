package runtime

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"testing"
	"time"

	"github.com/subako/subako-runner/internal/devtools/testguest"
)

// wantClosed asserts that err is ErrClosed and no verdict on the package.
func wantClosed(t *testing.T, what string, err error) {
	t.Helper()
	if !errors.Is(err, ErrClosed) {
		t.Fatalf("%s: err = %v; want an error that errors.Is ErrClosed", what, err)
	}
	var rej *RejectedError
	var crash *Crash
	if errors.As(err, &rej) || errors.As(err, &crash) {
		t.Fatalf("%s: a closed runtime came back as a verdict on the package: %v", what, err)
	}
	if errors.Is(err, context.Canceled) {
		t.Errorf("%s: %v reads as the caller's cancellation", what, err)
	}
}

// After Runtime.Close every entry point returns ErrClosed, before and
// while it runs a guest: never a rejection (Load and Validate said
// invalid_module: runtime closed) or a crashed Result (Call said crashed,
// trap), and the observer counts neither as the package's fault. Close
// stops the guests running (they sleep forever here) and returns.
func TestClosedRuntimeIsOneHostError(t *testing.T) {
	t.Parallel()
	module := testguest.Go(t, guests+"misbehave")
	meta := `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}`
	probe := Probe{Messages: []json.RawMessage{json.RawMessage(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"timeout_sleep","arguments":{},` + meta + `}}`)}}
	pkgDir := makePackage(t, module, nil)
	// In the mode file, timeout_sleep makes server/discover sleep forever.
	blockingDiscovery := makePackage(t, module, map[string]string{"mode": "timeout_sleep"})

	// setup is one runtime, with what the entry points need made before
	// it closes.
	type setup struct {
		rt       *Runtime
		hook     *stderrHook
		rec      *recorder
		pkg      *Package
		checked  *Checked
		artifact *Artifact
	}
	prepare := func(t *testing.T) *setup {
		s := &setup{hook: &stderrHook{}, rec: &recorder{}}
		s.rt = hookedRuntime(t, s.hook, s.rec)
		s.pkg = load(t, s.rt, pkgDir)
		store := t.TempDir()
		if err := s.pkg.Artifact().Save(store); err != nil {
			t.Fatal(err)
		}
		var err error
		if s.artifact, err = ReadArtifact(store); err != nil {
			t.Fatal(err)
		}
		if s.checked, err = s.rt.Validate(context.Background(), blockingDiscovery); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.checked.Close(context.Background()) })
		return s
	}
	entries := []struct {
		name   string
		blocks bool // runs a guest that blocks after its first stderr line
		run    func(s *setup) error
	}{
		{"Load", true, func(s *setup) error {
			p, err := s.rt.Load(context.Background(), blockingDiscovery)
			if p != nil {
				p.Close(context.Background())
			}
			return err
		}},
		{"Validate", false, func(s *setup) error {
			c, err := s.rt.Validate(context.Background(), pkgDir)
			if c != nil {
				c.Close(context.Background())
			}
			return err
		}},
		{"Discover", true, func(s *setup) error {
			p, err := s.rt.Discover(context.Background(), s.checked, blockingDiscovery)
			if p != nil {
				p.Close(context.Background())
			}
			return err
		}},
		{"Open", false, func(s *setup) error {
			p, err := s.rt.Open(context.Background(), s.artifact, pkgDir)
			if p != nil {
				p.Close(context.Background())
			}
			return err
		}},
		{"Call", true, func(s *setup) error {
			res, err := s.pkg.Call(context.Background(), CallRequest{Tool: "timeout_sleep"})
			if res != nil {
				res.Release()
				t.Errorf("Call returned a Result (%s, crash %+v) with err %v", res.Outcome, res.Crash, err)
			}
			return err
		}},
		{"Probe", true, func(s *setup) error {
			res, err := s.pkg.Probe(context.Background(), probe, CallRequest{})
			if res != nil {
				t.Errorf("Probe returned a result (crash %+v) with err %v", res.Crash, err)
			}
			return err
		}},
		{"RunCommand", true, func(s *setup) error {
			stdin, w := io.Pipe()
			defer w.Close()
			go func() {
				line := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"timeout_sleep","arguments":{}}}` + "\n"
				_, _ = io.WriteString(w, line)
			}()
			res, err := s.rt.RunCommand(context.Background(), module, Command{Stdin: stdin, Stderr: hookWriter{s.hook}})
			if res != nil {
				t.Errorf("RunCommand returned a result (exit %d, crash %+v) with err %v", res.ExitCode, res.Crash, err)
			}
			return err
		}},
	}
	for _, e := range entries {
		t.Run(e.name+"/closed_before", func(t *testing.T) {
			t.Parallel()
			s := prepare(t)
			if err := s.rt.Close(context.Background()); err != nil {
				t.Fatal(err)
			}
			wantClosed(t, e.name, e.run(s))
			wantNoVerdictEvents(t, s.rec)
		})
		if !e.blocks {
			continue
		}
		t.Run(e.name+"/closed_during", func(t *testing.T) {
			t.Parallel()
			s := prepare(t)
			closed := make(chan error, 1)
			// From the guest's stderr write: Close waits for the instance,
			// so it runs on a goroutine of its own.
			s.hook.arm(func() { go func() { closed <- s.rt.Close(context.Background()) }() })
			wantClosed(t, e.name, e.run(s))
			select {
			case err := <-closed:
				if err != nil {
					t.Fatalf("Close: %v", err)
				}
			case <-time.After(time.Minute): // a whole-test bound: Close must not wait for the guest's own limits
				t.Fatal("Close did not return")
			}
			wantNoVerdictEvents(t, s.rec)
		})
	}
}

// wantNoVerdictEvents asserts that the observer saw no crash or rejection
// after the package loaded in prepare, and an "error" for what the close
// ended.
func wantNoVerdictEvents(t *testing.T, rec *recorder) {
	t.Helper()
	rec.mu.Lock()
	defer rec.mu.Unlock()
	for _, c := range rec.calls {
		if c.Outcome != OutcomeError {
			t.Errorf("call event %+v; want outcome %s", c, OutcomeError)
		}
	}
	for _, u := range rec.uploads[1:] {
		if u.Outcome != "error" {
			t.Errorf("upload event %+v; want outcome error", u)
		}
	}
}
