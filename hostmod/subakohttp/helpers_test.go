package subakohttp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/subako/subako-runner/limits"
)

// dirFiles is a Files over a temporary directory standing for /volume.
type dirFiles struct{ root string }

func newDirFiles(t *testing.T) *dirFiles {
	t.Helper()
	root := t.TempDir()
	for _, d := range []string{"tmp", "data"} {
		if err := os.Mkdir(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return &dirFiles{root: root}
}

func (f *dirFiles) host(guest string) (string, error) {
	rel, ok := strings.CutPrefix(guest, "/volume/")
	if !ok || (!strings.HasPrefix(rel, "tmp/") && !strings.HasPrefix(rel, "data/")) {
		return "", errors.New("outside the volume")
	}
	return filepath.Join(f.root, filepath.FromSlash(rel)), nil
}

// OpenFile passes flag and perm through unchanged, as the runtime's
// confined mounts do, so what the tests see is what the host asked for.
func (f *dirFiles) OpenFile(p string, flag int, perm fs.FileMode) (*os.File, error) {
	h, err := f.host(p)
	if err != nil {
		return nil, err
	}
	return os.OpenFile(h, flag, perm)
}

func (f *dirFiles) read(t *testing.T, guest string) []byte {
	t.Helper()
	h, err := f.host(guest)
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(h)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func (f *dirFiles) write(t *testing.T, guest string, data []byte) {
	t.Helper()
	h, err := f.host(guest)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(h, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

// server is a loopback test server that counts the requests it got.
type server struct {
	*httptest.Server
	hits atomic.Int64
	port int
}

// newServerOn starts an HTTP server listening on ip (a loopback address).
func newServerOn(t testing.TB, ip string, h http.HandlerFunc) *server {
	t.Helper()
	s := &server{}
	ts := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.hits.Add(1)
		h(w, r)
	}))
	ln, err := net.Listen("tcp", net.JoinHostPort(ip, "0"))
	if err != nil {
		t.Fatalf("listen on %s: %v", ip, err)
	}
	ts.Listener.Close()
	ts.Listener = ln
	ts.Start()
	t.Cleanup(ts.Close)
	s.Server = ts
	s.port = ln.Addr().(*net.TCPAddr).Port
	return s
}

func newServer(t *testing.T, h http.HandlerFunc) *server { return newServerOn(t, "127.0.0.1", h) }

func (s *server) hostport(name string) string { return fmt.Sprintf("%s:%d", name, s.port) }

// callOpts shapes a test Call.
type callOpts struct {
	policy PolicyConfig
	files  Files
	budget *limits.WriteBudget
	limits *limits.Limits
	hook   func(c *Call)
}

// newTestCall builds a Call whose resolver never touches real DNS: names
// not pinned by Resolve fail to resolve.
func newTestCall(t *testing.T, o callOpts) *Call {
	t.Helper()
	p, err := NewPolicy(o.policy)
	if err != nil {
		t.Fatalf("NewPolicy: %v", err)
	}
	l := limits.Default()
	if o.limits != nil {
		l = *o.limits
	}
	if o.budget == nil {
		o.budget = limits.NewCallBudget(limits.Limits{WriteBudget: l.WriteBudget})
	}
	c := NewCall(CallConfig{Policy: p, Files: o.files, Budget: o.budget, Limits: l})
	c.lookup = func(ctx context.Context, host string) ([]netip.Addr, error) {
		return nil, &net.DNSError{Err: "no such host (tests never use real DNS)", Name: host, IsNotFound: true}
	}
	if o.hook != nil {
		o.hook(c)
	}
	return c
}

// result is a decoded response document.
type result struct {
	OK *struct {
		Status  int               `json:"status"`
		Headers map[string]string `json:"headers"`
		Body    struct {
			Type  string `json:"type"`
			Text  string `json:"text"`
			Path  string `json:"path"`
			Bytes int64  `json:"bytes"`
		} `json:"body"`
	} `json:"ok"`
	Error *struct {
		Kind    string `json:"kind"`
		Message string `json:"message"`
	} `json:"error"`
	raw string
}

func decode(t *testing.T, b []byte) result {
	t.Helper()
	var r result
	d := json.NewDecoder(strings.NewReader(string(b)))
	d.DisallowUnknownFields()
	if err := d.Decode(&r); err != nil {
		t.Fatalf("response %s is not a response document: %v", b, err)
	}
	if (r.OK == nil) == (r.Error == nil) {
		t.Fatalf("response %s must have exactly one of ok and error", b)
	}
	r.raw = string(b)
	return r
}

func do(t *testing.T, c *Call, doc string) result {
	t.Helper()
	return decode(t, c.Do(context.Background(), []byte(doc)))
}

func wantKind(t *testing.T, r result, kind Kind) {
	t.Helper()
	if r.Error == nil {
		t.Fatalf("want error %s, got %s", kind, r.raw)
	}
	if r.Error.Kind != string(kind) {
		t.Fatalf("want error %s, got %s", kind, r.raw)
	}
	if r.Error.Message == "" {
		t.Fatalf("error %s without a message", kind)
	}
}

func wantOK(t *testing.T, r result) {
	t.Helper()
	if r.OK == nil {
		t.Fatalf("want ok, got %s", r.raw)
	}
}

// jsonString quotes s for a request document.
func jsonString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

func loopback() []string { return []string{"127.0.0.1/32"} }

func pin(hostport string, addrs ...string) map[string][]string {
	return map[string][]string{hostport: addrs}
}

func merge(ms ...map[string][]string) map[string][]string {
	out := map[string][]string{}
	for _, m := range ms {
		for k, v := range m {
			out[k] = append(out[k], v...)
		}
	}
	return out
}

func newServerTB(tb testing.TB, h http.HandlerFunc) string {
	return newServerOn(tb, "127.0.0.1", h).hostport("127.0.0.1")
}

func mkdir(root, name string) error { return os.Mkdir(filepath.Join(root, name), 0o755) }
