package loopback

import (
	"io"
	"net"
	"net/http"
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
