package subakohttp

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/subako/subako-runner/limits"
)

// echo answers with what it received, as JSON-ish text the tests inspect.
type echoed struct {
	method, path, contentType, body string
}

func echoServer(t *testing.T) (*server, func() echoed) {
	var mu sync.Mutex
	var last echoed
	s := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/r301", "/r302", "/r303", "/r307", "/r308":
			code := map[string]int{"/r301": 301, "/r302": 302, "/r303": 303, "/r307": 307, "/r308": 308}[r.URL.Path]
			http.Redirect(w, r, "/echo", code)
			return
		}
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		last = echoed{r.Method, r.URL.Path, r.Header.Get("Content-Type"), string(b)}
		mu.Unlock()
		w.Header().Add("X-Multi", "a")
		w.Header().Add("X-Multi", "b")
		w.Header().Set("Content-Type", "text/plain")
		io.WriteString(w, "got:"+string(b))
	})
	return s, func() echoed { mu.Lock(); defer mu.Unlock(); return last }
}

func TestRequestBodiesAndInlineResponse(t *testing.T) {
	s, last := echoServer(t)
	files := newDirFiles(t)
	files.write(t, "/volume/data/in.bin", []byte("from a file"))
	c := newTestCall(t, callOpts{files: files, policy: PolicyConfig{Allow: []string{s.hostport("127.0.0.1")}, AllowPrivate: loopback()}})
	u := jsonString("http://" + s.hostport("127.0.0.1") + "/echo")
	cases := []struct {
		name, body, wantBody, wantType string
	}{
		{"json", `{"type":"json","json":{ "order" : 1042 }}`, `{"order":1042}`, "application/json"},
		{"text", `{"type":"text","text":"héllo"}`, "héllo", "text/plain; charset=utf-8"},
		{"base64", `{"type":"base64","data":"` + base64.StdEncoding.EncodeToString([]byte("raw\x00bytes")) + `"}`, "raw\x00bytes", ""},
		{"file", `{"type":"file","path":"/volume/data/in.bin"}`, "from a file", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := do(t, c, `{"method":"POST","url":`+u+`,"body":`+tc.body+`}`)
			wantOK(t, r)
			got := last()
			if got.method != "POST" || got.body != tc.wantBody || got.contentType != tc.wantType {
				t.Fatalf("server saw %+v", got)
			}
			if r.OK.Status != 200 || r.OK.Body.Type != "inline" || r.OK.Body.Text != "got:"+tc.wantBody {
				t.Fatalf("response %s", r.raw)
			}
			if r.OK.Headers["x-multi"] != "a, b" || r.OK.Headers["content-type"] != "text/plain" {
				t.Fatalf("headers %v", r.OK.Headers)
			}
		})
	}
	// The guest's own content-type wins over the default.
	wantOK(t, do(t, c, `{"method":"PUT","url":`+u+`,"headers":{"Content-Type":"application/vnd.x+json"},"body":{"type":"json","json":1}}`))
	if got := last(); got.contentType != "application/vnd.x+json" || got.method != "PUT" {
		t.Fatalf("server saw %+v", got)
	}
	st := c.Stats()
	if st.Requests != 5 || st.BytesSent == 0 || st.BytesReceived == 0 {
		t.Fatalf("stats %+v", st)
	}
}

func TestRedirectMethodAndBodyRules(t *testing.T) {
	s, last := echoServer(t)
	c := newTestCall(t, callOpts{policy: PolicyConfig{Allow: []string{s.hostport("127.0.0.1")}, AllowPrivate: loopback()}})
	base := "http://" + s.hostport("127.0.0.1")
	cases := []struct {
		path, method, wantMethod, wantBody, wantType string
	}{
		{"/r301", "POST", "GET", "", ""},
		{"/r302", "POST", "GET", "", ""},
		{"/r303", "PUT", "GET", "", ""},
		{"/r303", "HEAD", "HEAD", "", ""},
		{"/r307", "POST", "POST", "payload", "text/plain; charset=utf-8"},
		{"/r308", "PATCH", "PATCH", "payload", "text/plain; charset=utf-8"},
	}
	for _, tc := range cases {
		t.Run(tc.path+" "+tc.method, func(t *testing.T) {
			body := `,"body":{"type":"text","text":"payload"}`
			if tc.method == "HEAD" {
				body = ""
			}
			r := do(t, c, `{"method":"`+tc.method+`","url":"`+base+tc.path+`"`+body+`}`)
			wantOK(t, r)
			got := last()
			if got.method != tc.wantMethod || got.body != tc.wantBody || got.contentType != tc.wantType || got.path != "/echo" {
				t.Fatalf("server saw %+v", got)
			}
		})
	}
	r := do(t, c, `{"url":"`+base+`/r302","follow_redirects":false}`)
	wantOK(t, r)
	if r.OK.Status != 302 || r.OK.Headers["location"] != "/echo" {
		t.Fatalf("not followed must return the redirect: %s", r.raw)
	}
}

