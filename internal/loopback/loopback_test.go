package loopback

import (
	"net"
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

// TestLimitListener: at the bound a new connection is not served until
// one of the held ones closes (19,980 idle connections reached 19,992 of
// 20,000 file descriptors before).
func TestLimitListener(t *testing.T) {
	inner, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ln := LimitListener(inner, 2)
	defer ln.Close()
	accepted := make(chan net.Conn, 8)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			accepted <- c
		}
	}()
	for range 3 {
		c, err := net.Dial("tcp", inner.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
	}
	first, second := <-accepted, <-accepted
	select {
	case c := <-accepted:
		t.Fatalf("a third connection was accepted at a bound of 2: %v", c.RemoteAddr())
	case <-time.After(200 * time.Millisecond):
		// Not a timing assertion on the server: it only gives a wrong
		// Accept the chance to show itself before the bound is freed.
	}
	first.Close()
	select {
	case c := <-accepted:
		c.Close()
	case <-time.After(time.Minute):
		t.Fatal("the third connection was not accepted after one closed")
	}
	second.Close()
}
