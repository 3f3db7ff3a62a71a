package inspect

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/subako/subako-runner/internal/devtools/testguest"
	"github.com/subako/subako-runner/internal/wasmbin"
	"github.com/subako/subako-runner/internal/wasmbin/wasmtest"
	"github.com/subako/subako-runner/limits"
	"github.com/subako/subako-runner/runtime"
)

const guests = "../../../../testdata/guests/"

var compiledCache string

func TestMain(m *testing.M) {
	runtime.ServeWorker() // a runtime of worker processes started by a test
	os.Exit(testguest.RunWithCompilationCache(m, &compiledCache))
}

func newRuntime(t testing.TB) *runtime.Runtime {
	t.Helper()
	rt, err := runtime.New(context.Background(), runtime.Config{CompilationCacheDir: compiledCache})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Close(context.Background()) })
	return rt
}

// newServer serves the package at dir on a loopback httptest server.
func newServer(t testing.TB, dir string) (*Server, *httptest.Server) {
	t.Helper()
	srv, err := New(context.Background(), Config{Runtime: newRuntime(t), Path: dir, History: 4})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv)
	t.Cleanup(func() {
		hs.Close()
		if err := srv.Close(context.Background()); err != nil {
			t.Error(err)
		}
	})
	return srv, hs
}

func greetPackage(t testing.TB) string {
	return testguest.Package(t, testguest.Go(t, guests+"greet"), "greet", nil)
}

// do sends a request with the token (unless tok is "-") and decodes a JSON
// answer into out when out is not nil.
func do(t testing.TB, hs *httptest.Server, tok, method, path string, body any, out any) *http.Response {
	t.Helper()
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, hs.URL+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	if tok != "-" {
		req.Header.Set(tokenHeader, tok)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := hs.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if out != nil {
		if err := json.Unmarshal(raw, out); err != nil {
			t.Fatalf("%s %s: %d %s: %v", method, path, resp.StatusCode, raw, err)
		}
	}
	return resp
}

func TestPackageReportAccepted(t *testing.T) {
	srv, hs := newServer(t, greetPackage(t))
	var rep packageReport
	if r := do(t, hs, srv.Token(), "GET", "/api/package", nil, &rep); r.StatusCode != 200 {
		t.Fatalf("status %d", r.StatusCode)
	}
	if !rep.Accepted || rep.Name != "greet" || len(rep.ModuleSHA256) != 64 || rep.ModuleBytes == 0 {
		t.Fatalf("report: %+v", rep)
	}
	if len(rep.Tools) == 0 || !strings.Contains(string(rep.Tools[0]), `"greet"`) {
		t.Fatalf("tools: %s", rep.Tools)
	}
	for _, c := range rep.Upload {
		if c.Status != "pass" {
			t.Errorf("upload check %s: %s", c.Code, c.Status)
		}
	}
	if rep.Discovery == nil || rep.Discovery.Pages < 1 {
		t.Fatalf("discovery: %+v", rep.Discovery)
	}
}

func TestPackageReportRejected(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "module.wasm"), []byte("not a module"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "subako-package.json"), []byte(`{"abi":2}`), 0o644); err != nil {
		t.Fatal(err)
	}
	srv, hs := newServer(t, dir)
	var rep packageReport
	do(t, hs, srv.Token(), "GET", "/api/package", nil, &rep)
	if rep.Accepted {
		t.Fatal("a module that is not WebAssembly was accepted")
	}
	status := map[string]string{}
	for _, c := range rep.Upload {
		status[c.Code] = c.Status
		if c.Status == "fail" && len(c.Messages) == 0 {
			t.Errorf("%s failed without a reason", c.Code)
		}
	}
	want := map[string]string{
		runtime.CodeBadManifest: "fail", runtime.CodeNotWasm: "fail",
		runtime.CodeMissingStart: "not_run", runtime.CodeDiscoveryFailed: "not_run",
	}
	for code, st := range want {
		if status[code] != st {
			t.Errorf("%s: %q, want %q (all: %v)", code, status[code], st, status)
		}
	}
	var e map[string]apiError
	if r := do(t, hs, srv.Token(), "POST", "/api/call", map[string]any{"tool": "greet"}, &e); r.StatusCode != http.StatusConflict || e["error"].Code != "rejected" {
		t.Fatalf("call on a refused package: %d %+v", r.StatusCode, e)
	}
}

