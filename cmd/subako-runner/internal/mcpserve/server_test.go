package mcpserve

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/subako/subako-runner/internal/devtools/testguest"
	"github.com/subako/subako-runner/limits"
	"github.com/subako/subako-runner/protocol"
	"github.com/subako/subako-runner/runtime"
)

const testdata = "../../../../testdata/"

var compiledCache string

func TestMain(m *testing.M) {
	runtime.ServeWorker() // a runtime of worker processes started by a test
	os.Exit(testguest.RunWithCompilationCache(m, &compiledCache))
}

// calls records every call the runtime finished: the event is reported
// after the instance has ended, so seeing it means the instance is gone.
type calls struct {
	mu     sync.Mutex
	events []runtime.CallEvent
	ch     chan runtime.CallEvent
}

func newCalls() *calls { return &calls{ch: make(chan runtime.CallEvent, 64)} }

func (c *calls) Upload(context.Context, runtime.UploadEvent) {}
func (c *calls) Call(_ context.Context, e runtime.CallEvent) {
	c.mu.Lock()
	c.events = append(c.events, e)
	c.mu.Unlock()
	c.ch <- e
}

type fixture struct {
	rt    *runtime.Runtime
	calls *calls
	logs  *observer.ObservedLogs
	log   *zap.Logger
}

func newFixture(t testing.TB) *fixture {
	t.Helper()
	core, logs := observer.New(zap.DebugLevel)
	f := &fixture{calls: newCalls(), logs: logs, log: zap.New(core)}
	// MaxInstances: no bound, so that the concurrency tests see their
	// instances alive at once (by default calls beyond the CPUs queue).
	rt, err := runtime.New(context.Background(), runtime.Config{Logger: f.log, Observer: f.calls, CompilationCacheDir: compiledCache, MaxInstances: -1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Close(context.Background()) })
	f.rt = rt
	return f
}

func (f *fixture) load(t testing.TB, path string) *runtime.Package {
	t.Helper()
	pkg, err := f.rt.Load(context.Background(), path)
	if err != nil {
		t.Fatalf("load %s: %v", path, err)
	}
	return pkg
}

func greetPackage(t *testing.T) string {
	return testguest.Package(t, testguest.Go(t, testdata+"guests/greet"), "greet", map[string]string{"assets/greeting.txt": "Hello\n"})
}

func misbehavePackage(t *testing.T) string {
	return testguest.Package(t, testguest.Go(t, testdata+"guests/misbehave"), "misbehave", nil)
}

// methodLog records the method of every message the client sent.
type methodLog struct {
	mu      sync.Mutex
	methods []string
}

func (m *methodLog) has(method string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Contains(m.methods, method)
}

// connectStdio serves srv over a pair of pipes, as the stdio transport
// does, and connects the Go SDK's client to it with the given revision.
func connectStdio(t *testing.T, srv *Server, version string, copts *mcp.ClientOptions) (*mcp.ClientSession, *methodLog) {
	t.Helper()
	cr, sw := io.Pipe() // server → client
	sr, cw := io.Pipe() // client → server
	seen := &methodLog{}
	tee := io.TeeReader(sr, lineMethods(seen))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.ServeStdio(ctx, tee, sw) }()
	client := mcp.NewClient(&mcp.Implementation{Name: "mcpserve-test", Version: "1"}, copts)
	cs, err := client.Connect(ctx, &mcp.IOTransport{Reader: cr, Writer: cw}, &mcp.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		cancel()
		t.Fatalf("connect %s: %v", version, err)
	}
	t.Cleanup(func() {
		cs.Close()
		cw.Close()
		cancel()
		if err := <-done; err != nil {
			t.Errorf("ServeStdio: %v", err)
		}
		sw.Close()
	})
	return cs, seen
}

// lineMethods is a writer that parses each line as JSON-RPC and logs its method.
func lineMethods(m *methodLog) io.Writer {
	pr, pw := io.Pipe()
	go func() {
		sc := bufio.NewScanner(pr)
		sc.Buffer(nil, 1<<24)
		for sc.Scan() {
			var msg struct {
				Method string `json:"method"`
			}
			if json.Unmarshal(sc.Bytes(), &msg) == nil && msg.Method != "" {
				m.mu.Lock()
				m.methods = append(m.methods, msg.Method)
				m.mu.Unlock()
			}
		}
		io.Copy(io.Discard, pr)
	}()
	return pw
}

