package subakohttp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"

	"github.com/subako/subako-runner/internal/abi"
	"github.com/subako/subako-runner/limits"
)

// guest is an instance of testdata/subakohttp/abi.wasm, whose exports call
// straight through to the host functions.
type guest struct {
	t   *testing.T
	ctx context.Context
	mod api.Module
}

const outOffset = 256 << 10 // where responses are read into

func newGuest(t *testing.T, c *Call) *guest {
	t.Helper()
	ctx := context.Background()
	r := wazero.NewRuntime(ctx)
	t.Cleanup(func() { r.Close(ctx) })
	if _, err := Instantiate(ctx, r); err != nil {
		t.Fatal(err)
	}
	bin, err := os.ReadFile("../../testdata/subakohttp/abi.wasm")
	if err != nil {
		t.Fatal(err)
	}
	if c != nil {
		ctx = WithCall(ctx, c)
	}
	mod, err := r.InstantiateWithConfig(ctx, bin, wazero.NewModuleConfig().WithStartFunctions())
	if err != nil {
		t.Fatal(err)
	}
	return &guest{t: t, ctx: ctx, mod: mod}
}

func (g *guest) fn(name string, args ...uint64) int32 {
	g.t.Helper()
	res, err := g.mod.ExportedFunction(name).Call(g.ctx, args...)
	if err != nil {
		g.t.Fatalf("%s: %v", name, err)
	}
	return api.DecodeI32(res[0])
}

func (g *guest) put(off uint32, doc string) {
	g.t.Helper()
	if !g.mod.Memory().Write(off, []byte(doc)) {
		g.t.Fatalf("request of %d bytes does not fit the guest memory", len(doc))
	}
}

func (g *guest) request(off uint32, n int32) int32 {
	return g.fn("request", uint64(off), api.EncodeI32(n))
}

func (g *guest) readResponse(off uint32, n int32) int32 {
	return g.fn("read_response", uint64(off), api.EncodeI32(n))
}

// roundTrip sends doc the way a guest does and decodes the response.
func (g *guest) roundTrip(doc string) result {
	g.t.Helper()
	g.put(0, doc)
	n := g.fn("call", 0, uint64(len(doc)), outOffset)
	if n <= 0 {
		g.t.Fatalf("call returned %d", n)
	}
	b, ok := g.mod.Memory().Read(outOffset, uint32(n))
	if !ok {
		g.t.Fatal("response outside memory")
	}
	return decode(g.t, bytes.Clone(b))
}

func TestHostFunctionsReturnValues(t *testing.T) {
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "hello") })
	c := newTestCall(t, callOpts{policy: PolicyConfig{
		Allow:        []string{srv.hostport("api.example.com")},
		Resolve:      pin(srv.hostport("api.example.com"), "127.0.0.1"),
		AllowPrivate: loopback(),
	}})
	g := newGuest(t, c)
	memSize := g.mod.Memory().Size()
	doc := fmt.Sprintf(`{"url":"http://%s/"}`, srv.hostport("api.example.com"))
	g.put(0, doc)

	if got := g.readResponse(outOffset, 10); got != -2 {
		t.Fatalf("read_response with nothing held = %d, want -2", got)
	}
	if got := g.request(memSize-2, 10); got != -1 {
		t.Fatalf("request past the end of memory = %d, want -1", got)
	}
	if got := g.request(0, -1); got != -1 {
		t.Fatalf("request with negative length = %d, want -1", got)
	}
	if got := g.readResponse(0, 1); got != -2 {
		t.Fatalf("after -1 nothing may be held, read_response = %d", got)
	}

	n := g.request(0, int32(len(doc)))
	if n <= 0 {
		t.Fatalf("request = %d", n)
	}
	if got := g.readResponse(outOffset, n+1); got != -3 {
		t.Fatalf("read_response with a longer length = %d, want -3", got)
	}
	if got := g.readResponse(outOffset, n-1); got != -3 {
		t.Fatalf("read_response with a shorter length = %d, want -3", got)
	}
	if got := g.readResponse(memSize-uint32(n)+1, n); got != -1 {
		t.Fatalf("read_response past the end of memory = %d, want -1", got)
	}
	if got := g.readResponse(0, -5); got != -1 {
		t.Fatalf("read_response with negative length = %d, want -1", got)
	}
	// Still held after -1 and -3.
	if got := g.readResponse(outOffset, n); got != n {
		t.Fatalf("read_response = %d, want %d", got, n)
	}
	b, _ := g.mod.Memory().Read(outOffset, uint32(n))
	r := decode(t, b)
	wantOK(t, r)
	if r.OK.Body.Text != "hello" {
		t.Fatalf("body = %q", r.OK.Body.Text)
	}
	if got := g.readResponse(outOffset, n); got != -2 {
		t.Fatalf("second read_response = %d, want -2", got)
	}
	if srv.hits.Load() != 1 {
		t.Fatalf("server got %d requests, want 1", srv.hits.Load())
	}
}

