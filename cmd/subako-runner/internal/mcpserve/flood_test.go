package mcpserve

import (
	"bufio"
	"context"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/subako/subako-runner/cmd/subako-runner/internal/loopback"
	"github.com/subako/subako-runner/cmd/subako-runner/internal/loopback/loopbacktest"
)

// serveLikeTheCLI serves srv on loopback as `mcp --http` does (the
// limiter of loopback.DefaultMaxConns connections and its read deadlines)
// and returns the address and the limiter.
func serveLikeTheCLI(t testing.TB, srv *Server) (string, *loopback.ConnLimiter) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	conns := loopback.NewConnLimiter(loopback.DefaultMaxConns)
	mux := http.NewServeMux()
	mux.Handle("/mcp", srv.Handler())
	hs := conns.Server(context.Background(), mux)
	go hs.Serve(conns.Listener(ln))
	t.Cleanup(func() { hs.Close() })
	return ln.Addr().String(), conns
}

// TestSlowBodyFlood: while 256 connections (every connection the server
// holds) each send an initialize body a byte at a time, a new client gets
// its session (before, every new connection was reset), and the slow
// connections stay open but one, whose place it took.
func TestSlowBodyFlood(t *testing.T) {
	f := newFixture(t)
	srv := New(f.load(t, testdata+"packages/cgreet"), Options{Logger: f.log})
	t.Cleanup(func() { srv.Close(context.Background()) })
	addr, conns := serveLikeTheCLI(t, srv)
	slow := loopbacktest.SlowBodies(t, addr, "/mcp", loopback.DefaultMaxConns, "")
	loopbacktest.WaitUntil(t, "every connection counted", func() bool { return conns.Len() == loopback.DefaultMaxConns })
	resp, body := rawPost(t, "http://"+addr+"/mcp", "", "", initializeBody)
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Mcp-Session-Id") == "" {
		t.Fatalf("a new client during the flood: %d %s", resp.StatusCode, body)
	}
	if n := loopbacktest.StillOpen(slow); n != loopback.DefaultMaxConns-1 {
		t.Errorf("%d slow connections still open, want %d", n, loopback.DefaultMaxConns-1)
	}
}

// TestSlowBodiesHoldNoSession: a session is counted once its initialize
// has arrived whole, so initialize bodies sent a byte at a time hold no
// session (before, as many as the bound took every session: 503).
func TestSlowBodiesHoldNoSession(t *testing.T) {
	f := newFixture(t)
	const max = 4
	srv := New(f.load(t, testdata+"packages/cgreet"), Options{Logger: f.log, MaxSessions: max})
	t.Cleanup(func() { srv.Close(context.Background()) })
	addr, conns := serveLikeTheCLI(t, srv)
	loopbacktest.SlowBodies(t, addr, "/mcp", 2*max, "")
	loopbacktest.WaitUntil(t, "every connection counted", func() bool { return conns.Len() == 2*max })
	for i := range max {
		resp, body := rawPost(t, "http://"+addr+"/mcp", "", "", initializeBody)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("session %d during the flood: %d %s", i, resp.StatusCode, body)
		}
	}
}

// TestUnknownSessionIsNotRead: a POST naming a session this server does
// not have is answered 404 before its body is read (a body of a made-up
// session was read whole first: 250 such bodies of 4 MiB held 2.45 GB),
// and the connection is closed.
func TestUnknownSessionIsNotRead(t *testing.T) {
	f := newFixture(t)
	srv := New(f.load(t, testdata+"packages/cgreet"), Options{Logger: f.log})
	t.Cleanup(func() { srv.Close(context.Background()) })
	addr, _ := serveLikeTheCLI(t, srv)
	c := loopbacktest.SlowBodies(t, addr, "/mcp", 1, "Mcp-Session-Id: made-up\r\n")[0]
	c.SetReadDeadline(time.Now().Add(time.Minute)) // a bound on a hang, not a measure
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("no answer while the body is unsent: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound || !resp.Close {
		t.Errorf("status %d, close %v: want 404 and the connection closed", resp.StatusCode, resp.Close)
	}
}

// BenchmarkAnswerDuringSlowBodyFlood measures a new client's initialize
// (a fresh connection each time) while 256 connections send their bodies
// a byte at a time: the target is under 100 ms.
func BenchmarkAnswerDuringSlowBodyFlood(b *testing.B) {
	f := newFixture(b)
	srv := New(f.load(b, testdata+"packages/cgreet"), Options{Logger: f.log, MaxSessions: 1 << 20})
	b.Cleanup(func() { srv.Close(context.Background()) })
	addr, conns := serveLikeTheCLI(b, srv)
	loopbacktest.SlowBodies(b, addr, "/mcp", loopback.DefaultMaxConns, "")
	loopbacktest.WaitUntil(b, "every connection counted", func() bool { return conns.Len() == loopback.DefaultMaxConns })
	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	b.ResetTimer()
	for b.Loop() {
		req, _ := http.NewRequest(http.MethodPost, "http://"+addr+"/mcp", strings.NewReader(initializeBody))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		resp, err := client.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			b.Fatalf("status %d", resp.StatusCode)
		}
	}
}