func toolNames(t *testing.T, cs *mcp.ClientSession) []string {
	t.Helper()
	var names []string
	for tool, err := range cs.Tools(context.Background(), nil) {
		if err != nil {
			t.Fatalf("tools/list: %v", err)
		}
		names = append(names, tool.Name)
	}
	return names
}

func call(t *testing.T, ctx context.Context, cs *mcp.ClientSession, tool string, args any) *mcp.CallToolResult {
	t.Helper()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		t.Fatalf("tools/call %s: %v", tool, err)
	}
	return res
}

func text(r *mcp.CallToolResult) string {
	var parts []string
	for _, c := range r.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			parts = append(parts, tc.Text)
		}
	}
	return strings.Join(parts, "\n")
}

func structured(t *testing.T, r *mcp.CallToolResult) string {
	t.Helper()
	b, err := json.Marshal(r.StructuredContent)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestProtocolRevisions: a client of each revision gets its own lifecycle —
// server/discover and per-request _meta for 2026-07-28 (no initialize at
// all), initialize for 2025-11-25 and 2025-06-18 — and the same tools and
// results.
func TestProtocolRevisions(t *testing.T) {
	f := newFixture(t)
	pkg := f.load(t, greetPackage(t))
	want := []string{}
	for _, tl := range pkg.Tools() {
		want = append(want, tl.Name) // in the package's order
	}
	srv := New(pkg, Options{Logger: f.log})
	t.Cleanup(func() { srv.Close(context.Background()) })

	for _, tc := range []struct {
		version    string
		lifecycle  string // the method that must have been sent
		notSent    string
		pingWorks  bool
		negotiated string
	}{
		{"2026-07-28", "server/discover", "initialize", true, "2026-07-28"},
		{"2025-11-25", "initialize", "server/discover", true, "2025-11-25"},
		{"2025-06-18", "initialize", "server/discover", true, "2025-06-18"},
	} {
		t.Run(tc.version, func(t *testing.T) {
			cs, seen := connectStdio(t, srv, tc.version, nil)
			if got := cs.InitializeResult().ProtocolVersion; got != tc.negotiated {
				t.Errorf("negotiated %q, want %q", got, tc.negotiated)
			}
			if got := toolNames(t, cs); !slices.Equal(got, want) {
				t.Errorf("tools %v, want %v", got, want)
			}
			res := call(t, context.Background(), cs, "greet", map[string]any{"name": "Ada"})
			if res.IsError || structured(t, res) != `{"message":"Hello, Ada!"}` {
				t.Errorf("greet: isError %v, structuredContent %s, text %q", res.IsError, structured(t, res), text(res))
			}
			res = call(t, context.Background(), cs, "greet", map[string]any{"name": ""})
			if !res.IsError || !strings.Contains(text(res), "must not be empty") {
				t.Errorf("greet with an empty name: isError %v, text %q (the module's tool error)", res.IsError, text(res))
			}
			if err := cs.Ping(context.Background(), nil); (err == nil) != tc.pingWorks {
				t.Errorf("ping: %v", err)
			}
			if !seen.has(tc.lifecycle) || seen.has(tc.notSent) {
				t.Errorf("client sent %v: want %s and no %s", seen.methods, tc.lifecycle, tc.notSent)
			}
			if init := cs.InitializeResult(); init.Capabilities == nil || init.Capabilities.Tools == nil || !init.Capabilities.Tools.ListChanged {
				t.Errorf("capabilities %+v: want tools with listChanged", init.Capabilities)
			}
		})
	}
}

// TestToolsListPaginated: a client pages through the stored tool list.
func TestToolsListPaginated(t *testing.T) {
	f := newFixture(t)
	pkg := f.load(t, greetPackage(t))
	srv := New(pkg, Options{Logger: f.log, PageSize: 2})
	t.Cleanup(func() { srv.Close(context.Background()) })
	cs, _ := connectStdio(t, srv, "2025-11-25", nil)
	var pages int
	var names []string
	params := &mcp.ListToolsParams{}
	for {
		res, err := cs.ListTools(context.Background(), params)
		if err != nil {
			t.Fatal(err)
		}
		pages++
		for _, tl := range res.Tools {
			names = append(names, tl.Name)
		}
		if res.NextCursor == "" {
			break
		}
		params = &mcp.ListToolsParams{Cursor: res.NextCursor}
	}
	n := len(pkg.Tools())
	if pages != (n+1)/2 || len(names) != n {
		t.Errorf("%d pages with %v; want %d pages of 2 and all %d tools", pages, names, (n+1)/2, n)
	}
	// In the package's order, not sorted by name (the SDK sorts).
	var order []string
	for _, tl := range pkg.Tools() {
		order = append(order, tl.Name)
	}
	if !slices.Equal(names, order) {
		t.Errorf("tools/list pages give %v, the package listed %v", names, order)
	}
	if _, err := cs.ListTools(context.Background(), &mcp.ListToolsParams{Cursor: "not a cursor"}); err == nil {
		t.Error("an invalid cursor was accepted")
	}
	// The schemas are the module's, byte for byte.
	res, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tl := range res.Tools {
		mod, _ := pkg.Tool(tl.Name)
		got, _ := json.Marshal(tl.InputSchema)
		var a, b any
		json.Unmarshal(got, &a)
		json.Unmarshal(mod.Tool.InputSchema, &b)
		if fmt.Sprint(a) != fmt.Sprint(b) {
			t.Errorf("%s inputSchema %s, the module listed %s", tl.Name, got, mod.Tool.InputSchema)
		}
	}
}

// TestCrashIsAnErrorResult: a module that breaks a crash rule is an isError
// result naming the code, the sentence and the stderr tail — never a
// JSON-RPC error.
func TestCrashIsAnErrorResult(t *testing.T) {
	f := newFixture(t)
	srv := New(f.load(t, testdata+"packages/cgreet"), Options{Logger: f.log})
	t.Cleanup(func() { srv.Close(context.Background()) })
	cs, _ := connectStdio(t, srv, "2026-07-28", nil)
	res := call(t, context.Background(), cs, "trap", map[string]any{})
	txt := text(res)
	if !res.IsError || !strings.Contains(txt, "(trap)") || !strings.Contains(txt, "unreachable") || !strings.Contains(txt, "cgreet: trapping on purpose") {
		t.Errorf("trap: isError %v, text %q", res.IsError, txt)
	}
	crash, _ := res.Meta[CrashMetaKey].(map[string]any)
	if crash["reason"] != "trap" {
		t.Errorf("_meta %v: want %s.reason trap", res.Meta, CrashMetaKey)
	}
	// The C module's own greet still works afterwards: nothing survived.
	res = call(t, context.Background(), cs, "greet", map[string]any{"name": "Ada"})
	if res.IsError || !strings.Contains(text(res), "Ada") {
		t.Errorf("greet after a crash: %v %q", res.IsError, text(res))
	}
	// An unknown tool is the protocol error MCP prescribes.
	if _, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "nope"}); err == nil {
		t.Error("an unknown tool was called")
	}
}

