package runtime

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/subako/subako-runner/hostmod/subakohttp"
	"github.com/subako/subako-runner/internal/devtools/testguest"
	"github.com/subako/subako-runner/limits"
)

// stderrHook runs a function, once, when the module next writes a stderr
// line: the test then knows the guest is running (inside the request it
// just logged), not merely about to start.
type stderrHook struct {
	mu   sync.Mutex
	fire func()
}

func (h *stderrHook) arm(f func()) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.fire = f
}

func (h *stderrHook) logger() *zap.Logger {
	core, _ := observer.New(zap.DebugLevel) // enabled at debug, so stderr lines are logged
	return zap.New(core, zap.Hooks(func(e zapcore.Entry) error {
		if e.Message != "module stderr" {
			return nil
		}
		h.mu.Lock()
		f := h.fire
		h.fire = nil
		h.mu.Unlock()
		if f != nil {
			f()
		}
		return nil
	}))
}

// hookedRuntime is a runtime whose logger carries hook, and rec as observer.
func hookedRuntime(t *testing.T, hook *stderrHook, rec *recorder) *Runtime {
	t.Helper()
	cfg := Config{Logger: hook.logger(), CompilationCacheDir: compiledCache}
	if rec != nil {
		cfg.Observer = rec
	}
	rt, err := New(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Close(context.Background()) })
	return rt
}

// wantCallerError asserts that err is the caller's context error and no
// verdict on the package.
func wantCallerError(t *testing.T, what string, err error, want error) {
	t.Helper()
	if !errors.Is(err, want) {
		t.Fatalf("%s: err = %v; want an error that errors.Is %v", what, err, want)
	}
	var rej *RejectedError
	var crash *Crash
	if errors.As(err, &rej) || errors.As(err, &crash) {
		t.Fatalf("%s: the caller's context came back as a verdict on the package: %v", what, err)
	}
}

