package runtime

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/subako/subako-runner/internal/devtools/testguest"
	"github.com/subako/subako-runner/limits"
	"github.com/subako/subako-runner/protocol"
)

const guests = "../testdata/guests/"

// compiledCache is shared by every runtime of this test binary, so each
// guest is compiled once per run (compiling is most of a test's cost,
// especially under -race).
var compiledCache string

func TestMain(m *testing.M) {
	// The tests of worker mode start this binary as their workers.
	ServeWorker()
	os.Exit(testguest.RunWithCompilationCache(m, &compiledCache))
}

// heavy skips a test in -short mode: make test's -race pass runs the
// session and concurrency logic, not every large or slow guest again.
func heavy(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("large or slow guest; runs without -short")
	}
}

// newRuntime returns a runtime closed at the end of the test.
func newRuntime(t testing.TB, lim *limits.Limits) *Runtime {
	t.Helper()
	rt, err := New(context.Background(), Config{Limits: lim, CompilationCacheDir: compiledCache})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Close(context.Background()) })
	return rt
}

// makePackage assembles a package directory from a module and assets.
func makePackage(t testing.TB, module string, assets map[string]string) string {
	return testguest.Package(t, module, "test", assets)
}

func load(t testing.TB, rt *Runtime, dir string) *Package {
	t.Helper()
	pkg, err := rt.Load(context.Background(), dir)
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	t.Cleanup(func() { pkg.Close(context.Background()) })
	return pkg
}

func call(t testing.TB, pkg *Package, req CallRequest) *Result {
	t.Helper()
	res, err := pkg.Call(context.Background(), req)
	if err != nil {
		t.Fatalf("Call(%s): %v", req.Tool, err)
	}
	t.Cleanup(func() { res.Release() })
	return res
}

func viewText(res *Result) string {
	var parts []string
	for _, v := range res.View {
		parts = append(parts, v.Type+":"+v.Text)
	}
	return strings.Join(parts, "\n")
}

func TestGreetPackageDiscoversAndCalls(t *testing.T) {
	t.Parallel()
	rt := newRuntime(t, nil)
	pkg := load(t, rt, makePackage(t, testguest.Go(t, guests+"greet"), nil))
	if _, ok := pkg.Tool("greet"); !ok {
		t.Fatalf("greet not discovered; tools: %v", pkg.toolNames())
	}
	if pkg.Discovery().Pages < 1 || pkg.Discovery().Duration <= 0 {
		t.Errorf("discovery stats not recorded: %+v", pkg.Discovery())
	}
	res := call(t, pkg, CallRequest{Tool: "greet", Arguments: json.RawMessage(`{"name":"Ada"}`)})
	if res.Outcome != OutcomeOK {
		t.Fatalf("outcome %s, crash %+v", res.Outcome, res.Crash)
	}
	if !strings.Contains(viewText(res), "Hello, Ada!") {
		t.Errorf("view %q lacks the greeting", viewText(res))
	}
	var sc struct{ Message string }
	if err := json.Unmarshal(res.Parsed.StructuredContent, &sc); err != nil || sc.Message != "Hello, Ada!" {
		t.Errorf("structuredContent %s", res.Parsed.StructuredContent)
	}
	if res.Stats.MemoryBytes <= 0 || res.Stats.Duration <= 0 {
		t.Errorf("stats not filled: %+v", res.Stats)
	}

	res = call(t, pkg, CallRequest{Tool: "greet", Arguments: json.RawMessage(`{"name":""}`)})
	if res.Outcome != OutcomeToolError || !strings.Contains(viewText(res), "name must not be empty") {
		t.Fatalf("empty name: outcome %s view %q", res.Outcome, viewText(res))
	}
}