// TestTimeoutEndsTheCall: the call's limit ends an instance that never
// answers, and the client reads a timeout crash.
func TestTimeoutEndsTheCall(t *testing.T) {
	f := newFixture(t)
	lim := limits.Default()
	lim.CallTimeout = 300 * time.Millisecond
	srv := New(f.load(t, misbehavePackage(t)), Options{Logger: f.log, Call: runtime.CallRequest{Limits: &lim}})
	t.Cleanup(func() { srv.Close(context.Background()) })
	cs, _ := connectStdio(t, srv, "2025-11-25", nil)
	res := call(t, context.Background(), cs, "timeout_sleep", map[string]any{})
	if !res.IsError || !strings.Contains(text(res), "(timeout)") {
		t.Errorf("timeout_sleep: isError %v, text %q", res.IsError, text(res))
	}
}

// TestConcurrentCallsAndCancellation: eight calls run at once, each in its
// own instance (eight instances of a guest that never answers are alive
// together), and cancelling each call ends its instance: the runtime
// reports the end of all eight although their limit is an hour away.
func TestConcurrentCallsAndCancellation(t *testing.T) {
	f := newFixture(t)
	lim := limits.Default()
	lim.CallTimeout = time.Hour
	srv := New(f.load(t, misbehavePackage(t)), Options{Logger: f.log, MaxRunning: 16, Call: runtime.CallRequest{Limits: &lim}})
	t.Cleanup(func() { srv.Close(context.Background()) })

	for _, version := range []string{"2026-07-28", "2025-11-25"} {
		t.Run(version, func(t *testing.T) {
			cs, _ := connectStdio(t, srv, version, nil)
			started := f.logs.FilterMessage("module stderr").FilterField(zap.String("tool", "timeout_sleep")).Len()
			ctx, cancel := context.WithCancel(context.Background())
			errs := make(chan error, 8)
			for range 8 {
				go func() {
					_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "timeout_sleep", Arguments: map[string]any{}})
					errs <- err
				}()
			}
			// Each instance logs the request it read, then sleeps.
			waitFor(t, "8 instances alive at once", func() bool {
				return f.logs.FilterMessage("module stderr").FilterField(zap.String("tool", "timeout_sleep")).Len() >= started+8
			})
			select {
			case e := <-f.calls.ch:
				t.Fatalf("a call ended before it was cancelled: %+v", e)
			default:
			}
			cancel()
			for range 8 {
				if err := <-errs; err == nil {
					t.Error("a cancelled call returned a result")
				}
			}
			for i := range 8 {
				select {
				case e := <-f.calls.ch:
					if e.Tool != "timeout_sleep" || e.Stats.Duration >= time.Hour {
						t.Errorf("call event %+v", e)
					}
				case <-time.After(time.Minute):
					t.Fatalf("only %d of 8 cancelled instances ended", i)
				}
			}
		})
	}

	t.Run("results", func(t *testing.T) {
		greet := New(f.load(t, greetPackage(t)), Options{Logger: f.log})
		t.Cleanup(func() { greet.Close(context.Background()) })
		cs, _ := connectStdio(t, greet, "2026-07-28", nil)
		var wg sync.WaitGroup
		for i := range 8 {
			wg.Go(func() {
				name := fmt.Sprintf("caller-%d", i)
				res := call(t, context.Background(), cs, "greet", map[string]any{"name": name})
				if want := `{"message":"Hello, ` + name + `!"}`; structured(t, res) != want {
					t.Errorf("call %d: %s, want %s", i, structured(t, res), want)
				}
			})
		}
		wg.Wait()
	})
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestModuleResultPassedOn: the result is the module's own — content blocks,
// structuredContent of any JSON type byte for byte, _meta — and a block no
// tool result can carry becomes a note instead of failing the call.
func TestModuleResultPassedOn(t *testing.T) {
	f := newFixture(t)
	srv := New(f.load(t, greetPackage(t)), Options{Logger: f.log})
	t.Cleanup(func() { srv.Close(context.Background()) })
	cs, _ := connectStdio(t, srv, "2026-07-28", nil)
	res := call(t, context.Background(), cs, "media", map[string]any{})
	var kinds []string
	for _, c := range res.Content {
		kinds = append(kinds, fmt.Sprintf("%T", c))
	}
	if !slices.Contains(kinds, "*mcp.ImageContent") || !slices.Contains(kinds, "*mcp.ResourceLink") {
		t.Errorf("media content %v: want the module's image and resource_link blocks", kinds)
	}
	var buf bytes.Buffer
	for _, raw := range []string{
		`{"content":[{"type":"text","text":"a"},{"type":"hologram","data":"x"}],"structuredContent":[1,"two",{"b":2,"a":1}],"_meta":{"k":"v"}}`,
	} {
		r := mustParse(t, raw)
		out := srv.moduleResult(r)
		b, _ := json.Marshal(out)
		buf.Write(b)
		if len(out.Content) != 2 || !strings.Contains(text(out), `"hologram"`) {
			t.Errorf("%s → %s: want the text block and a note for the unknown block", raw, b)
		}
		if !strings.Contains(string(b), `"structuredContent":[1,"two",{"b":2,"a":1}]`) || !strings.Contains(string(b), `"_meta":{"k":"v"}`) {
			t.Errorf("%s → %s: structuredContent or _meta not passed on", raw, b)
		}
	}
}