// TestRedirectLimitIsExact pins the redirect limit's boundary: a chain of
// exactly HTTPRedirects redirects is followed to its end, one more is
// too_many_redirects, and the server never sees the hop past the limit.
func TestRedirectLimitIsExact(t *testing.T) {
	var hops atomic.Int64
	s := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		var n int
		if _, err := fmt.Sscanf(r.URL.Path, "/chain/%d", &n); err == nil && n > 0 {
			hops.Add(1)
			http.Redirect(w, r, fmt.Sprintf("/chain/%d", n-1), http.StatusFound)
			return
		}
		io.WriteString(w, "end")
	})
	lim := limits.Default()
	lim.HTTPRedirects = 3
	c := newTestCall(t, callOpts{policy: PolicyConfig{Allow: []string{s.hostport("127.0.0.1")}, AllowPrivate: loopback()}, limits: &lim})
	base := "http://" + s.hostport("127.0.0.1")

	r := do(t, c, `{"url":"`+base+`/chain/3"}`)
	wantOK(t, r)
	if r.OK.Status != 200 || hops.Load() != 3 {
		t.Fatalf("3 redirects under a limit of 3: %s after %d redirects", r.raw, hops.Load())
	}
	hops.Store(0)
	wantKind(t, do(t, c, `{"url":"`+base+`/chain/4"}`), KindTooManyRedirects)
	if hops.Load() != 4 {
		t.Fatalf("the server answered %d redirects, want 4 (the fourth is refused, not followed)", hops.Load())
	}
}

func TestFileOutputStreamsAndCounts(t *testing.T) {
	payload := bytes.Repeat([]byte{0, 1, 2, 0xff}, 300<<10) // 1.2 MiB, binary
	s := newServer(t, func(w http.ResponseWriter, r *http.Request) { w.Write(payload) })
	files := newDirFiles(t)
	budget := limits.NewCallBudget(limits.Limits{WriteBudget: limits.GiB})
	c := newTestCall(t, callOpts{files: files, budget: budget, policy: PolicyConfig{Allow: []string{s.hostport("127.0.0.1")}, AllowPrivate: loopback()}})
	r := do(t, c, `{"url":"http://`+s.hostport("127.0.0.1")+`/","output":{"type":"file","path":"/volume/tmp/out.bin"}}`)
	wantOK(t, r)
	if r.OK.Body.Type != "file" || r.OK.Body.Path != "/volume/tmp/out.bin" || r.OK.Body.Bytes != int64(len(payload)) {
		t.Fatalf("response %s", r.raw)
	}
	if sha256.Sum256(files.read(t, "/volume/tmp/out.bin")) != sha256.Sum256(payload) {
		t.Fatal("file content differs")
	}
	if want := int64(len(payload)); budget.Used() != want || budget.Entries() != 1 { // the body; the new file's entry has its own cap
		t.Fatalf("budget used %d bytes and %d entries, want %d and 1", budget.Used(), budget.Entries(), want)
	}
	want := `{"ok":{"status":200,"headers":{`
	if !strings.HasPrefix(r.raw, want) || !strings.HasSuffix(r.raw, `"body":{"type":"file","path":"/volume/tmp/out.bin","bytes":1228800}}}`) {
		t.Fatalf("document shape %s", r.raw)
	}
}

func TestFileOutputOverBudgetIsEmptied(t *testing.T) {
	s := newServer(t, func(w http.ResponseWriter, r *http.Request) { w.Write(bytes.Repeat([]byte("x"), 1<<20)) })
	files := newDirFiles(t)
	budget := limits.NewCallBudget(limits.Limits{WriteBudget: 600 << 10})
	c := newTestCall(t, callOpts{files: files, budget: budget, policy: PolicyConfig{Allow: []string{s.hostport("127.0.0.1")}, AllowPrivate: loopback()}})
	wantKind(t, do(t, c, `{"url":"http://`+s.hostport("127.0.0.1")+`/","output":{"type":"file","path":"/volume/data/o"}}`), KindWriteBudget)
	if got := files.read(t, "/volume/data/o"); len(got) != 0 {
		t.Fatalf("partial file of %d bytes left behind", len(got))
	}
	if budget.Used() > budget.Limit() {
		t.Fatalf("budget crossed: %d > %d", budget.Used(), budget.Limit())
	}
}