func TestCallRefusedBeforeTheModuleRuns(t *testing.T) {
	t.Parallel()
	rt := newRuntime(t, nil)
	pkg := load(t, rt, makePackage(t, testguest.Go(t, guests+"greet"), nil))
	tests := []struct {
		name string
		req  CallRequest
		code string
	}{
		{"unknown tool", CallRequest{Tool: "no_such_tool"}, CodeUnknownTool},
		{"arguments an array", CallRequest{Tool: "greet", Arguments: json.RawMessage(`[1]`)}, CodeBadArguments},
		{"arguments not JSON", CallRequest{Tool: "greet", Arguments: json.RawMessage(`{`)}, CodeBadArguments},
		{"arguments null", CallRequest{Tool: "greet", Arguments: json.RawMessage(`null`)}, CodeBadArguments},
		{"arguments two objects", CallRequest{Tool: "greet", Arguments: json.RawMessage(`{"a":1} {"b":2}`)}, CodeBadArguments},
		{"arguments an object, then garbage", CallRequest{Tool: "greet", Arguments: json.RawMessage(`{"a":1}x`)}, CodeBadArguments},
		{"arguments a string", CallRequest{Tool: "greet", Arguments: json.RawMessage(`"{}"`)}, CodeBadArguments},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := pkg.Call(context.Background(), tt.req)
			var ce *CallError
			if !errors.As(err, &ce) || ce.Code != tt.code {
				t.Fatalf("got %v, %v; want CallError %s", res, err, tt.code)
			}
		})
	}
}

func TestSDKPackageDiscoversAndCalls(t *testing.T) {
	t.Parallel()
	heavy(t)
	rt := newRuntime(t, nil)
	pkg := load(t, rt, makePackage(t, testguest.Go(t, guests+"sdkgreet"), nil))
	res := call(t, pkg, CallRequest{Tool: "greet", Arguments: json.RawMessage(`{"name":"Ada"}`)})
	if res.Outcome != OutcomeOK || !strings.Contains(viewText(res)+string(res.Parsed.StructuredContent), "Hello, Ada!") {
		t.Fatalf("outcome %s crash %+v view %q", res.Outcome, res.Crash, viewText(res))
	}
}

func TestConcurrentCallsOnOnePackage(t *testing.T) {
	t.Parallel()
	rt := newRuntime(t, nil)
	// 100 calls of the C package, and 10 of the Go one (whose runtime start
	// is heavier, especially under -race), all at once on one package each.
	c := load(t, rt, "../testdata/packages/cgreet")
	goPkg := load(t, rt, makePackage(t, testguest.Go(t, guests+"greet"), nil))
	var wg sync.WaitGroup
	errs := make(chan string, 110)
	for i := 0; i < 110; i++ {
		pkg := c
		if i%11 == 10 {
			pkg = goPkg
		}
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			name := fmt.Sprintf("caller-%d", i)
			args, _ := json.Marshal(map[string]string{"name": name})
			res, err := pkg.Call(context.Background(), CallRequest{Tool: "greet", Arguments: args})
			if err != nil {
				errs <- err.Error()
				return
			}
			defer res.Release()
			if res.Outcome != OutcomeOK || !strings.Contains(viewText(res), "Hello, "+name+"!") {
				errs <- fmt.Sprintf("%s: %s %+v %s", pkg.Name(), res.Outcome, res.Crash, viewText(res))
			}
		}(i)
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
}