func mustParse(t *testing.T, raw string) protocol.CallToolResult {
	t.Helper()
	r, err := protocol.ParseCallToolResult(json.RawMessage(raw))
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestInitializeNegotiation: initialize answers the client's revision when
// the server has it, and otherwise its latest revision that has initialize
// (2025-11-25), as MCP's version negotiation says; the client decides then.
func TestInitializeNegotiation(t *testing.T) {
	f := newFixture(t)
	srv := New(f.load(t, testdata+"packages/cgreet"), Options{Logger: f.log})
	t.Cleanup(func() { srv.Close(context.Background()) })
	for asked, want := range map[string]string{
		"2025-06-18": "2025-06-18",
		"2025-11-25": "2025-11-25",
		"2099-01-01": "2025-11-25",
		"2026-07-28": "2025-11-25", // 2026-07-28 has no initialize
	} {
		in := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"` + asked + `","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}` + "\n"
		var out bytes.Buffer
		if err := srv.ServeStdio(context.Background(), strings.NewReader(in), &out); err != nil {
			t.Fatal(err)
		}
		var resp struct {
			Result struct {
				ProtocolVersion string `json:"protocolVersion"`
			} `json:"result"`
		}
		if err := json.Unmarshal(out.Bytes(), &resp); err != nil || resp.Result.ProtocolVersion != want {
			t.Errorf("initialize %s: %v %s, want %s", asked, err, out.String(), want)
		}
	}
}

// TestStdioAnswersEveryRequestBeforeTheEnd: a script writes its requests
// and closes stdin at once; every request is still answered (the SDK
// alone drops what is in flight at end of input), and a request the client
// cancelled is not waited for.
func TestStdioAnswersEveryRequestBeforeTheEnd(t *testing.T) {
	f := newFixture(t)
	lim := limits.Default()
	lim.CallTimeout = time.Hour
	srv := New(f.load(t, misbehavePackage(t)), Options{Logger: f.log, Call: runtime.CallRequest{Limits: &lim}})
	t.Cleanup(func() { srv.Close(context.Background()) })
	const meta = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}`
	var in strings.Builder
	for i := range 3 {
		fmt.Fprintf(&in, `{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"ok","arguments":{},%s}}`+"\n", i, meta)
	}
	fmt.Fprintf(&in, `{"jsonrpc":"2.0","id":"sleeper","method":"tools/call","params":{"name":"timeout_sleep","arguments":{},%s}}`+"\n", meta)
	fmt.Fprintf(&in, `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"sleeper",%s}}`+"\n", meta)
	// The last line has no newline: it is a request all the same.
	fmt.Fprintf(&in, `{"jsonrpc":"2.0","id":"last","method":"tools/call","params":{"name":"ok","arguments":{},%s}}`, meta)
	var out bytes.Buffer
	if err := srv.ServeStdio(context.Background(), strings.NewReader(in.String()), &out); err != nil {
		t.Fatal(err)
	}
	answered := map[string]bool{}
	for _, line := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		var m struct {
			ID     json.RawMessage `json:"id"`
			Result *mcp.CallToolResult
		}
		if json.Unmarshal([]byte(line), &m) == nil && m.Result != nil && !m.Result.IsError {
			answered[string(m.ID)] = true
		}
		if string(m.ID) == `"sleeper"` {
			t.Errorf("the cancelled request was answered (MCP: a cancelled request gets no response): %s", line)
		}
	}
	for _, id := range []string{"0", "1", "2", `"last"`} {
		if !answered[id] {
			t.Errorf("request %s was not answered; stdout:\n%s", id, out.String())
		}
	}
}

type closedWriter struct{}

func (closedWriter) Write([]byte) (int, error) { return 0, io.ErrClosedPipe }

// TestStdioClientGone: a client that closed its end while the server
// answers is the end of the session, not an error of the server.
func TestStdioClientGone(t *testing.T) {
	f := newFixture(t)
	srv := New(f.load(t, testdata+"packages/cgreet"), Options{Logger: f.log})
	t.Cleanup(func() { srv.Close(context.Background()) })
	pr, pw := io.Pipe()
	go pw.Write([]byte(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}` + "\n"))
	t.Cleanup(func() { pw.Close() })
	if err := srv.ServeStdio(context.Background(), pr, closedWriter{}); err != nil {
		t.Errorf("ServeStdio: %v", err)
	}
}

