package mcpserve

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/zap"

	"github.com/subako/subako-runner/limits"
	"github.com/subako/subako-runner/protocol"
	"github.com/subako/subako-runner/runtime"
)

// TestStatelessVersion: the revision ABI 1's guests speak is one Handler
// serves statelessly, and the SDK knows the first stateless revision.
func TestStatelessVersion(t *testing.T) {
	if protocol.Version < statelessVersion {
		t.Errorf("protocol.Version %q is before the first stateless revision %q: Handler would give its clients sessions", protocol.Version, statelessVersion)
	}
	if !slices.Contains(mcp.SupportedProtocolVersions(), statelessVersion) {
		t.Errorf("the MCP SDK does not support %q (it has %v): the stateless handler would refuse its requests", statelessVersion, mcp.SupportedProtocolVersions())
	}
}

// TestHTTPRevisions: over Streamable HTTP a 2026-07-28 client is served
// statelessly (no session id ever), a 2025-11-25 client gets a session.
func TestHTTPRevisions(t *testing.T) {
	f := newFixture(t)
	srv := New(f.load(t, testdata+"packages/cgreet"), Options{Logger: f.log})
	t.Cleanup(func() { srv.Close(context.Background()) })
	var mu sync.Mutex
	var sessionIDs, versions []string
	h := srv.Handler()
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		versions = append(versions, r.Header.Get("MCP-Protocol-Version"))
		mu.Unlock()
		h.ServeHTTP(w, r)
		mu.Lock()
		if id := w.Header().Get("Mcp-Session-Id"); id != "" {
			sessionIDs = append(sessionIDs, id)
		}
		mu.Unlock()
	}))
	t.Cleanup(ts.Close)

	for _, tc := range []struct {
		version  string
		sessions bool
	}{
		{"2026-07-28", false},
		{"2025-11-25", true},
	} {
		t.Run(tc.version, func(t *testing.T) {
			mu.Lock()
			sessionIDs, versions = nil, nil
			mu.Unlock()
			client := mcp.NewClient(&mcp.Implementation{Name: "mcpserve-http-test", Version: "1"}, nil)
			cs, err := client.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: ts.URL + "/mcp"}, &mcp.ClientSessionOptions{ProtocolVersion: tc.version})
			if err != nil {
				t.Fatal(err)
			}
			defer cs.Close()
			if got := cs.InitializeResult().ProtocolVersion; got != tc.version {
				t.Errorf("negotiated %q", got)
			}
			if names := toolNames(t, cs); strings.Join(names, ",") != "greet,trap" {
				t.Errorf("tools %v", names)
			}
			res := call(t, context.Background(), cs, "greet", map[string]any{"name": "Ada"})
			if res.IsError || !strings.Contains(text(res), "Hello, Ada!") {
				t.Errorf("greet: %v %q", res.IsError, text(res))
			}
			res = call(t, context.Background(), cs, "trap", map[string]any{})
			if !res.IsError || !strings.Contains(text(res), "(trap)") {
				t.Errorf("trap: %v %q", res.IsError, text(res))
			}
			mu.Lock()
			defer mu.Unlock()
			if (len(sessionIDs) > 0) != tc.sessions {
				t.Errorf("session ids %v (versions sent %v): want sessions %v", sessionIDs, versions, tc.sessions)
			}
		})
	}
}

