package main

import (
	"bytes"
	"context"
	"io"
	"io/fs"
	"net/http"
	"net/url"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/subako/subako-runner/internal/devtools/testguest"
)

// cancelOnWrite is a stderr that ends the command's context the first time
// it sees marker: the test's Ctrl-C, sent while the module is known to be
// running.
type cancelOnWrite struct {
	mu     sync.Mutex
	buf    bytes.Buffer
	marker string
	cancel context.CancelFunc
}

func (w *cancelOnWrite) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf.Write(p)
	if w.cancel != nil && strings.Contains(w.buf.String(), w.marker) {
		w.cancel()
		w.cancel = nil
	}
	return len(p), nil
}

func (w *cancelOnWrite) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.String()
}

// Ctrl-C (the command's context ending, as main's signal.NotifyContext
// does it) while a module runs is exit 130 with one stderr line: not a
// crash (3) with a crash report, nor a rejection, nor a trap (134).
func TestInterruptWhileTheModuleRunsExits130(t *testing.T) {
	module := testguest.Go(t, guests+"misbehave")
	pkg := pkgDir(t, "misbehave", nil)
	request := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"timeout_sleep","arguments":{}}}` + "\n"
	for _, tt := range []struct {
		name  string
		stdin string
		args  []string
	}{
		// --trace writes the conversation on stderr: "tools/call" shows
		// once the call is running. (Not the module's stderr lines in the
		// log at --log-level debug: a worker process does not pass them
		// to the command's log.)
		{"call", "", []string{"call", "--trace", pkg, "timeout_sleep"}},
		{"call --json", "", []string{"call", "--json", "--trace", pkg, "timeout_sleep"}},
		{"call in-process", "", []string{"call", "--isolation=in-process", "--log-level", "debug", pkg, "timeout_sleep"}},
		{"discover", "", []string{"discover", "--trace", pkgDir(t, "misbehave", map[string]string{"mode": "timeout_sleep"})}},
		{"check", "", []string{"check", "--trace", pkg}},
		// run passes the module's stderr through.
		{"run", request, []string{"run", module}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			marker := "tools/call"
			if tt.name == "discover" {
				marker = "server/discover"
			}
			var stdout bytes.Buffer
			stderr := &cancelOnWrite{marker: marker, cancel: cancel}
			e := &env{stdin: strings.NewReader(tt.stdin), stdout: &stdout, stderr: stderr, getenv: func(string) string { return "" }}
			code := mainWith(ctx, e, tt.args)
			if code != exitInterrupted {
				t.Fatalf("exit %d, want %d\nstdout %s\nstderr %s", code, exitInterrupted, stdout.String(), stderr.String())
			}
			if !strings.Contains(stderr.String(), "subako-runner: interrupted: ") {
				t.Errorf("stderr lacks the interruption line:\n%s", stderr.String())
			}
			if out := stdout.String(); strings.Contains(out, "crash") || strings.Contains(out, "rejected") {
				t.Errorf("an interruption was reported as a verdict on the module:\n%s", out)
			}
		})
	}
}

// run reports a module that does not link as exit 2 naming each import,
// as validate names them unknown_import (cli.md), not as a trap (134).
func TestRunModuleThatDoesNotLinkExits2(t *testing.T) {
	code, out, errOut := cli(t, "", "run", "../../testdata/checks/unknown_import.wasm")
	if code != exitUsage {
		t.Fatalf("exit %d, want 2\nstdout %q\nstderr %q", code, out, errOut)
	}
	for _, want := range []string{`unknown_import: import "env"."foo"`, `unknown_import: import "wasi_unstable"."fd_write"`, `"sock_open"`} {
		if !strings.Contains(errOut, want) {
			t.Errorf("stderr lacks %q:\n%s", want, errOut)
		}
	}
	if strings.Contains(errOut, "trap") {
		t.Errorf("a link failure reported as a trap:\n%s", errOut)
	}
	code, _, errOut = cli(t, "", "run", "../../testdata/checks/import_signature.wasm")
	if code != exitUsage || !strings.Contains(errOut, "import_signature") {
		t.Errorf("import_signature: exit %d, stderr %q", code, errOut)
	}
}

// SIGINT/SIGTERM (the command's context ending) while mcp serves a call
// over stdio, the client still connected: the call is cancelled as the
// caller's, not reported as the module's timeout (it waited for its own
// limit before), the command returns well before that limit, and the
// runtime's temporary directory is gone.
func TestInterruptMCPStdioWithACallInFlight(t *testing.T) {
	pkg := pkgDir(t, "misbehave", nil)
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stdin, client := io.Pipe()
	defer client.Close()
	go io.WriteString(client, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"timeout_sleep","arguments":{},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`+"\n")
	var stdout bytes.Buffer
	stderr := &cancelOnWrite{marker: "tools/call", cancel: cancel}
	e := &env{stdin: stdin, stdout: &stdout, stderr: stderr, getenv: func(string) string { return "" }}
	done := make(chan int, 1)
	// --trace: "tools/call" shows on stderr once the call runs (the
	// module's own stderr lines do not reach the log from a worker).
	go func() { done <- mainWith(ctx, e, []string{"mcp", "--trace", "--timeout", "1h", pkg}) }()
	select {
	case code := <-done:
		if code != exitOK {
			t.Errorf("exit %d, want 0\nstderr %s", code, stderr.String())
		}
	case <-time.After(2 * time.Minute): // a whole-test bound; the call's limit is an hour
		t.Fatalf("mcp did not stop on the interruption:\n%s", stderr.String())
	}
	log := stderr.String()
	if !strings.Contains(log, "call cancelled: subako-runner is stopping") {
		t.Errorf("the call was not reported cancelled by the stop:\n%s", log)
	}
	if strings.Contains(log, `"timeout"`) || strings.Contains(log, "reason=timeout") || strings.Contains(log, "crashed") {
		t.Errorf("the cancelled call was reported as the module's timeout:\n%s", log)
	}
	if strings.Contains(stdout.String(), `"id":1`) {
		t.Errorf("the cancelled call was answered: %s", stdout.String())
	}
	// The runtimes of one user share the root <TMPDIR>/subako-runner-<uid>;
	// this one's directory (and its lock) in it must be gone.
	var left []string
	filepath.WalkDir(tmp, func(p string, d fs.DirEntry, err error) error {
		if rel, _ := filepath.Rel(tmp, p); strings.Count(rel, string(filepath.Separator)) >= 1 && strings.HasPrefix(rel, "subako-runner-") {
			left = append(left, p)
		}
		return nil
	})
	if len(left) > 0 {
		t.Errorf("the runtime's temporary directory was left behind: %v", left)
	}
}