// TestStdioIDsAndMalformedLines: every request is answered under its id
// spelled exactly as the client sent it (the SDK reads numbers as int64:
// 1.0, 1e0 and -0 came back as 1 and 0, 12345678901234567890 as
// -9223372036854775808, and the session hung at end of input waiting for
// the ids it had read); a line that is not JSON gets -32700 and one that is
// not a JSON-RPC message -32600, both with id null, and the session goes
// on to answer the next request.
func TestStdioIDsAndMalformedLines(t *testing.T) {
	f := newFixture(t)
	srv := New(f.load(t, testdata+"packages/cgreet"), Options{Logger: f.log})
	t.Cleanup(func() { srv.Close(context.Background()) })
	const meta = `"params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}`
	ids := []string{`1.0`, `1e0`, `-0`, `12345678901234567890`, `1`, `"1"`, `"x y"`, `0.5`, `-7`}
	type want struct {
		id   string // the raw id of the answer
		code int    // 0 for a result
	}
	var in strings.Builder
	var wants []want
	for _, id := range ids {
		fmt.Fprintf(&in, `{"jsonrpc":"2.0","id":%s,"method":"tools/list",%s}`+"\n", id, meta)
		wants = append(wants, want{id, 0})
	}
	for _, bad := range []struct {
		line string
		want
	}{
		{`{"jsonrpc":"2.0","id":`, want{"null", -32700}},
		{`not json at all`, want{"null", -32700}},
		{`"a string"`, want{"null", -32600}},
		{`[{"jsonrpc":"2.0","id":70,"method":"ping"}]`, want{"null", -32600}},
		{`{"jsonrpc":"2.0","id":{"a":1},"method":"ping"}`, want{"null", -32600}},
		// An invalid request whose id can be read is answered under it.
		{`{"jsonrpc":"1.0","id":71,"method":"ping"}`, want{"71", -32600}},
		{`{"jsonrpc":"2.0","id":7.20,"method":7}`, want{"7.20", -32600}},
		{`{"jsonrpc":"2.0"}`, want{"null", -32600}},
	} {
		in.WriteString(bad.line + "\n")
		wants = append(wants, bad.want)
		// The session goes on: the next request is answered.
		id := fmt.Sprintf(`"after %d"`, len(wants))
		fmt.Fprintf(&in, `{"jsonrpc":"2.0","id":%s,"method":"tools/list",%s}`+"\n", id, meta)
		wants = append(wants, want{id, 0})
	}
	var out bytes.Buffer
	done := make(chan error, 1)
	go func() { done <- srv.ServeStdio(context.Background(), strings.NewReader(in.String()), &out) }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(time.Minute):
		t.Fatal("ServeStdio did not end after the end of input: a request was never answered")
	}
	var got []want
	for _, line := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		var m struct {
			ID    json.RawMessage `json:"id"`
			Error *struct {
				Code int `json:"code"`
			} `json:"error"`
		}
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("stdout line %q: %v", line, err)
		}
		w := want{string(m.ID), 0}
		if m.Error != nil {
			w.code = m.Error.Code
		}
		got = append(got, w)
	}
	// Answers come as they are ready, not in the order asked.
	order := func(a, b want) int { return strings.Compare(fmt.Sprint(a), fmt.Sprint(b)) }
	slices.SortFunc(got, order)
	slices.SortFunc(wants, order)
	if !slices.Equal(got, wants) {
		t.Errorf("answers (id, code):\n got %v\nwant %v\nstdout:\n%s", got, wants, out.String())
	}
}