// TestDNSRebinding: a browser page on another site, reaching the server
// through a name it rebinds to 127.0.0.1, sends its own name in Host and
// Origin; both are refused before any MCP handling.
func TestDNSRebinding(t *testing.T) {
	f := newFixture(t)
	pkg := f.load(t, testdata+"packages/cgreet")
	local := New(pkg, Options{Logger: f.log})
	remote := New(pkg, Options{Logger: f.log, AllowRemote: true, AllowedHosts: []string{"build-box.lan"}})
	allowed, err := NormalizeOrigins([]string{"http://LOCALHOST:6274/", "vscode-webview://1abc"})
	if err != nil {
		t.Fatal(err)
	}
	origins := New(pkg, Options{Logger: f.log, AllowedOrigins: allowed})
	const body = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"x","version":"1"}}}`
	for _, tc := range []struct {
		name         string
		srv          *Server
		host, origin string
		allowed      bool
	}{
		{"loopback", local, "127.0.0.1:8080", "", true},
		{"localhost", local, "localhost:8080", "", true},
		{"ipv6 loopback", local, "[::1]:8080", "", true},
		{"own origin", local, "127.0.0.1:8080", "http://127.0.0.1:8080", true},
		{"own port by another loopback name", local, "127.0.0.1:8080", "http://localhost:8080", true},
		{"another port of this machine", local, "127.0.0.1:8080", "http://localhost:6274", false},
		{"another port, same address", local, "127.0.0.1:8080", "http://127.0.0.1:9999", false},
		{"https origin of this port", local, "127.0.0.1:8080", "https://127.0.0.1:8080", false},
		{"origin with a path", local, "127.0.0.1:8080", "http://127.0.0.1:8080/x", false},
		{"allowed inspector origin", origins, "127.0.0.1:8080", "http://localhost:6274", true},
		{"allowed webview origin", origins, "127.0.0.1:8080", "vscode-webview://1abc", true},
		{"allowed origin, other port", origins, "127.0.0.1:8080", "http://localhost:6275", false},
		{"allowed origins keep the Host check", origins, "evil.example:8080", "vscode-webview://1abc", false},
		{"rebound name", local, "evil.example:8080", "", false},
		{"rebound name with its origin", local, "evil.example:8080", "http://evil.example:8080", false},
		{"foreign origin", local, "127.0.0.1:8080", "https://evil.example", false},
		{"null origin", local, "127.0.0.1:8080", "null", false},
		{"non-http origin", local, "127.0.0.1:8080", "file://localhost", false},
		{"localhost suffix", local, "localhost.evil.example:8080", "", false},
		{"remote ip without allow-remote", local, "192.0.2.10:8080", "", false},
		{"no host", local, "", "", false},
		{"remote ip with allow-remote", remote, "192.0.2.10:8080", "", true},
		{"allowed name", remote, "build-box.lan:8080", "http://build-box.lan:8080", true},
		{"rebound name with allow-remote", remote, "evil.example:8080", "", false},
		{"foreign origin with allow-remote", remote, "192.0.2.10:8080", "https://evil.example", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := httptest.NewRequest(http.MethodPost, "/mcp", strings.NewReader(body))
			r.Host = tc.host
			r.Header.Set("Content-Type", "application/json")
			r.Header.Set("Accept", "application/json, text/event-stream")
			if tc.origin != "" {
				r.Header.Set("Origin", tc.origin)
			}
			w := httptest.NewRecorder()
			tc.srv.Handler().ServeHTTP(w, r)
			if refused := w.Code == http.StatusForbidden; refused == tc.allowed {
				t.Errorf("Host %q Origin %q: status %d, want allowed=%v (%s)", tc.host, tc.origin, w.Code, tc.allowed, w.Body)
			}
			if tc.allowed && w.Code != http.StatusOK {
				t.Errorf("allowed request: status %d %s", w.Code, w.Body)
			}
		})
	}
}

// rawPost sends one JSON-RPC message as a Streamable HTTP client would and
// returns the response with its body read.
func rawPost(t testing.TB, url, session, version, body string) (*http.Response, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if session != "" {
		req.Header.Set("Mcp-Session-Id", session)
	}
	if version != "" {
		req.Header.Set("MCP-Protocol-Version", version)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	return resp, string(b)
}

const initializeBody = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"flood","version":"1"}}}`

