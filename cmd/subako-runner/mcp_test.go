package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/subako/subako-runner/internal/devtools/testguest"
	"github.com/subako/subako-runner/runtime"
)

// The real MCP clients live in testdata/mcp, installed there by `npm ci`
// (make mcp-clients, which make test runs).
const mcpClients = "../../testdata/mcp/"

// nodeClients returns the node binary, or fails the test in CI (CI=true)
// and skips it, loudly, elsewhere, when the clients were not installed.
// The -short pass (the race detector's) leaves them to the full pass: they
// race-check nothing of ours that the in-process tests do not.
func nodeClients(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("the real-client tests of mcp run in the full pass")
	}
	node, err := exec.LookPath("node")
	why := ""
	switch {
	case err != nil:
		why = "node is not on PATH"
	default:
		for _, pkg := range []string{"@modelcontextprotocol/sdk", "@modelcontextprotocol/inspector-cli", "@modelcontextprotocol/conformance"} {
			if _, err := os.Stat(filepath.Join(mcpClients, "node_modules", pkg, "package.json")); err != nil {
				why = fmt.Sprintf("%s is not installed in testdata/mcp: `npm ci` did not run or failed there (run `make mcp-clients`)", pkg)
				break
			}
		}
	}
	if why == "" {
		return node
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("the real-client tests of mcp cannot run: %s", why)
	}
	t.Logf("SKIPPING the real-client tests of mcp: %s", why)
	t.Skip(why)
	return ""
}

var runnerBin struct {
	once sync.Once
	dir  string
	path string
	err  error
}

func TestMain(m *testing.M) {
	// The commands tests run in-process start their workers from this
	// binary (os.Executable): it serves them before anything else.
	runtime.ServeWorker()
	code := m.Run()
	if runnerBin.dir != "" {
		os.RemoveAll(runnerBin.dir)
	}
	os.Exit(code)
}

// runnerBinary builds subako-runner once per test binary: the clients
// spawn it as a separate process, as Claude Desktop or VS Code do. Under
// -short (make test's race pass) the tests that need it skip: the binary is
// built without the race detector, so running it again there checks
// nothing the full pass did not.
func runnerBinary(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("-short (the race pass): runs the separately built binary, which has no race detector; the full pass runs this test")
	}
	runnerBin.once.Do(func() {
		dir, err := os.MkdirTemp("", "subako-runner-mcp-test-")
		if err != nil {
			runnerBin.err = err
			return
		}
		runnerBin.dir, runnerBin.path = dir, filepath.Join(dir, "subako-runner")
		out, err := exec.Command("go", "build", "-o", runnerBin.path, ".").CombinedOutput()
		if err != nil {
			runnerBin.err = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if runnerBin.err != nil {
		t.Fatal(runnerBin.err)
	}
	return runnerBin.path
}

type tsCall struct {
	Tool      string         `json:"tool"`
	Args      map[string]any `json:"args,omitempty"`
	TimeoutMs int            `json:"timeoutMs,omitempty"`
}

type tsReport struct {
	Tools         []string `json:"tools"`
	Pages         int      `json:"pages"`
	ServerVersion struct {
		Name string `json:"name"`
	} `json:"serverVersion"`
	Capabilities struct {
		Tools *struct {
			ListChanged bool `json:"listChanged"`
		} `json:"tools"`
	} `json:"capabilities"`
	Calls []struct {
		Tool   string `json:"tool"`
		Result *struct {
			Content []struct {
				Type string `json:"type"`
				Text string `json:"text"`
			} `json:"content"`
			StructuredContent json.RawMessage `json:"structuredContent"`
			IsError           bool            `json:"isError"`
			Meta              map[string]any  `json:"_meta"`
		} `json:"result"`
		Error string `json:"error"`
		Code  *int   `json:"code"`
	} `json:"calls"`
	Fatal string `json:"fatal"`
}

func (r *tsReport) text(i int) string {
	var parts []string
	if res := r.Calls[i].Result; res != nil {
		for _, c := range res.Content {
			parts = append(parts, c.Text)
		}
	}
	return strings.Join(parts, "\n")
}

// runTS runs the TypeScript SDK client with the given calls; target is
// "stdio" and the server's command line, or "http" and the URL.
func runTS(t *testing.T, node string, calls []tsCall, target ...string) (*tsReport, string) {
	t.Helper()
	b, _ := json.Marshal(calls)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, append([]string{"client.mjs"}, target...)...)
	cmd.Dir = mcpClients
	cmd.Env = append(os.Environ(), "MCP_CALLS="+string(b))
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var rep tsReport
	if jerr := json.Unmarshal(stdout.Bytes(), &rep); jerr != nil {
		t.Fatalf("client: %v; no report (%v)\nstdout: %s\nstderr: %s", err, jerr, stdout.String(), stderr.String())
	}
	if rep.Fatal != "" || err != nil {
		t.Fatalf("client failed: %v %s\nstderr: %s", err, rep.Fatal, stderr.String())
	}
	return &rep, stderr.String()
}

// httpServer is `subako-runner mcp --http` running in the background.
type httpServer struct {
	url    string
	cmd    *exec.Cmd
	mu     sync.Mutex
	stderr strings.Builder
	lines  chan string
	done   chan struct{}
}

var servingAt = regexp.MustCompile(`over Streamable HTTP at (http://\S+/mcp)`)

func startHTTP(t *testing.T, bin string, args ...string) *httpServer {
	t.Helper()
	s := &httpServer{lines: make(chan string, 1024), done: make(chan struct{})}
	s.cmd = exec.Command(bin, append([]string{"mcp", "--http", "127.0.0.1:0"}, args...)...)
	pipe, err := s.cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := s.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	urls := make(chan string, 1)
	go func() {
		defer close(s.done)
		sc := bufio.NewScanner(pipe)
		for sc.Scan() {
			line := sc.Text()
			s.mu.Lock()
			s.stderr.WriteString(line + "\n")
			s.mu.Unlock()
			if m := servingAt.FindStringSubmatch(line); m != nil {
				urls <- m[1]
			}
			select {
			case s.lines <- line:
			default:
			}
		}
	}()
	t.Cleanup(func() {
		s.cmd.Process.Signal(syscall.SIGINT)
		if err := s.cmd.Wait(); err != nil {
			t.Errorf("mcp --http after SIGINT: %v\n%s", err, s.log())
		}
	})
	select {
	case s.url = <-urls:
	case <-s.done:
		s.cmd.Wait()
		t.Fatalf("mcp --http did not start:\n%s", s.log())
	case <-time.After(2 * time.Minute):
		t.Fatalf("mcp --http did not say where it serves:\n%s", s.log())
	}
	return s
}

func (s *httpServer) log() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stderr.String()
}