func TestJudgeUploadStages(t *testing.T) {
	byCode := func(rows []uploadCheck) map[string]string {
		m := map[string]string{}
		for _, r := range rows {
			m[r.Code] = r.Status
		}
		return m
	}
	tests := []struct {
		name string
		rej  []runtime.Rejection
		want map[string]string
	}{
		{"accepted", nil, map[string]string{runtime.CodeUnknownImport: "pass", runtime.CodeNoTools: "pass"}},
		{"bad manifest still checks the module", []runtime.Rejection{{Code: runtime.CodeBadManifest, Message: "m"}},
			map[string]string{runtime.CodeMissingStart: "pass", runtime.CodeNoTools: "not_run"}},
		{"module check failure stops discovery", []runtime.Rejection{{Code: runtime.CodeUnknownImport, Message: "m"}},
			map[string]string{runtime.CodeUnknownImport: "fail", runtime.CodeMissingStart: "pass", runtime.CodeDiscoveryFailed: "not_run"}},
		{"crashed discovery", []runtime.Rejection{{Code: runtime.CodeDiscoveryFailed, Message: "m"}},
			map[string]string{runtime.CodeDiscoveryFailed: "fail", runtime.CodeInvalidTool: "not_run", runtime.CodeMissingMemory: "pass"}},
		{"a code this page does not know", []runtime.Rejection{{Code: "future_check", Message: "m"}},
			map[string]string{"future_check": "fail", runtime.CodeMissingStart: "not_run"}},
		{"too complex to decode", []runtime.Rejection{{Code: runtime.CodeModuleTooComplex, Message: "m"}},
			map[string]string{runtime.CodeModuleTooComplex: "fail", runtime.CodeMissingStart: "not_run", runtime.CodeDiscoveryFailed: "not_run", runtime.CodeNoTools: "not_run"}},
		{"too complex beside another check", []runtime.Rejection{{Code: runtime.CodeModuleTooComplex, Message: "m"}, {Code: runtime.CodeMissingStart, Message: "m"}},
			map[string]string{runtime.CodeModuleTooComplex: "fail", runtime.CodeMissingStart: "fail", runtime.CodeReactor: "pass", runtime.CodeNoTools: "not_run"}},
		{"table too large", []runtime.Rejection{{Code: runtime.CodeTableTooLarge, Message: "m"}},
			map[string]string{runtime.CodeTableTooLarge: "fail", runtime.CodeMissingStart: "pass", runtime.CodeCompileTimeout: "not_run", runtime.CodeDiscoveryFailed: "not_run"}},
		{"compile timeout", []runtime.Rejection{{Code: runtime.CodeCompileTimeout, Message: "m"}},
			map[string]string{runtime.CodeCompileTimeout: "fail", runtime.CodeMissingStart: "pass", runtime.CodeDiscoveryFailed: "not_run", runtime.CodeNoTools: "not_run"}},
		{"too many pages", []runtime.Rejection{{Code: runtime.CodeTooManyPages, Message: "m"}},
			map[string]string{runtime.CodeCompileTimeout: "pass", runtime.CodeDiscoverUnsupported: "not_run", runtime.CodeNoTools: "not_run"}},
		{"duplicate tool", []runtime.Rejection{{Code: runtime.CodeDuplicateTool, Message: "m"}},
			map[string]string{runtime.CodeDiscoveryFailed: "pass", runtime.CodeNoTools: "pass", runtime.CodeDuplicateTool: "fail"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := byCode(judgeUpload(limits.Default(), tt.rej))
			for code, st := range tt.want {
				if got[code] != st {
					t.Errorf("%s: %q, want %q", code, got[code], st)
				}
			}
		})
	}
}