// A caller's cancelled or expired context is an error wrapping ctx.Err()
// from every entry point, before and during the run of a guest that
// blocks: never a crash, a rejection or a crashed Result, and the
// observer does not count it as a crash.
func TestCallerContextEndIsAnErrorNotAVerdict(t *testing.T) {
	t.Parallel()
	hook := &stderrHook{}
	rec := &recorder{}
	rt := hookedRuntime(t, hook, rec)
	module := testguest.Go(t, guests+"misbehave")
	pkg := load(t, rt, makePackage(t, module, nil))
	// In the mode file, timeout_sleep makes server/discover sleep forever.
	blockingDiscovery := makePackage(t, module, map[string]string{"mode": "timeout_sleep"})

	canceledCtx, cancel := context.WithCancel(context.Background())
	cancel()
	expiredCtx, cancel := context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
	defer cancel()
	cause := errors.New("the agent went away")
	causedCtx, cancelCause := context.WithCancelCause(context.Background())
	cancelCause(cause)

	meta := `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}`
	probe := Probe{Messages: []json.RawMessage{json.RawMessage(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"timeout_sleep","arguments":{},` + meta + `}}`)}}
	artifactDir := t.TempDir()
	if err := pkg.Artifact().Save(artifactDir); err != nil {
		t.Fatal(err)
	}
	artifact, err := ReadArtifact(artifactDir)
	if err != nil {
		t.Fatal(err)
	}
	pkgDir := makePackage(t, module, nil)

	entries := []struct {
		name string
		// blocks says the entry point runs a guest that blocks: the
		// "during" case cancels once it wrote its first stderr line.
		blocks bool
		run    func(ctx context.Context) error
	}{
		{"Load", true, func(ctx context.Context) error {
			p, err := rt.Load(ctx, blockingDiscovery)
			if p != nil {
				p.Close(context.Background())
			}
			return err
		}},
		{"Validate", false, func(ctx context.Context) error {
			c, err := rt.Validate(ctx, blockingDiscovery)
			if c != nil {
				c.Close(context.Background())
			}
			return err
		}},
		{"Discover", true, func(ctx context.Context) error {
			c, err := rt.Validate(context.Background(), blockingDiscovery)
			if err != nil {
				return err
			}
			defer c.Close(context.Background())
			p, err := rt.Discover(ctx, c, blockingDiscovery)
			if p != nil {
				t.Error("Discover returned a package")
			}
			return err
		}},
		{"Open", false, func(ctx context.Context) error {
			p, err := rt.Open(ctx, artifact, pkgDir)
			if p != nil {
				p.Close(context.Background())
			}
			return err
		}},
		{"Call", true, func(ctx context.Context) error {
			res, err := pkg.Call(ctx, CallRequest{Tool: "timeout_sleep"})
			if res != nil {
				res.Release()
				t.Errorf("Call returned a Result (%s, crash %+v) with err %v", res.Outcome, res.Crash, err)
			}
			return err
		}},
		{"Probe", true, func(ctx context.Context) error {
			res, err := pkg.Probe(ctx, probe, CallRequest{})
			if res != nil {
				t.Errorf("Probe returned a result (crash %+v) with err %v", res.Crash, err)
			}
			return err
		}},
		{"RunCommand", true, func(ctx context.Context) error {
			stdin, w := io.Pipe()
			defer w.Close()
			go func() {
				// One request the guest logs on stderr, then sleeps on.
				line := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"timeout_sleep","arguments":{}}}` + "\n"
				_, _ = io.WriteString(w, line)
			}()
			res, err := rt.RunCommand(ctx, module, Command{Stdin: stdin, Stderr: hookWriter{hook}})
			if res != nil {
				t.Errorf("RunCommand returned a result (exit %d, crash %+v) with err %v", res.ExitCode, res.Crash, err)
			}
			return err
		}},
	}
	for _, e := range entries {
		t.Run(e.name+"/canceled_before", func(t *testing.T) {
			wantCallerError(t, e.name, e.run(canceledCtx), context.Canceled)
		})
		t.Run(e.name+"/expired_before", func(t *testing.T) {
			wantCallerError(t, e.name, e.run(expiredCtx), context.DeadlineExceeded)
		})
		t.Run(e.name+"/cause_before", func(t *testing.T) {
			err := e.run(causedCtx)
			wantCallerError(t, e.name, err, context.Canceled)
			if !errors.Is(err, cause) {
				t.Errorf("err = %v; want it to carry the context's cause", err)
			}
		})
		if !e.blocks {
			continue
		}
		t.Run(e.name+"/canceled_during", func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			hook.arm(cancel)
			err := e.run(ctx)
			hook.arm(nil)
			wantCallerError(t, e.name, err, context.Canceled)
		})
		t.Run(e.name+"/deadline_during", func(t *testing.T) {
			// The caller's deadline is well before the call's own limits
			// (60 s, discovery 10 s): the guest sleeps forever, so this
			// deadline is what ends it, wherever it is by then.
			ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
			defer cancel()
			wantCallerError(t, e.name, e.run(ctx), context.DeadlineExceeded)
		})
	}

	rec.mu.Lock()
	defer rec.mu.Unlock()
	canceledCalls := 0
	for _, c := range rec.calls {
		if c.Outcome == OutcomeCrashed || c.Crash != "" {
			t.Errorf("the observer counted a call the caller ended as a crash: %+v", c)
		}
		if c.Outcome == OutcomeCanceled {
			canceledCalls++
		}
	}
	if canceledCalls == 0 {
		t.Error("no CallEvent with OutcomeCanceled for the calls cancelled while running")
	}
	for _, u := range rec.uploads[1:] { // the first is the package loaded above
		if u.Outcome != "canceled" {
			t.Errorf("upload event %+v; want outcome canceled", u)
		}
	}
}

// hookWriter is a command's stderr that fires the hook on each write.
type hookWriter struct{ h *stderrHook }

func (w hookWriter) Write(p []byte) (int, error) {
	w.h.mu.Lock()
	f := w.h.fire
	w.h.fire = nil
	w.h.mu.Unlock()
	if f != nil {
		f()
	}
	return len(p), nil
}

// The call's own timeout limit is a crash (timeout) even when the caller's
// context has a (later) deadline: only the caller's expiring is an error.
func TestCallTimeoutLimitIsACrashNotTheCallersDeadline(t *testing.T) {
	t.Parallel()
	rt := newRuntime(t, nil)
	pkg := load(t, rt, makePackage(t, testguest.Go(t, guests+"misbehave"), nil))
	ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
	defer cancel()
	lim := limits.Default()
	lim.CallTimeout = 200 * time.Millisecond
	res, err := pkg.Call(ctx, CallRequest{Tool: "timeout_sleep", Limits: &lim})
	if err != nil {
		t.Fatalf("Call: %v; the call's own limit must be a crash, not an error", err)
	}
	defer res.Release()
	if res.Outcome != OutcomeCrashed || res.Crash.Reason != CrashTimeout {
		t.Fatalf("outcome %s crash %+v; want crash timeout", res.Outcome, res.Crash)
	}

	// The discovery timeout limit is a rejection the same way.
	lim = limits.Default()
	lim.DiscoveryTimeout = 200 * time.Millisecond
	rt = newRuntime(t, &lim)
	_, err = rt.Load(ctx, makePackage(t, testguest.Go(t, guests+"misbehave"), map[string]string{"mode": "timeout_sleep"}))
	var rej *RejectedError
	if !errors.As(err, &rej) || rej.Crash == nil || rej.Crash.Reason != CrashTimeout {
		t.Fatalf("Load: %v; want discovery_failed with crash timeout", err)
	}
}