// TestCrashRules runs every call mode of the misbehave guest and checks the
// outcome and crash code of docs/abi.md §6.
func TestCrashRules(t *testing.T) {
	t.Parallel()
	rt := newRuntime(t, nil)
	short := limits.Default()
	short.CallTimeout = 2 * time.Second
	pkg := load(t, rt, makePackage(t, testguest.Go(t, guests+"misbehave"), nil))
	tests := []struct {
		tool  string
		crash string // "" = success
	}{
		{"ok", ""},
		{"notifications", ""},
		{"partial_line_exit", ""},
		{"slow_exit", ""},
		{"trailing_garbage", CrashNotJSONRPC},
		{"jsonrpc_error", CrashJSONRPCError},
		{"result_not_complete", CrashResultNotComplete},
		{"not_jsonrpc", CrashNotJSONRPC},
		{"blank_line", CrashNotJSONRPC},
		{"json_not_jsonrpc", CrashNotJSONRPC},
		{"wrong_jsonrpc_version", CrashNotJSONRPC},
		{"non_utf8", CrashNotJSONRPC},
		{"unexpected_id", CrashUnexpectedID},
		{"duplicate_answer", CrashUnexpectedID},
		{"id_retyped", CrashUnexpectedID},
		{"server_request", CrashServerRequest},
		{"exited_before_response", CrashExitedBeforeResponse},
		{"exited_before_response_code", CrashExitedBeforeResponse},
		{"panic", CrashExitedBeforeResponse},
		{"panic_after_answer", CrashExitCode},
		{"exit_code", CrashExitCode},
		{"exit_code_now", CrashExitCode},
		{"exit_timeout", CrashExitTimeout},
		{"exit_timeout_sleep", CrashExitTimeout},
		{"exit_timeout_read", CrashExitTimeout},
		{"timeout", CrashTimeout},
		{"timeout_sleep", CrashTimeout},
		{"timeout_stdin", CrashTimeout},
		{"invalid_result", CrashInvalidResult},
		{"invalid_result_content_string", CrashInvalidResult},
		{"invalid_result_null", CrashInvalidResult},
		{"invalid_result_not_object", CrashInvalidResult},
		{"output_too_large", CrashOutputTooLarge},
		{"output_too_large_total", CrashOutputTooLarge},
		{"output_too_large_partial", CrashOutputTooLarge},
		{"stderr_crash", CrashExitCode},
		{"stderr_no_answer", CrashExitedBeforeResponse},
	}
	seen := map[string]bool{}
	for _, tt := range tests {
		// Under -short (the -race pass) one module per outcome exercises
		// the session's concurrency; the variants run in the full pass.
		variant := seen[tt.crash]
		seen[tt.crash] = true
		t.Run(tt.tool, func(t *testing.T) {
			t.Parallel()
			if variant || strings.HasPrefix(tt.tool, "output_too_large") {
				heavy(t) // a variant, or tens of MiB through fd_write
			}
			req := CallRequest{Tool: tt.tool}
			if tt.crash == CrashTimeout {
				req.Limits = &short
			}
			res := call(t, pkg, req)
			if tt.crash == "" {
				if res.Outcome != OutcomeOK {
					t.Fatalf("outcome %s, crash %+v", res.Outcome, res.Crash)
				}
				return
			}
			if res.Outcome != OutcomeCrashed || res.Crash == nil || res.Crash.Reason != tt.crash {
				t.Fatalf("outcome %s crash %+v; want crash %s", res.Outcome, res.Crash, tt.crash)
			}
			if res.Crash.Message == "" {
				t.Error("crash without a message")
			}
		})
	}
}

// The stderr tail of a crash is the last 4 KiB the module wrote, cut
// forward to a UTF-8 boundary: the guest writes 12,233 bytes whose last
// 4,096 begin inside a three-byte "€".
func TestCrashCarriesTheStderrTail(t *testing.T) {
	t.Parallel()
	rt := newRuntime(t, nil)
	pkg := load(t, rt, makePackage(t, testguest.Go(t, guests+"misbehave"), nil))
	want := strings.Repeat("€", 1358) + "\nSTDERR-TAIL-MARKER\n"
	for _, tool := range []string{"stderr_crash", "stderr_no_answer"} {
		res := call(t, pkg, CallRequest{Tool: tool})
		if res.Crash == nil {
			t.Fatalf("%s: no crash", tool)
		}
		if res.Crash.Stderr != want {
			tail := res.Crash.Stderr
			t.Errorf("%s: stderr tail is %d bytes ending %q; want the %d bytes of the pattern's end", tool, len(tail), tail[max(0, len(tail)-40):], len(want))
		}
	}
}