// waitLine waits for a stderr line containing every one of parts.
func (s *httpServer) waitLine(t *testing.T, parts ...string) {
	t.Helper()
	timeout := time.After(time.Minute)
	for {
		select {
		case line := <-s.lines:
			if !slices.ContainsFunc(parts, func(p string) bool { return !strings.Contains(line, p) }) {
				return
			}
		case <-timeout:
			t.Fatalf("no stderr line with %q:\n%s", parts, s.log())
		}
	}
}

// TestMCPThroughTypeScriptSDK: the official TypeScript SDK client, over
// stdio and over Streamable HTTP, on the Go, C and Rust packages: it lists
// the tools, calls them and gets the modules' results; a crash is an
// isError result naming the crash code; a call over --timeout ends.
func TestMCPThroughTypeScriptSDK(t *testing.T) {
	node := nodeClients(t)
	bin := runnerBinary(t)
	greet, _ := filepath.Abs(builtPackage(t, "greet", "greet"))
	misbehave, _ := filepath.Abs(pkgDir(t, "misbehave", nil))
	abs := func(p string) string { a, _ := filepath.Abs(p); return a }
	type check func(t *testing.T, r *tsReport)
	hello := func(i int, want string) check {
		return func(t *testing.T, r *tsReport) {
			if res := r.Calls[i].Result; res == nil || res.IsError || !strings.Contains(r.text(i), want) {
				t.Errorf("call %d (%s): %+v, want a result with %q", i, r.Calls[i].Tool, r.Calls[i], want)
			}
		}
	}
	crash := func(i int, code string) check {
		return func(t *testing.T, r *tsReport) {
			res := r.Calls[i].Result
			if res == nil || !res.IsError || !strings.Contains(r.text(i), "the module crashed ("+code+")") {
				t.Errorf("call %d (%s): %+v, want an isError result naming %s", i, r.Calls[i].Tool, r.Calls[i], code)
				return
			}
			if m, _ := res.Meta["subako/crash"].(map[string]any); m["reason"] != code {
				t.Errorf("call %d: _meta %v", i, res.Meta)
			}
		}
	}
	for _, tc := range []struct {
		name   string
		args   []string // flags and the package
		tools  []string
		calls  []tsCall
		checks []check
	}{
		{"go", []string{greet}, []string{"greet", "media", "media_edge", "echo_args", "read_file", "write_file"},
			[]tsCall{{Tool: "greet", Args: map[string]any{"name": "Ada"}}, {Tool: "read_file", Args: map[string]any{"path": "/package/assets/greeting.txt"}}},
			[]check{hello(0, `{"message":"Hello, Ada!"}`), hello(1, "Hello")}},
		{"c", []string{abs("../../testdata/packages/cgreet")}, []string{"greet", "trap"},
			[]tsCall{{Tool: "greet", Args: map[string]any{"name": "Ada"}}, {Tool: "trap"}},
			[]check{hello(0, "Hello, Ada!"), crash(1, "trap")}},
		{"rust", []string{abs("../../testdata/packages/rustgreet")}, []string{"greet"},
			[]tsCall{{Tool: "greet", Args: map[string]any{"name": "Ada"}}},
			[]check{hello(0, "Hello, Ada!")}},
		{"timeout", []string{"--timeout", "1s", misbehave}, nil,
			// (no ordinary call here: under a 1 s limit its success would
			// depend on the machine's load)
			[]tsCall{{Tool: "timeout_sleep"}, {Tool: "timeout"}},
			[]check{crash(0, "timeout"), crash(1, "timeout")}},
	} {
		for _, transport := range []string{"stdio", "http"} {
			t.Run(tc.name+"/"+transport, func(t *testing.T) {
				var rep *tsReport
				if transport == "stdio" {
					rep, _ = runTS(t, node, tc.calls, append([]string{"stdio", bin, "mcp"}, tc.args...)...)
				} else {
					srv := startHTTP(t, bin, tc.args...)
					rep, _ = runTS(t, node, tc.calls, "http", srv.url)
				}
				if tc.tools != nil && !slices.Equal(rep.Tools, tc.tools) {
					t.Errorf("tools %v, want %v", rep.Tools, tc.tools)
				}
				if rep.Capabilities.Tools == nil || !rep.Capabilities.Tools.ListChanged {
					t.Errorf("capabilities: no tools.listChanged")
				}
				if len(rep.Calls) != len(tc.calls) {
					t.Fatalf("%d calls reported, want %d", len(rep.Calls), len(tc.calls))
				}
				for _, c := range tc.checks {
					c(t, rep)
				}
			})
		}
	}
}