// An instance is never abandoned still running: when a host function the
// guest is in does not notice the end of the context (here the embedder's
// credential callback, blocked, stands for any such host code), the call
// does not return until the guest has returned, however long that takes,
// so nothing of the call is released under a running guest (issue 17,
// item 3). Both ends are tried: the call's own deadline, and the caller's
// cancellation.
func TestTimedOutCallReturnsOnlyOnceTheGuestStopped(t *testing.T) {
	t.Parallel()
	logCore, logs := observer.New(zap.ErrorLevel)
	rt, err := New(context.Background(), Config{CompilationCacheDir: compiledCache, Logger: zap.New(logCore)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Close(context.Background()) })
	rt.eng.SetEndGrace(time.Millisecond) // the host gives up waiting at once, if it ever gives up
	pkg := load(t, rt, makePackage(t, testguest.Go(t, guests+"httpprobe"), nil))
	// The host says what it waits for: a host function not honouring the
	// context, logged once the grace has passed (the guest is held there
	// for seconds, the grace is a millisecond).
	t.Cleanup(func() {
		if logs.FilterMessageSnippet("did not stop after its context ended").Len() == 0 {
			t.Error("no log line said that the instance did not stop after its context ended")
		}
	})

	type outcome struct {
		res             *Result
		err             error
		guestStillThere bool
	}
	// attempt makes one call whose guest blocks in the credential callback
	// until released; it reports false when the call ended before the
	// guest got there (its deadline came first on a slow machine).
	attempt := func(t *testing.T, timeout time.Duration, cancelInside bool) (outcome, bool) {
		entered, release := make(chan struct{}), make(chan struct{})
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		var mu sync.Mutex
		guestInHost := false
		policy, err := subakohttp.NewPolicy(subakohttp.PolicyConfig{
			Allow: []string{"api.test"},
			Credentials: []subakohttp.Credential{{Pattern: "api.test", Header: "Authorization", Value: func(context.Context) (string, bool) {
				mu.Lock()
				guestInHost = true
				mu.Unlock()
				if cancelInside {
					cancel()
				}
				close(entered)
				<-release // the guest's subako_http call blocks here, past its end
				mu.Lock()
				guestInHost = false
				mu.Unlock()
				return "", false
			}}},
		})
		if err != nil {
			t.Fatal(err)
		}
		lim := limits.Default()
		lim.CallTimeout = timeout
		done := make(chan outcome, 1)
		go func() {
			res, err := pkg.Call(ctx, CallRequest{Tool: "http", Arguments: json.RawMessage(`{"request":{"url":"http://api.test/x"}}`), Network: policy, Limits: &lim})
			mu.Lock()
			still := guestInHost
			mu.Unlock()
			done <- outcome{res, err, still}
		}()
		select {
		case <-entered:
		case out := <-done:
			if out.res != nil {
				out.res.Release()
			}
			return out, false
		}
		// Give a host that abandons instances every chance to return: past
		// the deadline (or the cancellation) and the 1 ms grace. A correct
		// host cannot return before release, whatever this wait is.
		wait := 2 * time.Second
		if !cancelInside {
			wait += timeout
		}
		var out outcome
		returned := false
		select {
		case out = <-done:
			returned = true
		case <-time.After(wait):
		}
		close(release)
		if !returned {
			out = <-done
		}
		return out, true
	}

	t.Run("deadline", func(t *testing.T) {
		for _, timeout := range []time.Duration{100 * time.Millisecond, time.Second, 10 * time.Second} {
			out, entered := attempt(t, timeout, false)
			if !entered {
				continue // the deadline came before the guest reached the host function; allow more
			}
			if out.guestStillThere {
				t.Fatal("Call returned while the guest was still running inside a host function")
			}
			if out.err != nil {
				t.Fatalf("Call: %v", out.err)
			}
			defer out.res.Release()
			if out.res.Crash == nil || out.res.Crash.Reason != CrashTimeout {
				t.Fatalf("outcome %s crash %+v; want crash timeout", out.res.Outcome, out.res.Crash)
			}
			return
		}
		t.Fatal("the guest never reached subako_http before its deadline, even with 10 s")
	})
	t.Run("caller_cancels", func(t *testing.T) {
		out, entered := attempt(t, limits.Default().CallTimeout, true)
		if !entered {
			t.Fatalf("the call ended before the guest reached subako_http: %+v", out)
		}
		if out.guestStillThere {
			t.Fatal("Call returned while the guest was still running inside a host function")
		}
		if !errors.Is(out.err, context.Canceled) || out.res != nil {
			t.Fatalf("Call: %+v, %v; want the caller's context.Canceled", out.res, out.err)
		}
	})
}