// TestJudgeUploadEveryCode rejects with each code of the runtime's table
// alone: its row fails, and no row of a later stage than the code's says
// passed (module_too_complex, table_too_large and compile_timeout
// included: discovery never ran for any of them). Only bad_manifest lets
// the module checks run.
func TestJudgeUploadEveryCode(t *testing.T) {
	codes := runtime.RejectionCodes(limits.Default())
	for _, code := range codes {
		t.Run(code.Code, func(t *testing.T) {
			rows := judgeUpload(limits.Default(), []runtime.Rejection{{Code: code.Code, Message: "m"}})
			stops := code.Stops
			if stops == runtime.StageRead {
				stops = code.Stage + 1
			}
			if len(rows) != len(codes) {
				t.Fatalf("%d rows, want one per code (%d)", len(rows), len(codes))
			}
			for i, row := range rows {
				switch {
				case row.Code == code.Code:
					if row.Status != "fail" || len(row.Messages) != 1 {
						t.Errorf("%s: %q %v, want fail with the message", row.Code, row.Status, row.Messages)
					}
				case codes[i].Stage >= stops && row.Status != "not_run":
					t.Errorf("%s (%v) is %q after %s (%v), want not_run", row.Code, codes[i].Stage, row.Status, code.Code, code.Stage)
				}
			}
		})
	}
}

// TestPackageReportStructuralRejections loads real packages refused by
// the structural checks: the page shows the failed row, the module checks
// that ran as passed, and compilation and discovery as not run.
func TestPackageReportStructuralRejections(t *testing.T) {
	manyFuncs := make([][]byte, limits.DefaultStructure().Functions+1)
	for i := range manyFuncs {
		manyFuncs[i] = []byte{}
	}
	for _, tt := range []struct {
		code   string
		module []byte
	}{
		{runtime.CodeTableTooLarge, wasmtest.Module{Tables: [][]byte{append([]byte{0x70, 0x00}, wasmbin.AppendU32(nil, 1<<30)...)}}.Bytes()},
		{runtime.CodeModuleTooComplex, wasmtest.Module{Bodies: manyFuncs}.Bytes()},
	} {
		t.Run(tt.code, func(t *testing.T) {
			dir := t.TempDir()
			if err := os.WriteFile(filepath.Join(dir, "module.wasm"), tt.module, 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, "subako-package.json"), []byte(`{"abi":1,"name":"t","version":"1"}`), 0o644); err != nil {
				t.Fatal(err)
			}
			srv, hs := newServer(t, dir)
			var rep packageReport
			do(t, hs, srv.Token(), "GET", "/api/package", nil, &rep)
			status := map[string]string{}
			for _, c := range rep.Upload {
				status[c.Code] = c.Status
			}
			want := map[string]string{
				tt.code: "fail", runtime.CodeBadManifest: "pass",
				runtime.CodeCompileTimeout: "not_run", runtime.CodeDiscoveryFailed: "not_run", runtime.CodeNoTools: "not_run",
			}
			if tt.code == runtime.CodeTableTooLarge {
				want[runtime.CodeMissingStart] = "pass" // the module decoded: every module check ran
			}
			for code, st := range want {
				if status[code] != st {
					t.Errorf("%s: %q, want %q (all: %v)", code, status[code], st, status)
				}
			}
		})
	}
}

