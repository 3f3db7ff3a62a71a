// Package loopback holds the rules every local HTTP server of the CLI
// (`mcp --http`, `inspect`) follows, because each runs a package's code on
// the machine it listens on: listen on loopback unless told otherwise, and
// answer only requests that address this machine by a name a legitimate
// client uses, which defeats DNS rebinding (a rebound name still arrives in
// Host).
package loopback

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"time"
)

// HostAllowed reports whether a request's Host (or an Origin's host), with
// or without a port, names this machine: localhost, a loopback address, one
// of allowedHosts, or with allowRemote any IP address. Names compare
// lowercased, without brackets or a trailing dot.
func HostAllowed(hostport string, allowedHosts []string, allowRemote bool) bool {
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.ToLower(strings.Trim(host, "[]")), ".")
	if host == "" {
		return false
	}
	if host == "localhost" || slices.Contains(allowedHosts, host) {
		return true
	}
	ip, err := netip.ParseAddr(host)
	if err != nil || ip.Zone() != "" {
		return false
	}
	return ip.Unmap().IsLoopback() || allowRemote
}

// ListenAddr refuses an address other machines could reach unless
// allowRemote: the host part must be localhost or a loopback address (an
// empty host, ":8080", listens on every interface). A bare port number is
// read as 127.0.0.1:PORT. It returns the address to listen on. flag and
// remoteFlag name the command-line flags in the error (e.g. "--http" and
// "--http-allow-remote").
func ListenAddr(addr string, allowRemote bool, flag, remoteFlag string) (string, error) {
	if addr != "" && strings.Trim(addr, "0123456789") == "" {
		addr = "127.0.0.1:" + addr
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "", fmt.Errorf("%s %q: want HOST:PORT or PORT: %v", flag, addr, err)
	}
	if port == "" {
		return "", fmt.Errorf("%s %q: no port", flag, addr)
	}
	if allowRemote || host == "localhost" {
		return addr, nil
	}
	if ip, err := netip.ParseAddr(host); err == nil && ip.Unmap().IsLoopback() {
		return addr, nil
	}
	what := fmt.Sprintf("%q is not a loopback address", host)
	if host == "" {
		what = "an empty host listens on every interface"
	}
	return "", fmt.Errorf("%s %q: %s; other machines could call the package's tools (add %s to mean it)", flag, addr, what, remoteFlag)
}

// DefaultMaxConns is how many connections a ConnLimiter lets a server of
// the CLI hold at once: far more than local clients open, far fewer than
// the file descriptors a flood of idle keep-alive connections would take.
const DefaultMaxConns = 256

// IdleTimeout closes a keep-alive connection that carries no request for
// that long; ReadHeaderTimeout bounds the wait for a request's headers and
// BodyReadTimeout the read of its body, from the end of its headers (a
// slowloris client, sending either a byte at a time). All three are set by
// ConnLimiter.Server.
const (
	IdleTimeout       = time.Minute
	ReadHeaderTimeout = 10 * time.Second
	BodyReadTimeout   = 30 * time.Second
)

// ConnLimiter bounds the connections an HTTP server holds. Serve with the
// server Server makes on a listener wrapped by Listener: at the bound, a
// new connection closes the one that has waited longest without a complete
// request (idle keep-alive, open and silent, or still sending its
// request's body); when every connection has a complete request in flight,
// the new one is closed instead. So a flood of idle connections, or of
// requests whose bodies come a byte at a time, costs at most the bound, and
// a client arriving during it is still served.
type ConnLimiter struct {
	max int

	mu    sync.Mutex
	conns map[net.Conn]*connUse
}

type connUse struct {
	busy  bool      // a complete request is in flight: never shed
	since time.Time // since when it has waited (idle, or reading a request)
}

// connKey carries a request's connection in its context (Server's
// ConnContext), for the handler that tells the limiter its request is
// complete.
type connKey struct{}

// Server is the http.Server every local server of the CLI runs: h behind
// the header and body read deadlines, its connections counted by cl (serve
// it on cl.Listener), and its requests' contexts derived from ctx, so a
// request in flight ends with the command.
func (cl *ConnLimiter) Server(ctx context.Context, h http.Handler) *http.Server {
	return cl.server(ctx, h, BodyReadTimeout)
}

func (cl *ConnLimiter) server(ctx context.Context, h http.Handler, bodyTimeout time.Duration) *http.Server {
	return &http.Server{
		Handler:           cl.bodyDeadline(h, bodyTimeout),
		ReadHeaderTimeout: ReadHeaderTimeout,
		IdleTimeout:       IdleTimeout,
		ConnState:         cl.ConnState,
		ConnContext:       func(c context.Context, conn net.Conn) context.Context { return context.WithValue(c, connKey{}, conn) },
		BaseContext:       func(net.Listener) context.Context { return ctx },
	}
}