func TestHostFunctionsRequestWhileHeldIsABIError(t *testing.T) {
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "x") })
	c := newTestCall(t, callOpts{policy: PolicyConfig{
		Allow:        []string{srv.hostport("127.0.0.1")},
		AllowPrivate: loopback(),
	}})
	g := newGuest(t, c)
	doc := fmt.Sprintf(`{"url":"http://%s/"}`, srv.hostport("127.0.0.1"))
	g.put(0, doc)
	if n := g.request(0, int32(len(doc))); n <= 0 {
		t.Fatalf("request = %d", n)
	}
	n := g.request(0, int32(len(doc)))
	if n <= 0 {
		t.Fatalf("second request = %d", n)
	}
	if srv.hits.Load() != 1 {
		t.Fatalf("the second request was sent: %d hits", srv.hits.Load())
	}
	if got := g.readResponse(outOffset, n); got != n {
		t.Fatalf("read_response = %d", got)
	}
	b, _ := g.mod.Memory().Read(outOffset, uint32(n))
	wantKind(t, decode(t, b), KindABI)
	if got := g.readResponse(outOffset, n); got != -2 {
		t.Fatalf("the first response must have been dropped; read_response = %d", got)
	}
}

func TestHostFunctionsCopyRequestAtOnce(t *testing.T) {
	// The guest grows its memory between calls; the host must not keep a
	// view of it. A request followed by memory.grow and read_response works.
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "grown") })
	c := newTestCall(t, callOpts{policy: PolicyConfig{Allow: []string{srv.hostport("127.0.0.1")}, AllowPrivate: loopback()}})
	g := newGuest(t, c)
	doc := fmt.Sprintf(`{"url":"http://%s/"}`, srv.hostport("127.0.0.1"))
	g.put(0, doc)
	n := g.request(0, int32(len(doc)))
	if _, ok := g.mod.Memory().Grow(8); !ok {
		t.Fatal("grow")
	}
	off := g.mod.Memory().Size() - uint32(n)
	if got := g.readResponse(off, n); got != n {
		t.Fatalf("read_response into grown memory = %d", got)
	}
	b, _ := g.mod.Memory().Read(off, uint32(n))
	if r := decode(t, b); r.OK == nil || r.OK.Body.Text != "grown" {
		t.Fatalf("got %s", b)
	}
}

// TestHostFunctionsWithoutCallEndTheCall: without a Call in the context
// both functions end the call with abi.ErrNoState (no shared state that
// outlives the instance, no host panic), and a second instance of the same
// runtime is no different.
func TestHostFunctionsWithoutCallEndTheCall(t *testing.T) {
	for range 2 {
		g := newGuest(t, nil)
		g.put(0, `{"url":"https://api.example.com/"}`)
		for _, name := range []string{"request", "read_response"} {
			_, err := g.mod.ExportedFunction(name).Call(g.ctx, 0, 10)
			if !errors.Is(err, abi.ErrNoState) || !strings.Contains(err.Error(), "subako_http."+name) || !strings.Contains(err.Error(), "WithCall") {
				t.Fatalf("%s without a Call: %v, want abi.ErrNoState naming it", name, err)
			}
		}
	}
}

