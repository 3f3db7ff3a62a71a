// Package loopback holds the rules every local HTTP server of the CLI
// (`mcp --http`, `inspect`) follows, because each runs a package's code on
// the machine it listens on: listen on loopback unless told otherwise, and
// answer only requests that address this machine by a name a legitimate
// client uses, which defeats DNS rebinding (a rebound name still arrives in
// Host).
package loopback

import (
	"fmt"
	"net"
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

// DefaultMaxConns is how many connections LimitListener lets a server of
// the CLI hold at once: far more than local clients open, far fewer than
// the file descriptors a flood of idle keep-alive connections would take.
const DefaultMaxConns = 256

// IdleTimeout closes a keep-alive connection that carries no request for
// that long; ReadHeaderTimeout bounds the wait for a request's headers (a
// slowloris client). Both are set on the CLI's HTTP servers.
const (
	IdleTimeout       = time.Minute
	ReadHeaderTimeout = 10 * time.Second
)

// LimitListener accepts at most n connections at once: at the bound,
// Accept waits until one closes, so new connections wait in the kernel's
// backlog instead of taking memory and file descriptors here.
func LimitListener(l net.Listener, n int) net.Listener {
	if n <= 0 {
		n = DefaultMaxConns
	}
	return &limitListener{Listener: l, sem: make(chan struct{}, n), done: make(chan struct{})}
}

type limitListener struct {
	net.Listener
	sem       chan struct{}
	closeOnce sync.Once
	done      chan struct{}
}

func (l *limitListener) Accept() (net.Conn, error) {
	select {
	case l.sem <- struct{}{}:
	case <-l.done:
		return nil, net.ErrClosed
	}
	c, err := l.Listener.Accept()
	if err != nil {
		<-l.sem
		return nil, err
	}
	return &limitConn{Conn: c, release: func() { <-l.sem }}, nil
}

func (l *limitListener) Close() error {
	err := l.Listener.Close()
	l.closeOnce.Do(func() { close(l.done) })
	return err
}

type limitConn struct {
	net.Conn
	once    sync.Once
	release func()
}

func (c *limitConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(c.release)
	return err
}