// bodyDeadline gives a request's body timeout to arrive, and tells
// the limiter once it has (a request without a body is complete at once).
// The deadline is lifted at the end of the body: a response may take as
// long as its call.
func (cl *ConnLimiter) bodyDeadline(h http.Handler, timeout time.Duration) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		conn, _ := r.Context().Value(connKey{}).(net.Conn)
		if r.Body == nil || r.Body == http.NoBody {
			cl.complete(conn)
		} else {
			rc := http.NewResponseController(w)
			_ = rc.SetReadDeadline(time.Now().Add(timeout))
			r.Body = &completingBody{ReadCloser: r.Body, done: func() {
				cl.complete(conn)
				_ = rc.SetReadDeadline(time.Time{})
			}}
		}
		h.ServeHTTP(w, r)
	})
}

// completingBody calls done once its body has been read to the end.
type completingBody struct {
	io.ReadCloser
	done func()
	once sync.Once
}

func (b *completingBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err == io.EOF {
		b.once.Do(b.done)
	}
	return n, err
}

// complete marks c's request complete: c is no longer shed for a new
// connection until it is idle again.
func (cl *ConnLimiter) complete(c net.Conn) {
	cl.mu.Lock()
	defer cl.mu.Unlock()
	if u := cl.conns[c]; u != nil {
		u.busy = true
	}
}

// NewConnLimiter makes a limiter of n connections (DefaultMaxConns when n
// is not positive).
func NewConnLimiter(n int) *ConnLimiter {
	if n <= 0 {
		n = DefaultMaxConns
	}
	return &ConnLimiter{max: n, conns: map[net.Conn]*connUse{}}
}

// Listener wraps l so that each accepted connection counts against the
// bound.
func (cl *ConnLimiter) Listener(l net.Listener) net.Listener {
	return &limitListener{Listener: l, cl: cl}
}

// ConnState is the http.Server hook that tells the limiter where each
// connection is: a request begun (its body still to come, until the
// handler reads it to the end), or idle.
func (cl *ConnLimiter) ConnState(c net.Conn, st http.ConnState) {
	cl.mu.Lock()
	defer cl.mu.Unlock()
	u := cl.conns[c]
	if u == nil {
		return
	}
	switch st {
	case http.StateActive:
		u.busy, u.since = false, time.Now()
	case http.StateIdle:
		u.busy, u.since = false, time.Now()
	case http.StateClosed, http.StateHijacked:
		delete(cl.conns, c)
	}
}

// admit counts c, choosing a connection to close when the bound is
// reached: the one waiting longest without a complete request, or c
// itself when every one has a complete request in flight.
func (cl *ConnLimiter) admit(c net.Conn) (victim net.Conn) {
	cl.mu.Lock()
	defer cl.mu.Unlock()
	if len(cl.conns) >= cl.max {
		var oldest *connUse
		for o, u := range cl.conns {
			if !u.busy && (oldest == nil || u.since.Before(oldest.since)) {
				oldest, victim = u, o
			}
		}
		if victim == nil {
			return c
		}
		delete(cl.conns, victim)
	}
	cl.conns[c] = &connUse{since: time.Now()}
	return victim
}

func (cl *ConnLimiter) forget(c net.Conn) {
	cl.mu.Lock()
	delete(cl.conns, c)
	cl.mu.Unlock()
}

// Busy is the number of connections with a complete request in flight.
func (cl *ConnLimiter) Busy() int {
	cl.mu.Lock()
	defer cl.mu.Unlock()
	n := 0
	for _, u := range cl.conns {
		if u.busy {
			n++
		}
	}
	return n
}

// Len is the number of connections counted now.
func (cl *ConnLimiter) Len() int {
	cl.mu.Lock()
	defer cl.mu.Unlock()
	return len(cl.conns)
}

type limitListener struct {
	net.Listener
	cl *ConnLimiter
}

func (l *limitListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		lc := &limitConn{Conn: c, cl: l.cl}
		victim := l.cl.admit(lc)
		if victim == net.Conn(lc) {
			c.Close() // every connection is busy: refuse this one
			continue
		}
		if victim != nil {
			victim.Close()
		}
		return lc, nil
	}
}

type limitConn struct {
	net.Conn
	cl   *ConnLimiter
	once sync.Once
}

func (c *limitConn) Close() error {
	c.once.Do(func() { c.cl.forget(c) })
	return c.Conn.Close()
}

// NormalizeHosts returns the names of a --http-allow-host or
// --listen-allow-host flag (named flag in the error) as HostAllowed
// compares them: spaces around a name trimmed (as the --allow-host
// allowlist trims its entries), lowercased, without brackets or a trailing
// dot. A name that is empty, holds a space, a port or a path is refused
// with a message rather than kept to never match.
func NormalizeHosts(names []string, flag string) ([]string, error) {
	var out []string
	for _, raw := range names {
		n := strings.TrimSuffix(strings.ToLower(strings.Trim(strings.TrimSpace(raw), "[]")), ".")
		switch {
		case n == "":
			return nil, fmt.Errorf("%s %q: empty host name", flag, raw)
		case strings.ContainsAny(n, " \t/?#@"):
			return nil, fmt.Errorf("%s %q: want a host name or IP address alone, e.g. mybox.local", flag, raw)
		case strings.Count(n, ":") == 1:
			return nil, fmt.Errorf("%s %q: give the name without a port (any port of this server is answered)", flag, raw)
		}
		out = append(out, n)
	}
	return out, nil
}
