package loopback

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/subako/subako-runner/cmd/subako-runner/internal/loopback/loopbacktest"
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
	loopbacktest.WaitUntil(t, "two requests in flight", func() bool { return cl.Busy() == 2 })
	slow := loopbacktest.SlowBodies(t, addr, "/", max-2, "")
	loopbacktest.WaitUntil(t, "every connection counted", func() bool { return cl.Len() == max })
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
	if n := len(slow) - loopbacktest.StillOpen(slow); n != 1 {
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
	loopbacktest.SlowBodies(t, inner2.Addr().String(), "/", 1, "")
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