// TestMCPConformanceSuite: the official MCP conformance suite
// (@modelcontextprotocol/conformance, every server scenario) against
// `mcp --http` serving testdata/mcpconformance, a tools-only package with one
// tool per tool scenario. The scenarios a stateless tools-only server cannot
// serve are the suite's baseline (testdata/mcpconformance/expected-failures.yml,
// each explained there); the suite fails on any other failure, and on a
// baseline entry that passes.
func TestMCPConformanceSuite(t *testing.T) {
	node := nodeClients(t)
	bin := runnerBinary(t)
	module := testguest.Go(t, "../../testdata/mcpconformance")
	baseline, _ := filepath.Abs("../../testdata/mcpconformance/expected-failures.yml")
	srv := startHTTP(t, bin, module)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, "node_modules/@modelcontextprotocol/conformance/dist/index.js", "server",
		"--url", srv.url, "--suite", "all", "--expected-failures", baseline, "--output-dir", t.TempDir())
	cmd.Dir = mcpClients
	cmd.Env = append(os.Environ(), "NO_COLOR=1")
	out, err := cmd.CombinedOutput()
	summary := string(out)
	if i := strings.Index(summary, "=== SUMMARY ==="); i >= 0 {
		summary = summary[i:]
	}
	if err != nil {
		t.Fatalf("the conformance suite failed (%v):\n%s\n\nserver log:\n%s", err, summary, srv.log())
	}
	if !strings.Contains(summary, "Baseline check passed") {
		t.Fatalf("the suite did not check its baseline:\n%s", summary)
	}
	// The scenarios the issue names as served must have passed, not been
	// skipped: each one's line reads "✓ NAME: N passed, 0 failed", N > 0.
	for _, name := range []string{"server-initialize", "ping", "tools-list", "tools-call-simple-text", "tools-call-image",
		"tools-call-audio", "tools-call-embedded-resource", "tools-call-mixed-content", "tools-call-error",
		"json-schema-2020-12", "server-sse-multiple-streams", "dns-rebinding-protection"} {
		if !regexp.MustCompile(`(?m)^\S+ ` + regexp.QuoteMeta(name) + `: [1-9]\d* passed, 0 failed`).MatchString(summary) {
			t.Errorf("scenario %s did not pass:\n%s", name, summary)
		}
	}
	t.Logf("%s", summary)
}