func TestCallGreetAndHistory(t *testing.T) {
	srv, hs := newServer(t, greetPackage(t))
	var e callEntry
	r := do(t, hs, srv.Token(), "POST", "/api/call", map[string]any{"tool": "greet", "arguments": map[string]any{"name": "Ada"}}, &e)
	if r.StatusCode != 200 || e.Outcome != runtime.OutcomeOK {
		t.Fatalf("call: %d %+v", r.StatusCode, e)
	}
	if len(e.View) == 0 || !strings.Contains(e.View[0].Text, "Hello, Ada!") {
		t.Fatalf("view: %+v", e.View)
	}
	if e.Stats.FuelUsed == 0 || e.Stats.MemoryBytes == 0 {
		t.Fatalf("stats: %+v", e.Stats)
	}
	var hist []callSummary
	do(t, hs, srv.Token(), "GET", "/api/calls", nil, &hist)
	if len(hist) != 1 || hist[0].ID != e.ID || hist[0].Tool != "greet" {
		t.Fatalf("history: %+v", hist)
	}
	var again callEntry
	if r := do(t, hs, srv.Token(), "GET", "/api/calls/"+itoa(e.ID), nil, &again); r.StatusCode != 200 || again.ID != e.ID {
		t.Fatalf("get call: %d %+v", r.StatusCode, again)
	}
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }

func TestCallValidatesArgumentsUnlessForced(t *testing.T) {
	srv, hs := newServer(t, greetPackage(t))
	var v map[string]any
	do(t, hs, srv.Token(), "POST", "/api/validate", map[string]any{"tool": "greet", "arguments": map[string]any{}}, &v)
	if v["valid"] != false || !strings.Contains(v["error"].(string), "name") {
		t.Fatalf("validate {}: %v", v)
	}
	var e map[string]apiError
	if r := do(t, hs, srv.Token(), "POST", "/api/call", map[string]any{"tool": "greet", "arguments": map[string]any{}}, &e); r.StatusCode != http.StatusUnprocessableEntity || e["error"].Code != "invalid_arguments" {
		t.Fatalf("call with invalid arguments: %d %+v", r.StatusCode, e)
	}
	// Forced, the module itself answers: greet's empty name is a tool error.
	var c callEntry
	do(t, hs, srv.Token(), "POST", "/api/call", map[string]any{"tool": "greet", "arguments": map[string]any{}, "force": true}, &c)
	if c.Outcome != runtime.OutcomeToolError {
		t.Fatalf("forced call: %+v", c)
	}
	if r := do(t, hs, srv.Token(), "POST", "/api/call", map[string]any{"tool": "nope"}, &e); r.StatusCode != http.StatusNotFound || e["error"].Code != runtime.CodeUnknownTool {
		t.Fatalf("unknown tool: %d %+v", r.StatusCode, e)
	}
	req, _ := http.NewRequest("POST", hs.URL+"/api/call", strings.NewReader("{not json"))
	req.Header.Set(tokenHeader, srv.Token())
	resp, err := hs.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("bad body: %d", resp.StatusCode)
	}
}

func TestCallMediaImagesAndFiles(t *testing.T) {
	srv, hs := newServer(t, greetPackage(t))
	var e callEntry
	do(t, hs, srv.Token(), "POST", "/api/call", map[string]any{"tool": "media"}, &e)
	var inline, file *viewItem
	for i := range e.View {
		v := &e.View[i]
		if v.Type == "image" && v.DataURL != "" && inline == nil {
			inline = v
		}
		if v.File != nil && file == nil {
			file = v
		}
	}
	if inline == nil || !strings.HasPrefix(inline.DataURL, "data:image/png;base64,") {
		t.Fatalf("no inline image with a data URL in %+v", e.View)
	}
	if file == nil {
		t.Fatalf("no volume file in %+v", e.View)
	}
	req, _ := http.NewRequest("GET", hs.URL+"/api/calls/"+itoa(e.ID)+"/files/"+itoa(*file.File), nil)
	req.Header.Set(tokenHeader, srv.Token())
	resp, err := hs.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	want, err := os.ReadFile(file.HostPath)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != 200 || !bytes.Equal(body, want) {
		t.Fatalf("file download: %d, %d bytes, want %d", resp.StatusCode, len(body), len(want))
	}
	for _, p := range []string{"/files/99", "/files/-1", "/files/x"} {
		if r := do(t, hs, srv.Token(), "GET", "/api/calls/"+itoa(e.ID)+p, nil, nil); r.StatusCode != http.StatusNotFound {
			t.Errorf("%s: %d, want 404", p, r.StatusCode)
		}
	}
}

