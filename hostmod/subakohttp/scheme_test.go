package subakohttp

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
)

// dualServer speaks TLS and plain HTTP on one loopback port, as a server
// (or an attacker in the path) can: a connection whose first byte is 0x16,
// a TLS handshake record, is served over TLS, any other in the clear. It
// lets a redirect change the scheme and nothing else: https://h:P to
// http://h:P.
type dualServer struct {
	port  int
	roots *x509.CertPool // trusts the certificate, which names example.com
}

// newDualServer serves h on both sides; r.TLS tells the handler which.
func newDualServer(t *testing.T, h http.HandlerFunc) *dualServer {
	t.Helper()
	// httptest's certificate, and a pool trusting it, without keeping its
	// own listener.
	cert := httptest.NewUnstartedServer(http.NotFoundHandler())
	cert.StartTLS()
	tlsCfg := cert.TLS.Clone()
	tlsCfg.NextProtos = []string{"http/1.1"}
	roots := cert.Client().Transport.(*http.Transport).TLSClientConfig.RootCAs
	cert.Close()

	inner, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ln := &sniffListener{Listener: inner, conns: make(chan net.Conn), done: make(chan struct{}), tls: tlsCfg}
	go ln.sniff()
	srv := &http.Server{Handler: h}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return &dualServer{port: inner.Addr().(*net.TCPAddr).Port, roots: roots}
}

func (s *dualServer) hostport(name string) string { return fmt.Sprintf("%s:%d", name, s.port) }

// sniffListener hands http.Server each accepted connection once its first
// byte has said whether it is TLS. The peek runs per connection, off
// Accept, so a client that sends nothing holds up no one else.
type sniffListener struct {
	net.Listener
	conns     chan net.Conn
	done      chan struct{}
	closeOnce sync.Once
	tls       *tls.Config
}

func (l *sniffListener) sniff() {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return
		}
		go func() {
			br := bufio.NewReader(c)
			first, err := br.Peek(1)
			if err != nil {
				c.Close()
				return
			}
			var conn net.Conn = &peekedConn{Conn: c, r: br}
			if first[0] == 0x16 {
				conn = tls.Server(conn, l.tls)
			}
			select {
			case l.conns <- conn:
			case <-l.done:
				c.Close()
			}
		}()
	}
}

func (l *sniffListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

func (l *sniffListener) Close() error {
	l.closeOnce.Do(func() { close(l.done) })
	return l.Listener.Close()
}

// peekedConn reads through the reader that peeked at its first byte.
type peekedConn struct {
	net.Conn
	r *bufio.Reader
}

func (c *peekedConn) Read(p []byte) (int, error) { return c.r.Read(p) }

// TestCredentialsDoNotCrossSchemeChange: the allowlist entry for h:P
// injects a credential, and h:P redirects to itself with only the scheme
// changed. A downgrade (https to http) would put the credential on the
// wire in the clear, and an upgrade is another origin too: neither hop
// carries it (curl's rule without --location-trusted). The same scheme,
// host and port keeps it, which shows the credential was injected at all.
func TestCredentialsDoNotCrossSchemeChange(t *testing.T) {
	type hit struct {
		tls       bool
		path, key string
	}
	var mu sync.Mutex
	var hits []hit
	var next string // where /start redirects to, and with which status
	var status int
	srv := newDualServer(t, func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		hits = append(hits, hit{tls: r.TLS != nil, path: r.URL.Path, key: r.Header.Get("X-Api-Key")})
		loc, code := next, status
		mu.Unlock()
		if r.URL.Path == "/start" {
			http.Redirect(w, r, loc, code)
			return
		}
		if r.TLS != nil {
			io.WriteString(w, "tls")
		} else {
			io.WriteString(w, "plain")
		}
	})
	hp := srv.hostport("example.com") // the name httptest's certificate holds
	c := newTestCall(t, callOpts{
		policy: PolicyConfig{
			Allow:   []string{hp},
			Resolve: pin(hp, "127.0.0.1"),
			Credentials: []Credential{
				{Pattern: hp, Header: "X-Api-Key", Value: func(context.Context) (string, bool) { return "s3cr3t", true }},
			},
			AllowPrivate: loopback(),
		},
		hook: func(c *Call) { c.cfg.RootCAs = srv.roots },
	})
	cases := []struct {
		name, from, to string
		status         int
		wantTLS        bool   // the side that must answer the final hop
		wantKey        string // what it must have been sent
	}{
		{"downgrade 301", "https", "http", http.StatusMovedPermanently, false, ""},
		{"downgrade 302", "https", "http", http.StatusFound, false, ""},
		{"downgrade 303", "https", "http", http.StatusSeeOther, false, ""},
		{"downgrade 307", "https", "http", http.StatusTemporaryRedirect, false, ""},
		{"downgrade 308", "https", "http", http.StatusPermanentRedirect, false, ""},
		{"upgrade 302", "http", "https", http.StatusFound, true, ""},
		{"same origin https", "https", "https", http.StatusFound, true, "s3cr3t"},
		{"same origin http", "http", "http", http.StatusFound, false, "s3cr3t"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			mu.Lock()
			hits, next, status = nil, tc.to+"://"+hp+"/final", tc.status
			mu.Unlock()
			r := do(t, c, `{"url":"`+tc.from+`://`+hp+`/start"}`)
			wantOK(t, r)
			mu.Lock()
			defer mu.Unlock()
			if len(hits) != 2 {
				t.Fatalf("want the start and the redirected hop, got %+v (%s)", hits, r.raw)
			}
			first, final := hits[0], hits[1]
			if first.path != "/start" || first.tls != (tc.from == "https") || first.key != "s3cr3t" {
				t.Fatalf("the first hop (%s) did not carry the credential the entry injects: %+v", tc.from, first)
			}
			if final.path != "/final" || final.tls != tc.wantTLS || r.OK.Body.Text != map[bool]string{true: "tls", false: "plain"}[tc.wantTLS] {
				t.Fatalf("the redirect to %s did not reach that side: %+v, %s", tc.to, final, r.raw)
			}
			if final.key != tc.wantKey {
				t.Fatalf("after %s → %s on %s the credential header was %q, want %q", tc.from, tc.to, hp, final.key, tc.wantKey)
			}
		})
	}
}