// SIGINT/SIGTERM while inspect runs a call from the page: the call's
// request ends with the command (its instance does not run to its hour),
// the command returns 0 and the runtime's temporary directory is gone.
func TestInterruptInspectWithACallInFlight(t *testing.T) {
	pkg := pkgDir(t, "misbehave", nil)
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var stdout syncBuffer
	stderr := &cancelOnWrite{marker: "tools/call", cancel: cancel}
	e := &env{stdin: strings.NewReader(""), stdout: &stdout, stderr: stderr, getenv: func(string) string { return "" }}
	done := make(chan int, 1)
	// In-process: the marker is the module's stderr line "tools/call" in
	// the log at debug, which a worker process does not pass on to the
	// command's log, and inspect has no --trace.
	go func() {
		done <- mainWith(ctx, e, []string{"inspect", "--isolation=in-process", "--log-level", "debug", "--timeout", "1h", pkg})
	}()
	waitFor(t, func() bool { return strings.Contains(stdout.String(), "token=") })
	page, err := url.Parse(strings.TrimSpace(stdout.String()))
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		req, _ := http.NewRequest(http.MethodPost, "http://"+page.Host+"/api/call", strings.NewReader(`{"tool":"timeout_sleep","arguments":{}}`))
		req.Header.Set("X-Subako-Token", page.Query().Get("token"))
		req.Header.Set("Content-Type", "application/json")
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
		}
	}()
	select {
	case code := <-done:
		if code != exitOK {
			t.Errorf("exit %d, want 0\nstderr %s", code, stderr.String())
		}
	case <-time.After(2 * time.Minute): // a whole-test bound; the call's limit is an hour
		t.Fatalf("inspect did not stop on the interruption:\n%s", stderr.String())
	}
	var left []string
	filepath.WalkDir(tmp, func(p string, d fs.DirEntry, err error) error {
		if rel, _ := filepath.Rel(tmp, p); strings.Count(rel, string(filepath.Separator)) >= 1 && strings.HasPrefix(rel, "subako-runner-") {
			left = append(left, p)
		}
		return nil
	})
	if len(left) > 0 {
		t.Errorf("the runtime's temporary directory was left behind: %v", left)
	}
}