// TestMCPClientTimeoutEndsTheInstance: the TypeScript client gives up on a
// call after 300 ms (its own timeout, far below the server's) and sends
// notifications/cancelled; the server, still running, ends the instance.
func TestMCPClientTimeoutEndsTheInstance(t *testing.T) {
	node := nodeClients(t)
	bin := runnerBinary(t)
	misbehave, _ := filepath.Abs(pkgDir(t, "misbehave", nil))
	srv := startHTTP(t, bin, "--timeout", "1h", misbehave)
	rep, _ := runTS(t, node, []tsCall{{Tool: "timeout_sleep", TimeoutMs: 300}, {Tool: "ok"}}, "http", srv.url)
	if c := rep.Calls[0]; c.Result != nil || !strings.Contains(c.Error, "timed out") {
		t.Errorf("client-timed-out call: %+v", c)
	}
	if rep.Calls[1].Result == nil || rep.Calls[1].Result.IsError {
		t.Errorf("the next call: %+v", rep.Calls[1])
	}
	// Logged after the instance ended, while the server keeps running.
	srv.waitLine(t, "call cancelled by the client", "timeout_sleep")
}

// TestMCPThroughInspectorCLI: the MCP Inspector's CLI (0.15.0, the last
// release that runs on Node 20) lists and calls tools over stdio and HTTP.
func TestMCPThroughInspectorCLI(t *testing.T) {
	node := nodeClients(t)
	bin := runnerBinary(t)
	cgreet, _ := filepath.Abs("../../testdata/packages/cgreet")
	inspector := func(t *testing.T, args ...string) string {
		t.Helper()
		cmd := exec.Command(node, append([]string{"node_modules/@modelcontextprotocol/inspector-cli/build/index.js"}, args...)...)
		cmd.Dir = mcpClients
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		if err := cmd.Run(); err != nil {
			t.Fatalf("inspector %v: %v\n%s%s", args, err, stdout.String(), stderr.String())
		}
		return stdout.String()
	}
	srv := startHTTP(t, bin, cgreet)
	for name, target := range map[string][]string{"stdio": {bin, "--", "mcp", cgreet}, "http": {srv.url, "--"}} {
		t.Run(name, func(t *testing.T) {
			var list struct {
				Tools []struct{ Name string } `json:"tools"`
			}
			out := inspector(t, append([]string{target[0], "--method", "tools/list"}, target[1:]...)...)
			if err := json.Unmarshal([]byte(out), &list); err != nil || len(list.Tools) != 2 || list.Tools[0].Name != "greet" {
				t.Errorf("tools/list: %v %s", err, out)
			}
			out = inspector(t, append([]string{target[0], "--method", "tools/call", "--tool-name", "greet", "--tool-arg", "name=Ada"}, target[1:]...)...)
			if !strings.Contains(out, `Hello, Ada!`) || strings.Contains(out, `"isError": true`) {
				t.Errorf("tools/call greet: %s", out)
			}
			out = inspector(t, append([]string{target[0], "--method", "tools/call", "--tool-name", "trap"}, target[1:]...)...)
			if !strings.Contains(out, `"isError": true`) || !strings.Contains(out, "the module crashed (trap)") {
				t.Errorf("tools/call trap: %s", out)
			}
		})
	}
}