// An answer followed by a module that never exits is exit_timeout, never
// before the second after stdin closed that the module is given. (How soon
// after that second the host gets it stopped is a timing, for benchmarks:
// a loaded machine decides it, not the host.)
func TestExitTimeoutIsNotBeforeItsSecond(t *testing.T) {
	t.Parallel()
	rt := newRuntime(t, nil)
	pkg := load(t, rt, makePackage(t, testguest.Go(t, guests+"misbehave"), nil))
	res := call(t, pkg, CallRequest{Tool: "exit_timeout"})
	if res.Crash == nil || res.Crash.Reason != CrashExitTimeout {
		t.Fatalf("crash %+v, want exit_timeout", res.Crash)
	}
	if len(res.Result) == 0 {
		t.Error("the answer given before the exit timeout is not kept in Result")
	}
	meta := `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}`
	for _, tool := range []string{"exit_timeout", "exit_timeout_sleep", "exit_timeout_read"} {
		pr, err := pkg.Probe(context.Background(), Probe{Messages: []json.RawMessage{
			json.RawMessage(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"` + tool + `","arguments":{},` + meta + `}}`),
		}}, CallRequest{})
		if err != nil {
			t.Fatal(err)
		}
		if pr.Crash == nil || pr.Crash.Reason != CrashExitTimeout {
			t.Fatalf("%s: crash %+v", tool, pr.Crash)
		}
		if pr.ExitAfterClose < time.Second {
			t.Errorf("%s: ended %v after stdin closed, before the 1 s it is given", tool, pr.ExitAfterClose)
		}
	}
}

// discoveryMode loads the misbehave guest with a /package/mode file.
func discoveryMode(t *testing.T, rt *Runtime, mode string) (*Package, error) {
	t.Helper()
	dir := makePackage(t, testguest.Go(t, guests+"misbehave"), map[string]string{"mode": mode})
	pkg, err := rt.Load(context.Background(), dir)
	if pkg != nil {
		t.Cleanup(func() { pkg.Close(context.Background()) })
	}
	return pkg, err
}

func TestDiscoveryRules(t *testing.T) {
	t.Parallel()
	rt := newRuntime(t, nil)
	quick := limits.Default()
	quick.DiscoveryTimeout = 4 * time.Second
	rtQuick := newRuntime(t, &quick) // for the slow discovery
	tests := []struct {
		mode  string
		code  string // "" = accepted
		crash string // crash reason inside discovery_failed
		tools int    // tools expected when accepted (0 = don't check)
	}{
		{"discover_unsupported", CodeDiscoverUnsupported, "", 0},
		{"discover_no_tools_capability", CodeDiscoverUnsupported, "", 0},
		{"discover_tools_not_object", CodeDiscoverUnsupported, "", 0},
		{"discover_minimal", "", "", 0},
		{"invalid_tool_name", CodeInvalidTool, "", 0},
		{"invalid_tool_name_empty", CodeInvalidTool, "", 0},
		{"invalid_tool_name_long", CodeInvalidTool, "", 0},
		{"long_tool_names", "", "", 0},
		{"invalid_tool_no_schema", CodeInvalidTool, "", 0},
		{"invalid_tool_schema_not_object", CodeInvalidTool, "", 0},
		{"invalid_tool_schema_array", CodeInvalidTool, "", 0},
		{"invalid_tool_schema_remote_ref", CodeInvalidTool, "", 0},
		{"invalid_tool_schema_bad", CodeInvalidTool, "", 0},
		{"invalid_tool_output_schema", CodeInvalidTool, "", 0},
		{"invalid_tool_output_remote_ref", CodeInvalidTool, "", 0},
		{"invalid_tool_description", CodeInvalidTool, "", 0},
		{"invalid_tool_title", CodeInvalidTool, "", 0},
		{"schema_local_ref", "", "", 0},
		{"schema_draft7", "", "", 0},
		{"duplicate_tool", CodeDuplicateTool, "", 0},
		{"duplicate_tool_same_page", CodeDuplicateTool, "", 0},
		{"no_tools", CodeNoTools, "", 0},
		{"too_many_pages", CodeTooManyPages, "", 0},
		{"sixteen_pages", "", "", 0},
		{"empty_cursor", "", "", 2},
		{"cursor_echo", "", "", 0},
		{"too_many_tools", CodeInvalidTool, "", 0},
		{"max_tools", "", "", 1024},
		{"slow_discovery", CodeDiscoveryFailed, CrashTimeout, 0},
		{"tools/list:exit_timeout", CodeDiscoveryFailed, CrashExitTimeout, 0},
		{"server/discover:jsonrpc_error", CodeDiscoveryFailed, CrashJSONRPCError, 0},
		{"tools/list:not_jsonrpc", CodeDiscoveryFailed, CrashNotJSONRPC, 0},
		{"tools/list:exited_before_response", CodeDiscoveryFailed, CrashExitedBeforeResponse, 0},
	}
	seen := map[string]bool{}
	for _, tt := range tests {
		variant := seen[tt.code+tt.crash]
		seen[tt.code+tt.crash] = true
		t.Run(strings.ReplaceAll(tt.mode, "/", "_"), func(t *testing.T) {
			t.Parallel()
			if variant {
				heavy(t) // one module per outcome under -short
			}
			rt := rt
			switch tt.mode {
			case "slow_discovery":
				heavy(t)
				rt = rtQuick
			case "max_tools", "too_many_tools", "sixteen_pages":
				heavy(t)
			}
			pkg, err := discoveryMode(t, rt, tt.mode)
			if tt.code == "" {
				if err != nil {
					t.Fatalf("want accepted, got %v", err)
				}
				if tt.tools > 0 && len(pkg.Tools()) != tt.tools {
					t.Fatalf("%d tools, want %d", len(pkg.Tools()), tt.tools)
				}
				return
			}
			var rej *RejectedError
			if !errors.As(err, &rej) || !rej.Has(tt.code) {
				t.Fatalf("got %v; want rejection %s", err, tt.code)
			}
			for _, r := range rej.Rejections {
				if r.Message == "" {
					t.Errorf("rejection %s without a message", r.Code)
				}
			}
			if tt.crash != "" && (rej.Crash == nil || rej.Crash.Reason != tt.crash) {
				t.Fatalf("crash %+v, want %s", rej.Crash, tt.crash)
			}
		})
	}
}

// Discovery mounts only /package: the module cannot see a volume.
func TestDiscoveryMountsOnlyThePackage(t *testing.T) {
	t.Parallel()
	rt := newRuntime(t, nil)
	pkg := load(t, rt, makePackage(t, testguest.Go(t, guests+"greet"), map[string]string{"assets/greeting.txt": "Ahoy"}))
	res := call(t, pkg, CallRequest{Tool: "greet", Arguments: json.RawMessage(`{"name":"Ada"}`)})
	if !strings.Contains(viewText(res), "Ahoy, Ada!") {
		t.Fatalf("the asset under /package was not read: %q", viewText(res))
	}
}

func TestModelView(t *testing.T) {
	t.Parallel()
	rt := newRuntime(t, nil)
	pkg := load(t, rt, makePackage(t, testguest.Go(t, guests+"greet"), nil))
	res := call(t, pkg, CallRequest{Tool: "media"})
	if res.Outcome != OutcomeOK {
		t.Fatalf("outcome %s crash %+v", res.Outcome, res.Crash)
	}
	var types []string
	for _, v := range res.View {
		types = append(types, v.Type)
	}
	if got := strings.Join(types, ","); got != "text,image,image,file,link,note" {
		t.Fatalf("view types %s, want text,image,image,file,link,note", got)
	}
	inline, file := res.View[1], res.View[2]
	if inline.Source != "inline" || inline.MimeType != "image/png" || len(inline.Data) == 0 || inline.Bytes != int64(len(inline.Data)) {
		t.Errorf("inline image: %+v", inline)
	}
	if file.Source != "volume:///tmp/chart%201.png" || !strings.HasPrefix(file.HostPath, res.TmpDir) || !strings.HasSuffix(file.HostPath, "chart 1.png") {
		t.Errorf("volume image: %+v (tmp %s)", file, res.TmpDir)
	}
	if _, err := os.Stat(file.HostPath); err != nil {
		t.Errorf("the linked file is not readable before Release: %v", err)
	}
	if !strings.Contains(res.View[4].Text, "https://example.com/report.pdf") {
		t.Errorf("link: %+v", res.View[4])
	}
	tmp := res.TmpDir
	res.Release()
	rt.volumes.Flush() // the removal runs off the caller's path
	if _, err := os.Stat(tmp); !os.IsNotExist(err) {
		t.Errorf("Release left /volume/tmp at %s", tmp)
	}

	edge := call(t, pkg, CallRequest{Tool: "media_edge"})
	for _, v := range edge.View {
		if v.URI == "volume:///tmp/fake.png" {
			// Not an image by its bytes, whatever its name: a file reference.
			if v.Type != "file" {
				t.Errorf("fake.png: %+v, want a file item", v)
			}
			continue
		}
		if v.Type != "note" {
			t.Errorf("media_edge: %s item %+v, want only notes", v.Type, v)
		}
		if strings.Contains(v.Text, edge.TmpDir) {
			t.Errorf("a note shows the model a host path: %q", v.Text)
		}
	}
	if len(edge.View) != 11 {
		t.Errorf("media_edge: %d view items, want 11", len(edge.View))
	}
}

func TestCPackageAndRealTrap(t *testing.T) {
	t.Parallel()
	rt := newRuntime(t, nil)
	pkg := load(t, rt, "../testdata/packages/cgreet")
	res := call(t, pkg, CallRequest{Tool: "greet", Arguments: json.RawMessage(`{"name":"Ada"}`)})
	if res.Outcome != OutcomeOK || !strings.Contains(viewText(res), "Hello, Ada!") {
		t.Fatalf("C greet: outcome %s crash %+v view %q", res.Outcome, res.Crash, viewText(res))
	}
	res = call(t, pkg, CallRequest{Tool: "trap"})
	if res.Crash == nil || res.Crash.Reason != CrashTrap {
		t.Fatalf("C trap: %+v", res.Crash)
	}
}

func TestTrapDuringDiscoveryCarriesStderr(t *testing.T) {
	t.Parallel()
	rt := newRuntime(t, nil)
	_, err := rt.Load(context.Background(), "../testdata/guests/wat/trap.wasm")
	var rej *RejectedError
	if !errors.As(err, &rej) || !rej.Has(CodeDiscoveryFailed) || rej.Crash == nil || rej.Crash.Reason != CrashTrap {
		t.Fatalf("got %v; want discovery_failed with a trap", err)
	}
	if rej.Crash.Stderr == "" {
		t.Error("the trap's crash report has no stderr tail")
	}
}

func TestOutOfMemory(t *testing.T) {
	t.Parallel()
	lim := limits.Default()
	lim.Memory = 64 * limits.MiB
	rt := newRuntime(t, &lim)
	pkg := load(t, rt, makePackage(t, testguest.Go(t, guests+"misbehave"), nil))
	var wg sync.WaitGroup
	wg.Add(1)
	var neighbour *Result
	go func() { // a concurrent call is not disturbed
		defer wg.Done()
		neighbour, _ = pkg.Call(context.Background(), CallRequest{Tool: "ok"})
	}()
	res := call(t, pkg, CallRequest{Tool: "oom"})
	wg.Wait()
	if res.Crash == nil || res.Crash.Reason != CrashOutOfMemory {
		t.Fatalf("crash %+v, want out_of_memory", res.Crash)
	}
	if res.Stats.MemoryBytes > lim.Memory {
		t.Errorf("peak memory %d over the limit %d", res.Stats.MemoryBytes, lim.Memory)
	}
	if neighbour == nil || neighbour.Outcome != OutcomeOK {
		t.Fatalf("the concurrent call was disturbed: %+v", neighbour)
	}
	neighbour.Release()
}

// The example packages of every toolchain discover and call the same way.
func TestToolchainPackages(t *testing.T) {
	t.Parallel()
	rt := newRuntime(t, nil)
	for _, dir := range []string{"cgreet", "rustgreet", "asgreet"} {
		t.Run(dir, func(t *testing.T) {
			pkg := load(t, rt, "../testdata/packages/"+dir)
			res := call(t, pkg, CallRequest{Tool: "greet", Arguments: json.RawMessage(`{"name":"Ada"}`)})
			if res.Outcome != OutcomeOK || !strings.Contains(viewText(res), "Hello, Ada!") {
				t.Fatalf("outcome %s crash %+v view %q", res.Outcome, res.Crash, viewText(res))
			}
			res = call(t, pkg, CallRequest{Tool: "greet", Arguments: json.RawMessage(`{"name":""}`)})
			if res.Outcome != OutcomeToolError {
				t.Fatalf("empty name: outcome %s crash %+v", res.Outcome, res.Crash)
			}
		})
	}
}

// A call may run under a lower memory limit than the upload was checked
// with; an initial memory over it is out_of_memory, not a host panic, for
// a package loaded and for one opened from its artifact alike.
func TestInitialMemoryOverTheCallLimit(t *testing.T) {
	t.Parallel()
	rt := newRuntime(t, nil)
	dir := makePackage(t, testguest.Go(t, guests+"greet"), nil)
	loaded := load(t, rt, dir)
	opened := reopen(t, rt, loaded, dir)
	for name, pkg := range map[string]*Package{"loaded": loaded, "opened": opened} {
		lim := limits.Default()
		lim.Memory = limits.WasmPageSize
		res := call(t, pkg, CallRequest{Tool: "greet", Arguments: json.RawMessage(`{"name":"Ada"}`), Limits: &lim})
		if res.Crash == nil || res.Crash.Reason != CrashOutOfMemory || !strings.Contains(res.Crash.Message, "initial memory") {
			t.Errorf("%s: crash %+v, want out_of_memory for the initial memory", name, res.Crash)
		}
		if res := call(t, pkg, CallRequest{Tool: "greet", Arguments: json.RawMessage(`{"name":"Ada"}`)}); res.Outcome != OutcomeOK {
			t.Errorf("%s: under the default limit: %s %+v", name, res.Outcome, res.Crash)
		}
	}
}

// The initial memory check is what keeps wazero from being handed a
// memory it cannot have; without it (a Checked that lost its figure), the
// instance still ends as out_of_memory, neither hanging the call nor
// panicking the host.
func TestRefusedInitialMemoryIsOutOfMemoryWithoutTheCheck(t *testing.T) {
	t.Parallel()
	rt := newRuntime(t, nil)
	pkg := load(t, rt, makePackage(t, testguest.Go(t, guests+"greet"), nil))
	pkg.checked.initialMemory = 0 // as if the module needed none
	lim := limits.Default()
	lim.Memory = limits.WasmPageSize
	res := call(t, pkg, CallRequest{Tool: "greet", Arguments: json.RawMessage(`{"name":"Ada"}`), Limits: &lim})
	if res.Crash == nil || res.Crash.Reason != CrashOutOfMemory {
		t.Fatalf("crash %+v, want out_of_memory", res.Crash)
	}
	if res := call(t, pkg, CallRequest{Tool: "greet", Arguments: json.RawMessage(`{"name":"Ada"}`)}); res.Outcome != OutcomeOK {
		t.Fatalf("the next call: %s %+v", res.Outcome, res.Crash)
	}
}

func TestProbe(t *testing.T) {
	t.Parallel()
	rt := newRuntime(t, nil)
	pkg := load(t, rt, makePackage(t, testguest.Go(t, guests+"greet"), nil))
	meta := `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}`
	big := "123456789012345678901234567890"
	res, err := pkg.Probe(context.Background(), Probe{Messages: []json.RawMessage{
		json.RawMessage(`{"jsonrpc":"2.0","method":"notifications/initialized","params":{` + meta + `}}`),
		json.RawMessage(`{"jsonrpc":"2.0","id":` + big + `,"method":"tools/call","params":{"name":"no_such_tool","arguments":{},` + meta + `}}`),
		json.RawMessage(`{"jsonrpc":"2.0","id":"s-1","method":"tools/call","params":{"name":"greet","arguments":{"name":"Ada"},` + meta + `}}`),
	}}, CallRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Crash != nil {
		t.Fatalf("crash %+v", res.Crash)
	}
	if len(res.Responses) != 2 || res.Responses[0].ID.String() != big || res.Responses[1].ID.String() != `"s-1"` {
		t.Fatalf("responses %+v", res.Responses)
	}
	if res.Responses[0].Kind != protocol.KindErrorResponse && res.Responses[0].Kind != protocol.KindResponse {
		t.Fatalf("unknown tool answer kind %v", res.Responses[0].Kind)
	}
	if res.ExitAfterClose <= 0 {
		t.Errorf("exit after close %v: the module exits after stdin closes, so it must be measured", res.ExitAfterClose)
	}

	// EOF with no request at all: a clean exit.
	res, err = pkg.Probe(context.Background(), Probe{Discovery: true}, CallRequest{})
	if err != nil || res.Crash != nil || len(res.Responses) != 0 {
		t.Fatalf("empty probe: %+v %v", res, err)
	}
	if _, err := pkg.Probe(context.Background(), Probe{Messages: []json.RawMessage{json.RawMessage(`{"jsonrpc":"2.0","id":1,"result":{}}`)}}, CallRequest{}); err == nil {
		t.Fatal("a response as a probe message must be refused")
	}
}

// A runaway guest ends as out_of_fuel when the budget is smaller than what
// it can burn before the deadline, and as timeout otherwise; fuel is
// reported either way.
func TestFuelAndDeadline(t *testing.T) {
	t.Parallel()
	rt := newRuntime(t, nil)
	pkg := load(t, rt, makePackage(t, testguest.Go(t, guests+"misbehave"), nil))

	small := limits.Default()
	small.Fuel = 50_000_000
	res := call(t, pkg, CallRequest{Tool: "timeout", Limits: &small})
	if res.Crash == nil || res.Crash.Reason != CrashOutOfFuel || res.Stats.FuelUsed != small.Fuel {
		t.Fatalf("small budget: crash %+v fuel %d", res.Crash, res.Stats.FuelUsed)
	}
	if !strings.Contains(res.Crash.Stderr, "tools/call") {
		t.Errorf("out_of_fuel crash without the stderr tail: %q", res.Crash.Stderr)
	}

	// With unlimited fuel only the deadline can stop it (how soon after it
	// is a timing: bench/, not a test on a loaded machine).
	// The guest logs "tools/call" before its loop; on a loaded machine a
	// short deadline may come before it gets there (then nothing is on
	// stderr yet, rightly), so the deadline grows until the guest reached
	// its loop in time.
	quick := limits.Default()
	quick.Fuel = 0
	for _, timeout := range []time.Duration{300 * time.Millisecond, 3 * time.Second, 30 * time.Second} {
		quick.CallTimeout = timeout
		res = call(t, pkg, CallRequest{Tool: "timeout", Limits: &quick})
		if res.Crash == nil || res.Crash.Reason != CrashTimeout {
			t.Fatalf("deadline %v: crash %+v fuel %d", timeout, res.Crash, res.Stats.FuelUsed)
		}
		if strings.Contains(res.Crash.Stderr, "tools/call") {
			break
		}
		if timeout == 30*time.Second {
			t.Errorf("timeout crash without the stderr tail: %q", res.Crash.Stderr)
		}
	}
	if res.Stats.FuelUsed == 0 {
		t.Error("no fuel reported for a busy loop until its deadline")
	}

	ok := call(t, pkg, CallRequest{Tool: "ok"})
	if ok.Outcome != OutcomeOK || ok.Stats.FuelUsed == 0 {
		t.Fatalf("ok call: %s, fuel %d", ok.Outcome, ok.Stats.FuelUsed)
	}
}