// initialized opens a session of 2025-11-25 as a client does (initialize,
// then notifications/initialized) and returns its id.
func initialized(t testing.TB, url string) string {
	t.Helper()
	resp, body := rawPost(t, url, "", "", initializeBody)
	session := resp.Header.Get("Mcp-Session-Id")
	if session == "" {
		t.Fatalf("initialize: %d %s", resp.StatusCode, body)
	}
	rawPost(t, url, session, "2025-11-25", `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	return session
}

func (s *Server) sessionCount() int {
	n := 0
	for range s.sdk.Sessions() {
		n++
	}
	return n
}

// TestHTTPSessionBound: an unauthenticated flood of initialize requests
// (129,797 sessions in 20 s before, 7.86 GB) keeps at most MaxSessions
// sessions: each new one closes the session idle the longest, so a client
// that keeps using its session keeps it; when every session has a request
// in flight a new one is refused with 503 and a busy error.
func TestHTTPSessionBound(t *testing.T) {
	f := newFixture(t)
	lim := limits.Default()
	lim.CallTimeout = time.Hour
	const max = 3
	srv := New(f.load(t, misbehavePackage(t)), Options{Logger: f.log, MaxSessions: max, MaxRunning: max, Call: runtime.CallRequest{Limits: &lim}})
	t.Cleanup(func() { srv.Close(context.Background()) })
	ts := httptest.NewServer(srv.Handler())
	t.Cleanup(ts.Close)
	open := func() string {
		resp, body := rawPost(t, ts.URL, "", "", initializeBody)
		if resp.StatusCode != http.StatusOK || resp.Header.Get("Mcp-Session-Id") == "" {
			t.Fatalf("initialize: %d %s", resp.StatusCode, body)
		}
		return resp.Header.Get("Mcp-Session-Id")
	}
	const ping = `{"jsonrpc":"2.0","id":2,"method":"ping"}`
	alive := func(id string) bool {
		resp, _ := rawPost(t, ts.URL, id, "2025-11-25", ping)
		return resp.StatusCode == http.StatusOK
	}
	keeper := open()
	for range 40 {
		open()
		if !alive(keeper) { // used after every new session: never the idlest
			t.Fatal("the session in use was closed to make room")
		}
		if n := srv.sessionCount(); n > max {
			t.Fatalf("%d sessions, bound %d", n, max)
		}
	}

	// Every session busy: a new one is refused.
	busy := make([]string, 0, max)
	for range max {
		busy = append(busy, open())
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var wg sync.WaitGroup
	for _, id := range busy {
		wg.Add(1)
		go func() {
			defer wg.Done()
			req, _ := http.NewRequestWithContext(ctx, http.MethodPost, ts.URL, strings.NewReader(`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"timeout_sleep","arguments":{}}}`))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			req.Header.Set("Mcp-Session-Id", id)
			req.Header.Set("MCP-Protocol-Version", "2025-11-25")
			if resp, err := http.DefaultClient.Do(req); err == nil {
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
		}()
	}
	waitFor(t, "every session's call to start", func() bool {
		return f.logs.FilterMessage("module stderr").FilterField(zap.String("tool", "timeout_sleep")).Len() >= max
	})
	resp, body := rawPost(t, ts.URL, "", "", initializeBody)
	if resp.StatusCode != http.StatusServiceUnavailable || !strings.Contains(body, `"code":-32000`) || !strings.Contains(body, "server busy") {
		t.Errorf("initialize with every session busy: %d %s", resp.StatusCode, body)
	}
	// The clients cancel their calls, which ends the instances.
	for _, id := range busy {
		rawPost(t, ts.URL, id, "2025-11-25", `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":3}}`)
	}
	wg.Wait()
	cancel()
}

// TestHTTPUnknownVersion: a request of a revision the server does not know
// gets the transport's unsupported-version error (-32022, naming the
// versions it has), not a complaint about _meta.
func TestHTTPUnknownVersion(t *testing.T) {
	f := newFixture(t)
	srv := New(f.load(t, testdata+"packages/cgreet"), Options{Logger: f.log})
	t.Cleanup(func() { srv.Close(context.Background()) })
	ts := httptest.NewServer(srv.Handler())
	t.Cleanup(ts.Close)
	resp, body := rawPost(t, ts.URL, "", "2099-01-01", `{"jsonrpc":"2.0","id":"v","method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2099-01-01"}}}`)
	var m struct {
		ID    string `json:"id"`
		Error struct {
			Code int `json:"code"`
			Data struct {
				Supported []string `json:"supported"`
			} `json:"data"`
		} `json:"error"`
	}
	if err := json.Unmarshal([]byte(body), &m); err != nil || resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("%d %s (%v)", resp.StatusCode, body, err)
	}
	if m.ID != "v" || m.Error.Code != mcp.CodeUnsupportedProtocolVersion || !slices.Contains(m.Error.Data.Supported, "2026-07-28") {
		t.Errorf("answer %s", body)
	}
}