func TestHistoryReleasesOldVolumes(t *testing.T) {
	srv, hs := newServer(t, greetPackage(t)) // History: 4
	var first callEntry
	do(t, hs, srv.Token(), "POST", "/api/call", map[string]any{"tool": "media"}, &first)
	srv.mu.Lock()
	tmp := srv.calls[0].res.TmpDir
	srv.mu.Unlock()
	if _, err := os.Stat(tmp); err != nil {
		t.Fatalf("the first call's /volume/tmp is not kept: %v", err)
	}
	for range 4 {
		do(t, hs, srv.Token(), "POST", "/api/call", map[string]any{"tool": "greet", "arguments": map[string]any{"name": "x"}}, nil)
	}
	// The runtime removes a released volume off the caller's path: wait for
	// it (the bound only turns a leak into a failure; nothing is timed).
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(10 * time.Millisecond) {
		if _, err := os.Stat(tmp); os.IsNotExist(err) {
			break
		} else if time.Now().After(deadline) {
			t.Fatalf("the evicted call's /volume/tmp is still there: %v", err)
		}
	}
	var hist []callSummary
	do(t, hs, srv.Token(), "GET", "/api/calls", nil, &hist)
	if len(hist) != 4 {
		t.Fatalf("history has %d calls, want 4", len(hist))
	}
	if r := do(t, hs, srv.Token(), "GET", "/api/calls/"+itoa(first.ID), nil, nil); r.StatusCode != http.StatusNotFound {
		t.Fatalf("evicted call: %d", r.StatusCode)
	}
}

func TestCrashReported(t *testing.T) {
	dir := testguest.Package(t, testguest.Go(t, guests+"misbehave"), "misbehave", nil)
	srv, hs := newServer(t, dir)
	var e callEntry
	do(t, hs, srv.Token(), "POST", "/api/call", map[string]any{"tool": "stderr_crash"}, &e)
	if e.Outcome != runtime.OutcomeCrashed || e.Crash == nil || e.Crash.Reason != runtime.CrashExitCode {
		t.Fatalf("crash: %+v", e)
	}
	if !strings.HasSuffix(e.Crash.Stderr, "STDERR-TAIL-MARKER\n") {
		t.Fatalf("stderr tail: %q", e.Crash.Stderr)
	}
}

func TestCheckEndpoint(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the whole conformance suite")
	}
	srv, hs := newServer(t, greetPackage(t))
	var rep struct {
		Passed bool
		Checks []struct{ ID, Status, Title string }
	}
	do(t, hs, srv.Token(), "POST", "/api/check", nil, &rep)
	if len(rep.Checks) < 10 {
		t.Fatalf("checks: %+v", rep)
	}
	ids := map[string]bool{}
	for _, c := range rep.Checks {
		ids[c.ID] = true
	}
	if !ids["protocol.eof_exit"] {
		t.Fatalf("no protocol.eof_exit in %v", ids)
	}
}