// TestErrorKindsThroughGuest produces every error kind of docs/abi.md §8
// through the real host functions.
func TestErrorKindsThroughGuest(t *testing.T) {
	ok := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/loop":
			http.Redirect(w, r, "/loop", http.StatusFound)
		case "/slow":
			select {
			case <-r.Context().Done():
			case <-time.After(20 * time.Second):
			}
		case "/big":
			w.Write(bytes.Repeat([]byte("a"), 300<<10))
		case "/binary":
			w.Write([]byte{0xff, 0xfe, 0x00, 0x80})
		case "/reset":
			conn, _, err := w.(http.Hijacker).Hijack()
			if err == nil {
				conn.(*net.TCPConn).SetLinger(0)
				conn.Close()
			}
		default:
			io.WriteString(w, "fine")
		}
	})
	tlsSrv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	tlsSrv.Config.ErrorLog = log.New(io.Discard, "", 0) // the refused handshake is the point
	tlsSrv.StartTLS()
	t.Cleanup(tlsSrv.Close)
	tlsPort := tlsSrv.Listener.Addr().(*net.TCPAddr).Port
	closedPort := func() int {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		p := ln.Addr().(*net.TCPAddr).Port
		ln.Close()
		return p
	}()

	api := ok.hostport("api.example.com")
	files := newDirFiles(t)
	small := limits.Default()
	small.HTTPRequest = 200
	base := PolicyConfig{
		Allow: []string{api, fmt.Sprintf("tls.example.com:%d", tlsPort), fmt.Sprintf("closed.example.com:%d", closedPort),
			"nodns.example.com", "private.example.com", "secret.example.com", "nocred.example.com"},
		Resolve: merge(
			pin(api, "127.0.0.1"),
			pin(fmt.Sprintf("tls.example.com:%d", tlsPort), "127.0.0.1"),
			pin(fmt.Sprintf("closed.example.com:%d", closedPort), "127.0.0.1"),
			pin("private.example.com:80", "10.1.2.3"),
		),
		AllowPrivate: loopback(),
		Credentials: []Credential{
			{Pattern: "secret.example.com", Header: "X-Api-Key", Value: func(context.Context) (string, bool) { return "s3cr3t", true }},
			{Pattern: "nocred.example.com", Header: "Authorization", Value: func(context.Context) (string, bool) { return "", false }},
		},
	}
	cases := []struct {
		name string
		opts callOpts
		doc  string
		want Kind
	}{
		{"not json", callOpts{}, `{"url":`, KindInvalidRequest},
		{"unknown field", callOpts{}, `{"url":"http://` + api + `/","retries":3}`, KindInvalidRequest},
		{"bad method", callOpts{}, `{"method":"TRACE","url":"http://` + api + `/"}`, KindInvalidRequest},
		{"relative url", callOpts{}, `{"url":"/orders"}`, KindInvalidRequest},
		{"framing header", callOpts{}, `{"url":"http://` + api + `/","headers":{"Transfer-Encoding":"chunked"}}`, KindInvalidRequest},
		{"host not allowed", callOpts{}, `{"url":"https://other.example.org/"}`, KindHostNotAllowed},
		{"discovery", callOpts{hook: func(c *Call) { c.policy = DiscoveryPolicy() }}, `{"url":"http://` + api + `/"}`, KindHostNotAllowed},
		{"forbidden destination", callOpts{}, `{"url":"http://private.example.com/"}`, KindForbiddenDestination},
		{"credential header", callOpts{}, `{"url":"http://` + api + `/","headers":{"Authorization":"Bearer x"}}`, KindCredentialHeader},
		{"injected header", callOpts{}, `{"url":"http://` + api + `/","headers":{"x-api-key":"x"}}`, KindCredentialHeader},
		{"credential unavailable", callOpts{}, `{"url":"https://nocred.example.com/"}`, KindCredentialUnavailable},
		{"too many redirects", callOpts{}, `{"url":"http://` + api + `/loop"}`, KindTooManyRedirects},
		{"timeout", callOpts{}, `{"url":"http://` + api + `/slow","timeout_ms":200}`, KindTimeout},
		{"request too large", callOpts{limits: &small}, `{"url":"http://` + api + `/","body":{"type":"text","text":"` + strings.Repeat("x", 300) + `"}}`, KindTooLarge},
		{"inline too large", callOpts{}, `{"url":"http://` + api + `/big"}`, KindTooLarge},
		{"not text", callOpts{}, `{"url":"http://` + api + `/binary"}`, KindNotText},
		{"write budget", callOpts{files: files, budget: limits.NewCallBudget(limits.Limits{WriteBudget: 1000})}, `{"url":"http://` + api + `/big","output":{"type":"file","path":"/volume/tmp/big"}}`, KindWriteBudget},
		{"bad path outside volume", callOpts{files: files}, `{"url":"http://` + api + `/","output":{"type":"file","path":"/etc/passwd"}}`, KindBadPath},
		{"bad path dotdot", callOpts{files: files}, `{"url":"http://` + api + `/","output":{"type":"file","path":"/volume/tmp/../../etc/passwd"}}`, KindBadPath},
		{"bad path missing body file", callOpts{files: files}, `{"method":"POST","url":"http://` + api + `/","body":{"type":"file","path":"/volume/data/missing"}}`, KindBadPath},
		{"connection refused", callOpts{}, fmt.Sprintf(`{"url":"http://closed.example.com:%d/"}`, closedPort), KindConnection},
		{"connection dns", callOpts{}, `{"url":"http://nodns.example.com/"}`, KindConnection},
		{"connection tls", callOpts{}, fmt.Sprintf(`{"url":"https://tls.example.com:%d/"}`, tlsPort), KindConnection},
		{"connection reset", callOpts{}, `{"url":"http://` + api + `/reset"}`, KindConnection},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			o := tc.opts
			o.policy = base
			c := newTestCall(t, o)
			g := newGuest(t, c)
			r := g.roundTrip(tc.doc)
			t.Log(r.raw)
			wantKind(t, r, tc.want)
			if strings.Contains(r.raw, "s3cr3t") {
				t.Fatalf("secret in response: %s", r.raw)
			}
		})
	}
	// abi is covered by TestHostFunctionsRequestWhileHeldIsABIError.
}

func TestResponseDocumentsAreCompactJSON(t *testing.T) {
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "<b>&</b>") })
	c := newTestCall(t, callOpts{policy: PolicyConfig{Allow: []string{srv.hostport("127.0.0.1")}, AllowPrivate: loopback()}})
	out := c.Do(context.Background(), []byte(fmt.Sprintf(`{"url":"http://%s/"}`, srv.hostport("127.0.0.1"))))
	var buf bytes.Buffer
	if err := json.Compact(&buf, out); err != nil || buf.String() != string(out) {
		t.Fatalf("not compact JSON: %s", out)
	}
	if !strings.Contains(string(out), `"text":"<b>&</b>"`) {
		t.Fatalf("text not byte for byte: %s", out)
	}
}
