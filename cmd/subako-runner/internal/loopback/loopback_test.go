package loopback

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

func TestListenAddr(t *testing.T) {
	for _, tc := range []struct {
		addr   string
		remote bool
		want   string // "" = refused
	}{
		{"127.0.0.1:8080", false, "127.0.0.1:8080"},
		{"localhost:0", false, "localhost:0"},
		{"[::1]:9000", false, "[::1]:9000"},
		{"127.0.0.2:1", false, "127.0.0.2:1"},
		{"8080", false, "127.0.0.1:8080"},
		{":8080", false, ""},
		{"0.0.0.0:8080", false, ""},
		{"[::]:8080", false, ""},
		{"192.0.2.1:8080", false, ""},
		{"example.com:8080", false, ""},
		{"[::ffff:127.0.0.1]:80", false, "[::ffff:127.0.0.1]:80"},
		{"0.0.0.0:8080", true, "0.0.0.0:8080"},
		{":8080", true, ":8080"},
		{"127.0.0.1", false, ""},
		{"127.0.0.1:", false, ""},
		{"", false, ""},
	} {
		got, err := ListenAddr(tc.addr, tc.remote, "--http", "--http-allow-remote")
		if got != tc.want || (err == nil) != (tc.want != "") {
			t.Errorf("ListenAddr(%q, %v) = %q, %v; want %q", tc.addr, tc.remote, got, err, tc.want)
		}
	}
}

func TestHostAllowed(t *testing.T) {
	for _, tc := range []struct {
		host    string
		allowed []string
		remote  bool
		want    bool
	}{
		{"localhost:8080", nil, false, true},
		{"LOCALHOST.", nil, false, true},
		{"127.0.0.1", nil, false, true},
		{"127.1.2.3:9", nil, false, true},
		{"[::1]:9", nil, false, true},
		{"[::ffff:127.0.0.1]:9", nil, false, true},
		{"attacker.example:80", nil, false, false},
		{"localhost.attacker.example", nil, false, false},
		{"192.0.2.1:80", nil, false, false},
		{"192.0.2.1:80", nil, true, true},
		{"[fe80::1%eth0]:80", nil, true, false},
		{"box.lan:80", []string{"box.lan"}, false, true},
		{"", nil, true, false},
	} {
		if got := HostAllowed(tc.host, tc.allowed, tc.remote); got != tc.want {
			t.Errorf("HostAllowed(%q, %v, %v) = %v, want %v", tc.host, tc.allowed, tc.remote, got, tc.want)
		}
	}
}

