package subakohttp

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/netip"
	"strings"
	"testing"
)

// A system resolver answers an IPv4 name in the IPv4-mapped IPv6 form
// (::ffff:127.0.0.1, as Go's does for a name in /etc/hosts): the address is
// still refused, and reported as the IPv4 address it is.
func TestMappedResolverAnswersAreRefusedAndReportedUnmapped(t *testing.T) {
	victim := newServer(t, func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "internal") })
	host := victim.hostport("intranet.example.com")
	c := newTestCall(t, callOpts{policy: PolicyConfig{Allow: []string{host}}, hook: func(c *Call) {
		c.lookup = func(ctx context.Context, name string) ([]netip.Addr, error) {
			return []netip.Addr{netip.MustParseAddr("::ffff:127.0.0.1")}, nil
		}
	}})
	r := do(t, c, `{"url":"http://`+host+`/"}`)
	wantKind(t, r, KindForbiddenDestination)
	if want := "127.0.0.1 is a loopback address (127.0.0.0/8); requests may only reach public addresses"; r.Error.Message != want {
		t.Errorf("message %q, want %q", r.Error.Message, want)
	}
	if victim.hits.Load() != 0 {
		t.Fatal("the mapped loopback answer reached the server")
	}
	// Let through only by the IPv4 range, as the flag suggested would.
	c = newTestCall(t, callOpts{policy: PolicyConfig{Allow: []string{host}, AllowPrivate: []string{"127.0.0.1/32"}}, hook: func(c *Call) {
		c.lookup = func(ctx context.Context, name string) ([]netip.Addr, error) {
			return []netip.Addr{netip.MustParseAddr("::ffff:127.0.0.1")}, nil
		}
	}})
	wantOK(t, do(t, c, `{"url":"http://`+host+`/"}`))
	// A mapped address the guest wrote itself is reported as written.
	c = newTestCall(t, callOpts{policy: PolicyConfig{Allow: []string{fmt.Sprintf("[::ffff:127.0.0.1]:%d", victim.port)}}})
	r = do(t, c, fmt.Sprintf(`{"url":"http://[::ffff:127.0.0.1]:%d/"}`, victim.port))
	wantKind(t, r, KindForbiddenDestination)
	if !strings.HasPrefix(r.Error.Message, "::ffff:127.0.0.1 is an IPv4-mapped IPv6 address of 127.0.0.1") {
		t.Errorf("message %q", r.Error.Message)
	}
}

// The embedder words the remedy of a refusal (the CLI names its flags);
// without a Remedy the message sends the author to the function's owner.
func TestRemedyWordsTheRefusals(t *testing.T) {
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "http://elsewhere.example.com:8080/", http.StatusFound)
	})
	var seen []Refusal
	remedy := func(r Refusal) string {
		seen = append(seen, r)
		if r.Kind == KindForbiddenDestination {
			return "add --allow-private " + netip.PrefixFrom(r.Addr, r.Addr.BitLen()).String()
		}
		return "add --allow-host " + r.Entry
	}
	tests := []struct {
		policy PolicyConfig
		url    string
		want   string
	}{
		{PolicyConfig{Allow: []string{"localhost"}},
			"http://localhost:8765/", "localhost:8765 is not in this function's network allowlist (http, port 8765); ask the function's owner to allow it"},
		{PolicyConfig{Allow: []string{"localhost"}, Remedy: remedy},
			"http://localhost:8765/", "localhost:8765 is not in this function's network allowlist (http, port 8765); add --allow-host localhost:8765"},
		{PolicyConfig{Remedy: remedy},
			"https://api.example.com/x", "api.example.com is not in this function's network allowlist (https, port 443); add --allow-host api.example.com"},
		{PolicyConfig{Remedy: remedy},
			"http://[::1]:9/", "[::1]:9 is not in this function's network allowlist (http, port 9); add --allow-host [::1]:9"},
		{PolicyConfig{Allow: []string{srv.hostport("127.0.0.1")}, Remedy: remedy},
			"http://" + srv.hostport("127.0.0.1") + "/", "127.0.0.1 is a loopback address (127.0.0.0/8); add --allow-private 127.0.0.1/32"},
		{PolicyConfig{Allow: []string{srv.hostport("127.0.0.1")}, AllowPrivate: []string{"127.0.0.1/32"}, Remedy: remedy},
			"http://" + srv.hostport("127.0.0.1") + "/", "a redirect led to elsewhere.example.com:8080 (http), which is not in this function's network allowlist; add --allow-host elsewhere.example.com:8080"},
		{PolicyConfig{Allow: []string{"*.amazonaws.com"}, Remedy: remedy},
			"https://bucket.s3.amazonaws.com/", `bucket.s3.amazonaws.com is under the public suffix "s3.amazonaws.com", where anyone can register names, so the allowlist entry "*.amazonaws.com" does not reach it; add --allow-host bucket.s3.amazonaws.com`},
	}
	for _, tt := range tests {
		c := newTestCall(t, callOpts{policy: tt.policy})
		r := do(t, c, `{"url":"`+tt.url+`"}`)
		if r.Error == nil || r.Error.Message != tt.want {
			t.Errorf("%s: %s\nwant message %q", tt.url, r.raw, tt.want)
		}
	}
	if len(seen) == 0 || !seen[len(seen)-2].Redirect {
		t.Errorf("the redirect's refusal did not say so: %+v", seen)
	}
}