// TestCallQueueBound: calls beyond MaxRunning wait, at most MaxQueued of
// them (4,000 concurrent calls queued without bound before, 824 MB); one
// more is refused at once with a JSON-RPC error saying the server is busy,
// and a waiting call runs once a place frees.
func TestCallQueueBound(t *testing.T) {
	f := newFixture(t)
	lim := limits.Default()
	lim.CallTimeout = time.Hour
	srv := New(f.load(t, misbehavePackage(t)), Options{Logger: f.log, MaxRunning: 1, MaxQueued: 1, Call: runtime.CallRequest{Limits: &lim}})
	t.Cleanup(func() { srv.Close(context.Background()) })
	cs, _ := connectStdio(t, srv, "2026-07-28", nil)
	sleeping := func() int {
		return f.logs.FilterMessage("module stderr").FilterField(zap.String("tool", "timeout_sleep")).Len()
	}
	queued := func() int {
		srv.mu.Lock()
		defer srv.mu.Unlock()
		return srv.queued
	}
	runCtx, cancelRun := context.WithCancel(context.Background())
	defer cancelRun()
	ran := make(chan error, 1)
	go func() {
		_, err := cs.CallTool(runCtx, &mcp.CallToolParams{Name: "timeout_sleep", Arguments: map[string]any{}})
		ran <- err
	}()
	waitFor(t, "the first call to run", func() bool { return sleeping() == 1 })
	waiting := make(chan *mcp.CallToolResult, 1)
	go func() {
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "ok", Arguments: map[string]any{}})
		if err != nil {
			t.Errorf("the queued call: %v", err)
		}
		waiting <- res
	}()
	waitFor(t, "the second call to wait", func() bool { return queued() == 1 })
	_, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "ok", Arguments: map[string]any{}})
	var werr *jsonrpc.Error
	if !errors.As(err, &werr) || werr.Code != codeServerBusy || !strings.Contains(werr.Message, "server busy") {
		t.Errorf("a call beyond the queue: %v, want JSON-RPC error %d (server busy)", err, codeServerBusy)
	}
	cancelRun()
	<-ran
	select {
	case res := <-waiting:
		if res == nil || res.IsError {
			t.Errorf("the queued call: %+v", res)
		}
	case <-time.After(time.Minute):
		t.Fatal("the queued call never ran")
	}
}

