package inspect

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/subako/subako-runner/cmd/subako-runner/internal/loopback"
	"github.com/subako/subako-runner/cmd/subako-runner/internal/loopback/loopbacktest"
)

// serveLikeTheCLI serves a greet package's inspect page on loopback as
// `inspect` does (the limiter of loopback.DefaultMaxConns connections and
// its read deadlines).
func serveLikeTheCLI(t *testing.T) (*Server, string, *loopback.ConnLimiter) {
	t.Helper()
	srv, err := New(context.Background(), Config{Runtime: newRuntime(t), Path: greetPackage(t), History: 4})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	conns := loopback.NewConnLimiter(loopback.DefaultMaxConns)
	hs := conns.Server(context.Background(), srv)
	go hs.Serve(conns.Listener(ln))
	t.Cleanup(func() {
		hs.Close()
		srv.Close(context.Background())
	})
	return srv, ln.Addr().String(), conns
}

// TestRefusalDoesNotWaitForTheBody: a request without the token is
// answered 401 while its body is still unsent, and its connection closed
// (before, the 401 waited for the whole body: a client sending a byte every
// few seconds held the connection as long as it liked).
func TestRefusalDoesNotWaitForTheBody(t *testing.T) {
	_, addr, _ := serveLikeTheCLI(t)
	c := loopbacktest.SlowBodies(t, addr, "/api/call", 1, "")[0]
	c.SetReadDeadline(time.Now().Add(time.Minute)) // a bound on a hang, not a measure
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatalf("no answer while the body is unsent: %v", err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("status %d, want 401", resp.StatusCode)
	}
	if _, err := br.ReadByte(); err == nil || errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("the connection stayed open after the refusal: %v", err)
	}
}

// TestInspectSlowBodyFlood: while 256 connections with the token (every
// connection the server holds) send a call's body a byte at a time, the
// page still loads; the slow connections stay open but the one whose place
// it took.
func TestInspectSlowBodyFlood(t *testing.T) {
	srv, addr, conns := serveLikeTheCLI(t)
	slow := loopbacktest.SlowBodies(t, addr, "/api/call", loopback.DefaultMaxConns, tokenHeader+": "+srv.Token()+"\r\n")
	loopbacktest.WaitUntil(t, "every connection counted", func() bool { return conns.Len() == loopback.DefaultMaxConns })
	req, _ := http.NewRequest(http.MethodGet, "http://"+addr+"/api/package", nil)
	req.Header.Set(tokenHeader, srv.Token())
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("a client during the flood: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("status %d", resp.StatusCode)
	}
	open := loopbacktest.StillOpen(slow)
	if open != loopback.DefaultMaxConns-1 {
		t.Errorf("%d slow connections still open, want %d", open, loopback.DefaultMaxConns-1)
	}
}