func TestReload(t *testing.T) {
	dir := greetPackage(t)
	srv, hs := newServer(t, dir)
	if err := os.WriteFile(filepath.Join(dir, "subako-package.json"), []byte(`{"abi":1,"name":"renamed"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	var rep packageReport
	do(t, hs, srv.Token(), "POST", "/api/reload", nil, &rep)
	if rep.Name != "renamed" || !rep.Accepted {
		t.Fatalf("reload: %+v", rep)
	}
	var e callEntry
	do(t, hs, srv.Token(), "POST", "/api/call", map[string]any{"tool": "greet", "arguments": map[string]any{"name": "Ada"}}, &e)
	if e.Outcome != runtime.OutcomeOK {
		t.Fatalf("call after reload: %+v", e)
	}
}

// TestRefusals: every endpoint wants the token, a loopback Host and no
// foreign Origin — a page elsewhere, or a DNS-rebinding name, gets nothing.
func TestRefusals(t *testing.T) {
	srv, hs := newServer(t, greetPackage(t))
	endpoints := []struct{ method, path string }{
		{"GET", "/"}, {"GET", "/assets/app.js"}, {"GET", "/api/package"}, {"POST", "/api/reload"},
		{"POST", "/api/validate"}, {"POST", "/api/call"}, {"GET", "/api/calls"}, {"GET", "/api/calls/1"},
		{"GET", "/api/calls/1/files/0"}, {"POST", "/api/check"},
	}
	cases := []struct {
		name   string
		tok    string
		host   string
		origin string
		want   int
	}{
		{"no token", "-", "", "", http.StatusUnauthorized},
		{"wrong token", "nope", "", "", http.StatusUnauthorized},
		{"rebinding host", srv.Token(), "attacker.example:80", "", http.StatusMisdirectedRequest},
		{"foreign origin", srv.Token(), "", "http://attacker.example", http.StatusForbidden},
		{"origin of another port", srv.Token(), "", "http://127.0.0.1:1", http.StatusForbidden},
	}
	for _, c := range cases {
		for _, ep := range endpoints {
			req, _ := http.NewRequest(ep.method, hs.URL+ep.path, strings.NewReader(`{"tool":"greet","arguments":{"name":"x"}}`))
			if c.tok != "-" {
				req.Header.Set(tokenHeader, c.tok)
			}
			if c.host != "" {
				req.Host = c.host
			}
			if c.origin != "" {
				req.Header.Set("Origin", c.origin)
			}
			resp, err := hs.Client().Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != c.want {
				t.Errorf("%s: %s %s: %d, want %d", c.name, ep.method, ep.path, resp.StatusCode, c.want)
			}
		}
	}
	// Nothing ran: the refused calls left no history.
	var hist []callSummary
	do(t, hs, srv.Token(), "GET", "/api/calls", nil, &hist)
	if len(hist) != 0 {
		t.Fatalf("refused requests ran calls: %+v", hist)
	}
}

func TestTokenInURLSetsCookie(t *testing.T) {
	srv, hs := newServer(t, greetPackage(t))
	resp, err := hs.Client().Get(hs.URL + "/?token=" + srv.Token())
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !bytes.Contains(body, []byte("subako-runner inspect")) {
		t.Fatalf("page: %d", resp.StatusCode)
	}
	var cookie *http.Cookie
	for _, c := range resp.Cookies() {
		if c.Name == tokenCookiePrefix+hostPort(strings.TrimPrefix(hs.URL, "http://")) {
			cookie = c
		}
	}
	if cookie == nil || !cookie.HttpOnly || cookie.SameSite != http.SameSiteStrictMode {
		t.Fatalf("cookie: %+v", cookie)
	}
	if csp := resp.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "default-src 'self'") {
		t.Fatalf("CSP: %q", csp)
	}
	req, _ := http.NewRequest("GET", hs.URL+"/api/package", nil)
	req.AddCookie(cookie)
	r2, err := hs.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	r2.Body.Close()
	if r2.StatusCode != 200 {
		t.Fatalf("API with the cookie: %d", r2.StatusCode)
	}
}

// TestTwoPagesKeepTheirTokens: two inspect pages open in one browser at
// once each keep their token (the cookie had one name for every port, and
// a browser keeps cookies per host: the second page's token replaced the
// first's, which then answered 401).
func TestTwoPagesKeepTheirTokens(t *testing.T) {
	pkg := greetPackage(t)
	a, hsA := newServer(t, pkg)
	b, hsB := newServer(t, pkg)
	jar, _ := cookiejar.New(nil)
	browser := &http.Client{Jar: jar}
	for _, p := range []struct {
		srv *Server
		hs  *httptest.Server
	}{{a, hsA}, {b, hsB}} {
		resp, err := browser.Get(p.hs.URL + "/?token=" + p.srv.Token())
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	for name, hs := range map[string]*httptest.Server{"first": hsA, "second": hsB} {
		resp, err := browser.Get(hs.URL + "/api/package")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Errorf("the %s page's API with the browser's cookies: %d", name, resp.StatusCode)
		}
	}
}

func TestURL(t *testing.T) {
	s := &Server{token: "abc"}
	for addr, want := range map[string]string{
		"127.0.0.1:8080": "http://127.0.0.1:8080/?token=abc",
		"[::]:9":         "http://127.0.0.1:9/?token=abc",
		"[::1]:9":        "http://[::1]:9/?token=abc",
	} {
		if got := s.URL(addr); got != want {
			t.Errorf("URL(%q) = %q, want %q", addr, got, want)
		}
	}
}

func TestAssetsAreSelfContained(t *testing.T) {
	// No third-party origin: no asset may reference http(s):// or //host.
	for _, name := range []string{"assets/index.html", "assets/app.js", "assets/app.css"} {
		b, err := assets.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		for _, bad := range []string{"http://", "https://", `src="//`, `href="//`, "@import"} {
			if bytes.Contains(b, []byte(bad)) {
				t.Errorf("%s references %q", name, bad)
			}
		}
	}
}