// TestConnLimiter: a flood of silent connections (19,980 idle ones reached
// 19,992 of 20,000 file descriptors before) holds at most the bound, and a
// client arriving during it is served: the connection silent the longest
// makes room for it.
func TestConnLimiter(t *testing.T) {
	inner, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	cl := NewConnLimiter(4)
	hs := &http.Server{
		Handler:   http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") }),
		ConnState: cl.ConnState,
	}
	go hs.Serve(cl.Listener(inner))
	t.Cleanup(func() { hs.Close() })
	for range 50 {
		c, err := net.Dial("tcp", inner.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
	}
	resp, err := (&http.Client{Timeout: time.Minute}).Get("http://" + inner.Addr().String() + "/")
	if err != nil {
		t.Fatalf("a client during the flood: %v", err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(body) != "ok" {
		t.Errorf("answer %q", body)
	}
	if n := cl.Len(); n > 4 {
		t.Errorf("%d connections held, bound 4", n)
	}
}

// slowBodies opens n connections to addr that each send a POST's headers
// and the first byte of a body of 1,000 and no more (the slow-body
// flood), and returns them once the limiter counts n connections.
func slowBodies(t testing.TB, addr, path string, n int, headers string) []net.Conn {
	t.Helper()
	var conns []net.Conn
	for range n {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		if _, err := fmt.Fprintf(c, "POST %s HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n%s\r\n{", path, addr, headers); err != nil {
			t.Fatal(err)
		}
		conns = append(conns, c)
	}
	return conns
}

// closedByServer reports which of conns the server has closed: a read
// ends at once with EOF (or a reset) on those, and waits out a short
// deadline on the others.
func closedByServer(conns []net.Conn) int {
	closed := 0
	for _, c := range conns {
		c.SetReadDeadline(time.Now().Add(10 * time.Millisecond))
		_, err := c.Read(make([]byte, 1))
		var ne net.Error
		if !errors.As(err, &ne) || !ne.Timeout() {
			closed++
		}
	}
	return closed
}

// TestSlowBodiesAreShed: connections whose request bodies come a byte at a
// time count as waiting, not busy: at the bound a new client is served by
// closing the one waiting longest (before, 256 slow bodies held every
// connection and every new one was reset), while a connection with a
// complete request in flight is never closed; and a body that does not
// arrive within the body timeout ends with a timeout error.
func TestSlowBodiesAreShed(t *testing.T) {
	inner, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	const max = 8
	cl := NewConnLimiter(max)
	release := make(chan struct{})
	bodyErr := make(chan error, 2*max)
	hs := cl.server(context.Background(), http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, err := io.ReadAll(r.Body)
		if r.URL.Path == "/hold" {
			<-release
		}
		if err != nil {
			bodyErr <- err
			return
		}
		io.WriteString(w, "ok")
	}), time.Hour)
	go hs.Serve(cl.Listener(inner))
	t.Cleanup(func() { close(release); hs.Close() })
	addr := inner.Addr().String()
	// Two connections with a complete request in flight.
	held := make(chan error, 2)
	for range 2 {
		go func() {
			resp, err := http.Post("http://"+addr+"/hold", "text/plain", strings.NewReader("x"))
			if err == nil {
				resp.Body.Close()
			}
			held <- err
		}()
	}
	waitUntil(t, func() bool { return cl.Busy() == 2 })
	slow := slowBodies(t, addr, "/", max-2, "")
	waitUntil(t, func() bool { return cl.Len() == max })
	for i := range max {
		resp, err := (&http.Client{Timeout: time.Minute}).Post("http://"+addr+"/", "text/plain", strings.NewReader("hello"))
		if err != nil {
			t.Fatalf("client %d during the flood: %v", i, err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if string(body) != "ok" {
			t.Fatalf("answer %q", body)
		}
	}
	// The clients came one after the other on one keep-alive connection:
	// it took the place of one slow body.
	if n := closedByServer(slow); n != 1 {
		t.Errorf("%d of %d slow bodies closed, want the one that made room", n, max-2)
	}
	select {
	case err := <-held:
		t.Errorf("a request in flight was cut: %v", err)
	default:
	}
	if n := cl.Len(); n > max {
		t.Errorf("%d connections held, bound %d", n, max)
	}

	// The body deadline.
	short := NewConnLimiter(max)
	timedOut := make(chan error, 1)
	hs2 := short.server(context.Background(), http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, err := io.ReadAll(r.Body)
		timedOut <- err
	}), 50*time.Millisecond)
	inner2, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go hs2.Serve(short.Listener(inner2))
	t.Cleanup(func() { hs2.Close() })
	slowBodies(t, inner2.Addr().String(), "/", 1, "")
	select {
	case err := <-timedOut:
		var ne net.Error
		if !errors.As(err, &ne) || !ne.Timeout() {
			t.Errorf("a body past its deadline: %v, want a timeout", err)
		}
	case <-time.After(time.Minute):
		t.Fatal("a body past its deadline was waited for")
	}
}

func waitUntil(t testing.TB, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); !cond(); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("condition not reached in a minute")
		}
	}
}

// TestNormalizeHosts: the names of --http-allow-host and
// --listen-allow-host are trimmed like --allow-host's entries (" Box" was
// kept with its space and never matched), and a name that cannot be one is
// refused with a message.
func TestNormalizeHosts(t *testing.T) {
	got, err := NormalizeHosts([]string{" MyBox.Local. ", "\t10.0.0.2", "[::2]", "::3"}, "--http-allow-host")
	if err != nil || strings.Join(got, ",") != "mybox.local,10.0.0.2,::2,::3" {
		t.Errorf("got %q, %v", got, err)
	}
	if !HostAllowed("mybox.local:8080", got, false) {
		t.Error("a trimmed name does not match its Host")
	}
	for _, bad := range []string{"", "  ", "my box", "box:8080", "http://box", "box/x"} {
		if _, err := NormalizeHosts([]string{bad}, "--http-allow-host"); err == nil || !strings.Contains(err.Error(), "--http-allow-host") {
			t.Errorf("%q: %v, want a refusal naming the flag", bad, err)
		}
	}
}