// TestCacheFieldsCarryThePackages: ttlMs and cacheScope of server/discover
// and tools/list are what the package said (3600000, not the SDK's 0), for
// session and stateless clients alike.
func TestCacheFieldsCarryThePackages(t *testing.T) {
	f := newFixture(t)
	srv := New(f.load(t, testguest.Go(t, testdata+"mcpconformance")), Options{Logger: f.log})
	t.Cleanup(func() { srv.Close(context.Background()) })
	ts := httptest.NewServer(srv.Handler())
	t.Cleanup(ts.Close)
	for _, version := range []string{"2026-07-28", "2025-11-25"} {
		t.Run(version, func(t *testing.T) {
			cs, _ := connectStdio(t, srv, version, nil)
			res, err := cs.ListTools(context.Background(), nil)
			if err != nil {
				t.Fatal(err)
			}
			if res.TTLMs != 3600000 || res.CacheScope != "public" {
				t.Errorf("tools/list ttlMs %d cacheScope %q, the package said 3600000 public", res.TTLMs, res.CacheScope)
			}
			if res.Tools[0].Name != "test_simple_text" || res.Tools[len(res.Tools)-1].Name != "json_schema_2020_12_tool" {
				t.Errorf("tools not in the package's order: first %s, last %s", res.Tools[0].Name, res.Tools[len(res.Tools)-1].Name)
			}
		})
	}
}

// TestStdioStopDropsAnswersInFlight: the SDK answers a request whose
// context ended with the session's stop ("context canceled", code 0, not
// a JSON-RPC code) whenever its handler returns, possibly after the
// stop; that answer never reaches the client, while one written before
// the stop does. (CI once caught the late answer through the command.)
func TestStdioStopDropsAnswersInFlight(t *testing.T) {
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	var out bytes.Buffer
	c := newStdioConn(ctx, strings.NewReader(""), &out)
	w := &stdioWriter{c}
	for _, line := range []string{
		`{"jsonrpc":"2.0","id":"a","method":"tools/call","params":{}}`,
		`{"jsonrpc":"2.0","id":"b","method":"tools/call","params":{}}`,
	} {
		if c.inbound([]byte(line)) == nil {
			t.Fatalf("refused %s: %s", line, out.String())
		}
	}
	if _, err := w.Write([]byte(`{"jsonrpc":"2.0","id":0,"result":{}}` + "\n")); err != nil {
		t.Fatal(err)
	}
	if want := `{"jsonrpc":"2.0","id":"a","result":{}}` + "\n"; out.String() != want {
		t.Fatalf("before the stop: wrote %q, want %q", out.String(), want)
	}
	stop()
	if _, err := w.Write([]byte(`{"jsonrpc":"2.0","id":1,"error":{"code":0,"message":"context canceled"}}` + "\n")); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(out.String(), `"b"`) || strings.Contains(out.String(), "context canceled") {
		t.Errorf("the answer of a request cancelled by the stop reached the client: %q", out.String())
	}
	// A message of the server's own (no id to map) still passes.
	note := `{"jsonrpc":"2.0","method":"notifications/message","params":{}}` + "\n"
	w.Write([]byte(note))
	if !strings.HasSuffix(out.String(), note) {
		t.Errorf("a notification after the stop was dropped: %q", out.String())
	}
}