func TestTLSWithTestRoots(t *testing.T) {
	ts := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "secure") }))
	t.Cleanup(ts.Close)
	port := ts.Listener.Addr().(*net.TCPAddr).Port
	hp := net.JoinHostPort("example.com", itoa(port)) // the test certificate names example.com
	p, err := NewPolicy(PolicyConfig{Allow: []string{hp}, Resolve: pin(hp, "127.0.0.1"), AllowPrivate: loopback()})
	if err != nil {
		t.Fatal(err)
	}
	c := NewCall(CallConfig{Policy: p, RootCAs: ts.Client().Transport.(*http.Transport).TLSClientConfig.RootCAs})
	r := decode(t, c.Do(context.Background(), []byte(`{"url":"https://`+hp+`/"}`)))
	wantOK(t, r)
	if r.OK.Body.Text != "secure" {
		t.Fatalf("got %s", r.raw)
	}
}

func TestEnvironmentProxyIsIgnored(t *testing.T) {
	s := newServer(t, func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "direct") })
	proxy := newServer(t, func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "proxied") })
	t.Setenv("HTTP_PROXY", "http://"+proxy.hostport("127.0.0.1"))
	t.Setenv("http_proxy", "http://"+proxy.hostport("127.0.0.1"))
	t.Setenv("NO_PROXY", "")
	c := newTestCall(t, callOpts{policy: PolicyConfig{Allow: []string{s.hostport("api.example.com")}, Resolve: pin(s.hostport("api.example.com"), "127.0.0.1"), AllowPrivate: loopback()}})
	r := do(t, c, `{"url":"http://`+s.hostport("api.example.com")+`/"}`)
	wantOK(t, r)
	if r.OK.Body.Text != "direct" || proxy.hits.Load() != 0 {
		t.Fatalf("went through the proxy: %s", r.raw)
	}
}

func TestCallDeadlineBoundsTimeout(t *testing.T) {
	s := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-time.After(20 * time.Second):
		}
	})
	c := newTestCall(t, callOpts{policy: PolicyConfig{Allow: []string{s.hostport("127.0.0.1")}, AllowPrivate: loopback()}})
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	r := decode(t, c.Do(ctx, []byte(`{"url":"http://`+s.hostport("127.0.0.1")+`/","timeout_ms":60000}`)))
	wantKind(t, r, KindTimeout)
	if time.Since(start) > 10*time.Second {
		t.Fatal("timeout_ms outlived the call's deadline")
	}
}

func TestCredentialsInjectedNeverLogged(t *testing.T) {
	var got string
	s := newServer(t, func(w http.ResponseWriter, r *http.Request) { got = r.Header.Get("Authorization") })
	hp := s.hostport("api.example.com")
	c := newTestCall(t, callOpts{policy: PolicyConfig{
		Allow: []string{hp}, Resolve: pin(hp, "127.0.0.1"), AllowPrivate: loopback(),
		Credentials: []Credential{{Pattern: hp, Header: "Authorization", Value: func(context.Context) (string, bool) { return "Bearer t0ken", true }}},
	}})
	r := do(t, c, `{"url":"http://`+hp+`/"}`)
	wantOK(t, r)
	if got != "Bearer t0ken" {
		t.Fatalf("server saw %q", got)
	}
	if strings.Contains(r.raw, "t0ken") {
		t.Fatal("secret in the response document")
	}
	// A provider returning a value with a line break is refused, not sent.
	c2 := newTestCall(t, callOpts{policy: PolicyConfig{
		Allow: []string{hp}, Resolve: pin(hp, "127.0.0.1"), AllowPrivate: loopback(),
		Credentials: []Credential{{Pattern: hp, Header: "Authorization", Value: func(context.Context) (string, bool) { return "x\r\nX-Evil: 1", true }}},
	}})
	r = do(t, c2, `{"url":"http://`+hp+`/"}`)
	wantKind(t, r, KindCredentialUnavailable)
	if strings.Contains(r.raw, "Evil") {
		t.Fatal("credential value in the message")
	}
}