// The Check tab calls the tools with the examples it was given (inspect
// --examples), under the calls' network policy, as check --examples does.
func TestCheckEndpointTakesExamples(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the whole conformance suite")
	}
	srv, err := New(context.Background(), Config{Runtime: newRuntime(t), Path: greetPackage(t),
		Examples: map[string][]json.RawMessage{"greet": {json.RawMessage(`{"name":"Ada"}`)}}})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv)
	t.Cleanup(func() { hs.Close(); srv.Close(context.Background()) })
	var rep struct {
		Checks []struct{ ID, Status, Detail string }
	}
	do(t, hs, srv.Token(), "POST", "/api/check", nil, &rep)
	for _, c := range rep.Checks {
		if c.ID == "examples.greet/1" {
			if c.Status != "pass" || !strings.Contains(c.Detail, "Ada") {
				t.Errorf("the example's check: %+v", c)
			}
			return
		}
	}
	t.Fatalf("no examples.greet/1 among %d checks", len(rep.Checks))
}

// The page carries the package report from its first byte, escaped so
// that what the package wrote cannot close the script element it sits in
// (a manifest is the package author's, untrusted).
func TestPageCarriesTheReport(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "module.wasm"), []byte("\x00asm\x0d\x00\x01\x00"), 0o644)
	os.WriteFile(filepath.Join(dir, "subako-package.json"), []byte(`{"abi":1,"name":"component","description":"</script><script>alert(1)</script>"}`), 0o644)
	srv, hs := newServer(t, dir)
	resp, err := http.Get(hs.URL + "/?token=" + srv.Token())
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	page := string(b)
	start := strings.Index(page, `<script id="initial-package" type="application/json">`)
	if start < 0 {
		t.Fatalf("no initial-package element:\n%s", page)
	}
	body := page[start+len(`<script id="initial-package" type="application/json">`):]
	end := strings.Index(body, "</script>")
	var rep packageReport
	if err := json.Unmarshal([]byte(body[:end]), &rep); err != nil {
		t.Fatalf("the initial report is not the package's JSON (%v): %q", err, body[:min(end, 300)])
	}
	if rep.Accepted || len(rep.Upload) == 0 || !strings.Contains(body[:end], `"component"`) {
		t.Errorf("initial report %+v; want the refused package", rep)
	}
	if !strings.Contains(body[:end], `\u003c/script\u003e\u003cscript\u003ealert(1)`) {
		t.Errorf("the manifest's description is not in the report, escaped: %q", body[:end])
	}
	if strings.Contains(page, "<script>alert(1)") || strings.Count(page, "</script>") != 2 {
		t.Errorf("the manifest's text closed the script element:\n%s", page)
	}
}