// TestMCPRejectedPackage: nothing is served, stdout stays empty (it is the
// protocol's), every reason is on stderr, exit 4.
func TestMCPRejectedPackage(t *testing.T) {
	code, out, errOut := cli(t, `{"jsonrpc":"2.0","id":1,"method":"ping"}`+"\n", "mcp", "--no-cache", "../../testdata/checks/unknown_import.wasm")
	if code != exitRejected || out != "" || !strings.Contains(errOut, "nothing is served") || strings.Count(errOut, "unknown_import:") != 3 {
		t.Errorf("exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	for _, args := range [][]string{
		{"mcp", "--http", "0.0.0.0:8080", "x"},
		{"mcp", "--http", ":8080", "x"},
		{"mcp", "--http-allow-remote", "x"},
	} {
		if code, out, errOut := cli(t, "", args...); code != exitUsage || out != "" || !strings.Contains(errOut, "subako-runner: ") {
			t.Errorf("%v: exit %d, %q %q", args, code, out, errOut)
		}
	}
}

// TestMCPStdioInProcess: the command itself, in-process, answers a
// 2025-06-18 initialize and a call on stdout, and writes nothing else there.
func TestMCPStdioInProcess(t *testing.T) {
	for _, isolation := range []string{"workers", "in-process"} {
		t.Run(isolation, func(t *testing.T) { mcpStdio(t, isolation) })
	}
}

func mcpStdio(t *testing.T, isolation string) {
	in := strings.Join([]string{
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"greet","arguments":{"name":"Ada"}}}`,
	}, "\n") + "\n"
	pr, pw := testPipe(in)
	var stdout, stderr syncBuffer
	e := &env{stdin: pr, stdout: &stdout, stderr: &stderr, getenv: func(string) string { return "" }}
	done := make(chan int, 1)
	go func() {
		done <- mainWith(context.Background(), e, []string{"mcp", "--isolation", isolation, "--no-cache", "../../testdata/packages/cgreet"})
	}()
	waitFor(t, func() bool { return strings.Count(stdout.String(), "\n") >= 2 })
	pw.Close()
	if code := <-done; code != exitOK {
		t.Errorf("exit %d at end of input; stderr %s", code, stderr.String())
	}
	lines := strings.Split(strings.TrimSpace(stdout.String()), "\n")
	if len(lines) != 2 || !strings.Contains(lines[0], `"protocolVersion":"2025-06-18"`) || !strings.Contains(lines[1], `Hello, Ada!`) {
		t.Errorf("stdout:\n%s", stdout.String())
	}
	for _, l := range lines {
		if !json.Valid([]byte(l)) {
			t.Errorf("stdout line is not JSON: %q", l)
		}
	}
	// The host's line per call, and the module's own stderr, are on
	// stderr; the module's lines only in-process: a worker process does
	// not pass them on to the command's log (a gap of the runtime's).
	if !strings.Contains(stderr.String(), "serving cgreet (2 tools) over stdio") || !strings.Contains(stderr.String(), `"tool": "greet"`) ||
		(isolation == "in-process" && !strings.Contains(stderr.String(), `"line": "cgreet: tools/call"`)) {
		t.Errorf("stderr: %s", stderr.String())
	}
}

func testPipe(in string) (*os.File, *os.File) {
	r, w, err := os.Pipe()
	if err != nil {
		panic(err)
	}
	go w.WriteString(in)
	return r, w
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("timed out")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestMCPWatch: `mcp --watch` over stdio; the module is replaced by one
// with a new tool, and the client is told and sees it.
func TestMCPWatch(t *testing.T) {
	dir := testguest.Package(t, "../../testdata/packages/rustgreet/module.wasm", "watched", nil)
	pr, pw := testPipe(strings.Join([]string{
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
	}, "\n") + "\n")
	var stdout, stderr syncBuffer
	e := &env{stdin: pr, stdout: &stdout, stderr: &stderr, getenv: func(string) string { return "" }}
	done := make(chan int, 1)
	go func() { done <- mainWith(context.Background(), e, []string{"mcp", "--watch", "--no-cache", dir}) }()
	waitFor(t, func() bool { return strings.Contains(stdout.String(), `"id":1`) })
	cgreet, err := os.ReadFile("../../testdata/packages/cgreet/module.wasm")
	if err != nil {
		t.Fatal(err)
	}
	// One rename, as a build tool that writes atomically does: the watcher
	// must not be able to catch the file half written.
	if err := os.WriteFile(filepath.Join(dir, "module.wasm.new"), cgreet, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(filepath.Join(dir, "module.wasm.new"), filepath.Join(dir, "module.wasm")); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool { return strings.Contains(stdout.String(), `"method":"notifications/tools/list_changed"`) })
	pw.WriteString(`{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{}}` + "\n")
	waitFor(t, func() bool { return strings.Contains(stdout.String(), `"id":2`) })
	pw.Close()
	<-done
	var list struct {
		Result struct {
			Tools []struct{ Name string } `json:"tools"`
		} `json:"result"`
	}
	for _, l := range strings.Split(stdout.String(), "\n") {
		if strings.Contains(l, `"id":2`) {
			json.Unmarshal([]byte(l), &list)
		}
	}
	if len(list.Result.Tools) != 2 || list.Result.Tools[1].Name != "trap" {
		t.Errorf("tools after the change: %+v\nstdout:\n%s\nstderr:\n%s", list.Result.Tools, stdout.String(), stderr.String())
	}
	if !strings.Contains(stderr.String(), "package reloaded") {
		t.Errorf("stderr does not say the package was reloaded:\n%s", stderr.String())
	}
}