func itoa(n int) string {
	var b []byte
	for n > 0 || len(b) == 0 {
		b = append([]byte{byte('0' + n%10)}, b...)
		n /= 10
	}
	return string(b)
}

// TestFileCopiesStopWithTheCallContext: a file body being uploaded and a
// file output being downloaded both stop when the call's context ends,
// however much is left (1 GiB each way here). Bounded by bytes, not time.
func TestFileCopiesStopWithTheCallContext(t *testing.T) {
	const total = 1 << 30
	const bound = 64 << 20 // generous: what buffers in flight may still move
	var cancel atomic.Value
	stop := func() { cancel.Load().(context.CancelFunc)() }
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		buf := make([]byte, 256<<10)
		var n int64
		switch r.URL.Path {
		case "/upload":
			for n < total {
				m, err := r.Body.Read(buf)
				n += int64(m)
				if n >= 1<<20 {
					stop()
				}
				if err != nil {
					return
				}
			}
		case "/download":
			for n < total {
				m, err := w.Write(buf)
				n += int64(m)
				if n >= 1<<20 {
					stop()
				}
				if err != nil {
					return
				}
			}
		}
	})
	files := newDirFiles(t)
	h, _ := files.host("/volume/data/big.bin")
	if err := os.WriteFile(h, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(h, total); err != nil { // sparse: costs no disk
		t.Fatal(err)
	}
	u := "http://" + srv.hostport("127.0.0.1")
	for _, tc := range []struct{ name, doc string }{
		{"body", `{"method":"POST","url":"` + u + `/upload","body":{"type":"file","path":"/volume/data/big.bin"}}`},
		{"output", `{"url":"` + u + `/download","output":{"type":"file","path":"/volume/tmp/out.bin"}}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			budget := limits.NewCallBudget(limits.Limits{WriteBudget: 2 << 30})
			c := newTestCall(t, callOpts{files: files, budget: budget, policy: PolicyConfig{Allow: []string{srv.hostport("127.0.0.1")}, AllowPrivate: loopback()}})
			ctx, cf := context.WithCancel(context.Background())
			defer cf()
			cancel.Store(cf)
			wantKind(t, decode(t, c.Do(ctx, []byte(tc.doc))), KindTimeout)
			st := c.Stats()
			if st.BytesSent > bound || st.BytesReceived > bound || budget.Used() > bound {
				t.Fatalf("the copy went on after the context ended: %+v, %d bytes written", st, budget.Used())
			}
			t.Logf("after the context ended at ~1 MiB: %+v, %d bytes written", st, budget.Used())
		})
	}
}

// A file output that creates a file makes a directory entry, as the WASI
// layer's creations do: it costs one of the call's MaxEntries (and no
// byte of the write budget, which is file data only), so downloads cannot
// fill a volume with empty files past the cap. Writing again into an
// existing file costs no entry.
func TestFileOutputsChargeTheirDirectoryEntry(t *testing.T) {
	s := newServer(t, func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "x") })
	files := newDirFiles(t)
	budget := limits.NewCallBudget(limits.Limits{WriteBudget: limits.GiB, MaxEntries: 2})
	c := newTestCall(t, callOpts{files: files, budget: budget, policy: PolicyConfig{Allow: []string{s.hostport("127.0.0.1")}, AllowPrivate: loopback()}})
	get := func(path string) result {
		return do(t, c, `{"url":"http://`+s.hostport("127.0.0.1")+`/","output":{"type":"file","path":"`+path+`"}}`)
	}
	wantOK(t, get("/volume/tmp/a"))
	wantOK(t, get("/volume/tmp/a")) // the same file again: no new entry
	wantOK(t, get("/volume/data/b"))
	if budget.Entries() != 2 || budget.Used() != 3 {
		t.Fatalf("%d entries and %d bytes charged, want 2 and 3", budget.Entries(), budget.Used())
	}
	wantKind(t, get("/volume/tmp/c"), KindWriteBudget)
	if h, _ := files.host("/volume/tmp/c"); !notExist(h) {
		t.Fatal("the refused output was created anyway")
	}
	wantOK(t, get("/volume/data/b")) // existing files stay writable at the cap
}

func notExist(path string) bool {
	_, err := os.Stat(path)
	return os.IsNotExist(err)
}