// TestHTTPCancellation: over HTTP too, a call the client gives up on ends
// its instance (a stateless 2026-07-28 call by its request closing or
// notifications/cancelled; a session's by notifications/cancelled).
func TestHTTPCancellation(t *testing.T) {
	f := newFixture(t)
	lim := limits.Default()
	lim.CallTimeout = time.Hour
	srv := New(f.load(t, misbehavePackage(t)), Options{Logger: f.log, Call: runtime.CallRequest{Limits: &lim}})
	t.Cleanup(func() { srv.Close(context.Background()) })
	ts := httptest.NewServer(srv.Handler())
	t.Cleanup(ts.Close)
	for _, version := range []string{"2026-07-28", "2025-11-25"} {
		t.Run(version, func(t *testing.T) {
			client := mcp.NewClient(&mcp.Implementation{Name: "mcpserve-http-test", Version: "1"}, nil)
			cs, err := client.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: ts.URL}, &mcp.ClientSessionOptions{ProtocolVersion: version})
			if err != nil {
				t.Fatal(err)
			}
			defer cs.Close()
			started := f.logs.FilterMessage("module stderr").FilterField(zap.String("tool", "timeout_sleep")).Len()
			ctx, cancel := context.WithCancel(context.Background())
			errc := make(chan error, 1)
			go func() {
				_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "timeout_sleep", Arguments: map[string]any{}})
				errc <- err
			}()
			waitFor(t, "the instance to start", func() bool {
				return f.logs.FilterMessage("module stderr").FilterField(zap.String("tool", "timeout_sleep")).Len() > started
			})
			cancel()
			if err := <-errc; err == nil {
				t.Error("a cancelled call returned a result")
			}
			select {
			case e := <-f.calls.ch:
				if e.Tool != "timeout_sleep" {
					t.Errorf("call event %+v", e)
				}
			case <-time.After(time.Minute):
				t.Fatal("the cancelled call's instance did not end")
			}
		})
	}
}

// FuzzCheckHost: whatever Host and Origin a request carries, the check
// never panics, and a loopback-only server lets through only requests
// whose Host names localhost or a loopback address.
func FuzzCheckHost(f *testing.F) {
	for _, seed := range [][2]string{
		{"127.0.0.1:8080", ""}, {"localhost", "http://localhost:6274"}, {"[::1]:1", "null"},
		{"evil.example", "http://evil.example"}, {"127.0.0.1.evil.example", ""}, {"[::ffff:127.0.0.1]", "https://[::1]"},
		{"LOCALHOST.", "HTTP://LocalHost:1"}, {"[fe80::1%25eth0]:80", ""}, {"", ""}, {"%", "://"},
	} {
		f.Add(seed[0], seed[1])
	}
	srv := &Server{}
	f.Fuzz(func(t *testing.T, host, origin string) {
		r := httptest.NewRequest(http.MethodPost, "/mcp", nil)
		r.Host = host
		if origin != "" {
			r.Header.Set("Origin", origin)
		}
		if srv.CheckHost(r) != nil {
			return
		}
		h := host
		if hh, _, err := net.SplitHostPort(host); err == nil {
			h = hh
		}
		h = strings.TrimSuffix(strings.ToLower(strings.Trim(h, "[]")), ".")
		if ip, err := netip.ParseAddr(h); h != "localhost" && (err != nil || !ip.Unmap().IsLoopback()) {
			t.Fatalf("Host %q (Origin %q) was let through", host, origin)
		}
	})
}

// TestHTTPSessionCancelledGetsNoAnswer: in a session, a request the client
// cancels with notifications/cancelled is not answered on its stream (the
// SDK wrote {"code":0,"message":"context canceled"}), and its instance ends.
func TestHTTPSessionCancelledGetsNoAnswer(t *testing.T) {
	f := newFixture(t)
	lim := limits.Default()
	lim.CallTimeout = time.Hour
	srv := New(f.load(t, misbehavePackage(t)), Options{Logger: f.log, Call: runtime.CallRequest{Limits: &lim}})
	t.Cleanup(func() { srv.Close(context.Background()) })
	ts := httptest.NewServer(srv.Handler())
	t.Cleanup(ts.Close)
	session := initialized(t, ts.URL)
	answered := make(chan string, 1)
	go func() {
		_, b := rawPost(t, ts.URL, session, "2025-11-25", `{"jsonrpc":"2.0","id":"slow","method":"tools/call","params":{"name":"timeout_sleep","arguments":{}}}`)
		answered <- b
	}()
	waitFor(t, "the call to start", func() bool {
		return f.logs.FilterMessage("module stderr").FilterField(zap.String("tool", "timeout_sleep")).Len() > 0
	})
	rawPost(t, ts.URL, session, "2025-11-25", `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"slow"}}`)
	select {
	case b := <-answered:
		if strings.Contains(b, `"slow"`) {
			t.Errorf("the cancelled request was answered: %s", b)
		}
	case <-time.After(time.Minute):
		t.Fatal("the cancelled call's stream never ended")
	}
	select {
	case <-f.calls.ch:
	case <-time.After(time.Minute):
		t.Fatal("the cancelled call's instance did not end")
	}
}
