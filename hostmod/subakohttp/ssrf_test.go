package subakohttp

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

// TestSSRFAttemptsAreBlocked is the adversarial table: every attempt aims
// at a live loopback server (the victim), so a bypass would show up as an
// answered request. No attempt runs with the destination check off, and
// none with a private range allowed unless the case says so.
func TestSSRFAttemptsAreBlocked(t *testing.T) {
	victim := newServer(t, func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "internal secrets") })
	P := victim.port
	at := func(host string) string { return fmt.Sprintf("%s:%d", host, P) }
	// pinned names: an allowed name whose DNS answer is a private address.
	name := "svc.example.com"
	pinTo := func(addrs ...string) PolicyConfig {
		return PolicyConfig{Allow: []string{at(name)}, Resolve: pin(at(name), addrs...)}
	}
	allowIP := func(entry string) PolicyConfig { return PolicyConfig{Allow: []string{entry}} }
	wildcard := PolicyConfig{Allow: []string{"*.example.com", at("*.example.com"), "api.example.com"}}

	cases := []struct {
		name   string
		policy PolicyConfig
		url    string
		want   Kind
	}{
		// IP literals, no entry for them.
		{"loopback literal not listed", wildcard, "http://" + at("127.0.0.1") + "/", KindHostNotAllowed},
		{"decimal ipv4 not listed", wildcard, "http://" + at("2130706433") + "/", KindHostNotAllowed},
		{"hex ipv4 not listed", wildcard, "http://" + at("0x7f.1") + "/", KindHostNotAllowed},
		{"mapped ipv6 vs v4 entry", allowIP(at("127.0.0.1")), "http://" + at("[::ffff:127.0.0.1]") + "/", KindHostNotAllowed},
		// IP literals listed exactly: the destination check still applies.
		{"loopback literal listed", allowIP(at("127.0.0.1")), "http://" + at("127.0.0.1") + "/", KindForbiddenDestination},
		{"decimal ipv4", allowIP(at("127.0.0.1")), "http://" + at("2130706433") + "/", KindForbiddenDestination},
		{"hex short ipv4", allowIP(at("127.0.0.1")), "http://" + at("0x7f.1") + "/", KindForbiddenDestination},
		{"hex whole ipv4", allowIP(at("127.0.0.1")), "http://" + at("0x7f000001") + "/", KindForbiddenDestination},
		{"octal ipv4", allowIP(at("127.0.0.1")), "http://" + at("0177.0.0.1") + "/", KindForbiddenDestination},
		{"short ipv4", allowIP(at("127.0.0.1")), "http://" + at("127.1") + "/", KindForbiddenDestination},
		{"fullwidth digits", allowIP(at("127.0.0.1")), "http://" + at("１２７.０.０.１") + "/", KindForbiddenDestination},
		{"trailing dot ipv4", allowIP(at("127.0.0.1")), "http://" + at("127.0.0.1.") + "/", KindForbiddenDestination},
		{"mapped ipv6 literal", allowIP(at("[::ffff:127.0.0.1]")), "http://" + at("[::ffff:127.0.0.1]") + "/", KindForbiddenDestination},
		{"mapped ipv6 hex form", allowIP(at("[::ffff:7f00:1]")), "http://" + at("[::ffff:7f00:1]") + "/", KindForbiddenDestination},
		{"ipv6 loopback", allowIP(at("[::1]")), "http://" + at("[::1]") + "/", KindForbiddenDestination},
		{"ipv6 unspecified", allowIP(at("[::]")), "http://" + at("[::]") + "/", KindForbiddenDestination},
		{"ipv4 unspecified", allowIP(at("0.0.0.0")), "http://" + at("0.0.0.0") + "/", KindForbiddenDestination},
		{"zero short form", allowIP(at("0.0.0.0")), "http://" + at("0") + "/", KindForbiddenDestination},
		{"metadata literal", allowIP("169.254.169.254"), "http://169.254.169.254/latest/meta-data/", KindForbiddenDestination},
		{"metadata ipv6 literal", allowIP("[fd00:ec2::254]"), "http://[fd00:ec2::254]/latest/meta-data/", KindForbiddenDestination},
		{"nat64 literal", allowIP("[64:ff9b::7f00:1]"), "http://[64:ff9b::7f00:1]/", KindForbiddenDestination},
		// Allowed names resolving to non-public addresses.
		{"name to loopback", pinTo("127.0.0.1"), "http://" + at(name) + "/", KindForbiddenDestination},
		{"name to 127.0.0.2", pinTo("127.0.0.2"), "http://" + at(name) + "/", KindForbiddenDestination},
		{"name to metadata", pinTo("169.254.169.254"), "http://" + at(name) + "/", KindForbiddenDestination},
		{"name to alibaba metadata", pinTo("100.100.100.200"), "http://" + at(name) + "/", KindForbiddenDestination},
		{"name to azure wireserver", pinTo("168.63.129.16"), "http://" + at(name) + "/", KindForbiddenDestination},
		{"name to 10/8", pinTo("10.0.0.1"), "http://" + at(name) + "/", KindForbiddenDestination},
		{"name to 172.16/12", pinTo("172.31.255.254"), "http://" + at(name) + "/", KindForbiddenDestination},
		{"name to 192.168/16", pinTo("192.168.1.1"), "http://" + at(name) + "/", KindForbiddenDestination},
		{"name to cgnat", pinTo("100.64.0.1"), "http://" + at(name) + "/", KindForbiddenDestination},
		{"name to link-local", pinTo("169.254.1.1"), "http://" + at(name) + "/", KindForbiddenDestination},
		{"name to multicast", pinTo("224.0.0.1"), "http://" + at(name) + "/", KindForbiddenDestination},
		{"name to broadcast", pinTo("255.255.255.255"), "http://" + at(name) + "/", KindForbiddenDestination},
		{"name to reserved", pinTo("240.0.0.1"), "http://" + at(name) + "/", KindForbiddenDestination},
		{"name to benchmarking", pinTo("198.18.0.1"), "http://" + at(name) + "/", KindForbiddenDestination},
		{"name to documentation", pinTo("203.0.113.7"), "http://" + at(name) + "/", KindForbiddenDestination},
		{"name to this-network", pinTo("0.1.2.3"), "http://" + at(name) + "/", KindForbiddenDestination},
		{"name to ipv6 loopback", pinTo("::1"), "http://" + at(name) + "/", KindForbiddenDestination},
		{"name to ipv6 unspecified", pinTo("::"), "http://" + at(name) + "/", KindForbiddenDestination},
		{"name to ipv6 link-local", pinTo("fe80::1"), "http://" + at(name) + "/", KindForbiddenDestination},
		{"name to ula", pinTo("fd12:3456::1"), "http://" + at(name) + "/", KindForbiddenDestination},
		{"name to aws ipv6 metadata", pinTo("fd00:ec2::254"), "http://" + at(name) + "/", KindForbiddenDestination},
		{"name to ipv6 multicast", pinTo("ff02::1"), "http://" + at(name) + "/", KindForbiddenDestination},
		{"name to mapped loopback", pinTo("::ffff:127.0.0.1"), "http://" + at(name) + "/", KindForbiddenDestination},
		{"name to mapped private", pinTo("::ffff:10.0.0.1"), "http://" + at(name) + "/", KindForbiddenDestination},
		{"name to compatible loopback", pinTo("::127.0.0.1"), "http://" + at(name) + "/", KindForbiddenDestination},
		{"name to nat64 loopback", pinTo("64:ff9b::127.0.0.1"), "http://" + at(name) + "/", KindForbiddenDestination},
		{"name to nat64 public", pinTo("64:ff9b::8.8.8.8"), "http://" + at(name) + "/", KindForbiddenDestination},
		{"name to local nat64", pinTo("64:ff9b:1:7f00:0:100::"), "http://" + at(name) + "/", KindForbiddenDestination},
		{"name to 6to4 loopback", pinTo("2002:7f00:1::1"), "http://" + at(name) + "/", KindForbiddenDestination},
		{"name to 6to4 metadata", pinTo("2002:a9fe:a9fe::1"), "http://" + at(name) + "/", KindForbiddenDestination},
		{"name to teredo loopback", pinTo("2001:0:4136:e378:8000:63bf:80ff:fffe"), "http://" + at(name) + "/", KindForbiddenDestination},
		{"name to srv6", pinTo("5f00::1"), "http://" + at(name) + "/", KindForbiddenDestination},
		{"name to reserved ipv6", pinTo("4000::1"), "http://" + at(name) + "/", KindForbiddenDestination},
		{"any answer private", pinTo("8.8.8.8", "127.0.0.1"), "http://" + at(name) + "/", KindForbiddenDestination},
		{"trailing dot name", pinTo("127.0.0.1"), "http://" + at(name+".") + "/", KindForbiddenDestination},
		{"uppercase name", pinTo("127.0.0.1"), "http://" + at(strings.ToUpper(name)) + "/", KindForbiddenDestination},
		// URL tricks.
		{"userinfo", pinTo("8.8.8.8"), "http://user:pw@" + at(name) + "/", KindInvalidRequest},
		{"userinfo host confusion", allowIP(at("127.0.0.1")), "http://" + at(name) + "@" + at("127.0.0.1") + "/", KindInvalidRequest},
		{"backslash confusion", pinTo("8.8.8.8"), "http://" + at(name) + "\\@127.0.0.1/", KindInvalidRequest},
		{"ipv6 zone", allowIP("[fe80::1]"), "http://[fe80::1%25lo]/", KindInvalidRequest},
		{"other scheme", pinTo("8.8.8.8"), "file:///etc/passwd", KindInvalidRequest},
		{"gopher", pinTo("8.8.8.8"), "gopher://" + at(name) + "/", KindInvalidRequest},
		{"bare wildcard domain", wildcard, "http://example.com/", KindHostNotAllowed},
		{"suffix confusion", wildcard, "http://example.com.evil.net/", KindHostNotAllowed},
		{"label confusion", wildcard, "http://evilexample.com/", KindHostNotAllowed},
		{"homograph", wildcard, "http://аpi.exаmple.com/", KindHostNotAllowed},
		{"port not listed", PolicyConfig{Allow: []string{name}, Resolve: pin(at(name), "8.8.8.8")}, "http://" + at(name) + "/", KindHostNotAllowed},
		{"default port is the scheme's", PolicyConfig{Allow: []string{name}}, "http://" + name + ":443/", KindHostNotAllowed},
	}
	if len(cases) < 40 {
		t.Fatalf("only %d attempts", len(cases))
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := newTestCall(t, callOpts{policy: tc.policy, hook: refuseNonLoopbackDials})
			r := do(t, c, `{"url":`+jsonString(tc.url)+`}`)
			wantKind(t, r, tc.want)
		})
	}
	if n := victim.hits.Load(); n != 0 {
		t.Fatalf("the victim was reached %d times", n)
	}
}

// refuseNonLoopbackDials makes sure no test traffic leaves the machine: a
// dial of a non-loopback address (one that passed the check) fails as
// refused and is never attempted.
func refuseNonLoopbackDials(c *Call) {
	c.rawDial = func(ctx context.Context, network, addr string) (net.Conn, error) {
		ap, err := netip.ParseAddrPort(addr)
		if err != nil || !ap.Addr().IsLoopback() {
			return nil, &net.OpError{Op: "dial", Net: network, Err: errConnRefusedForTest}
		}
		var d net.Dialer
		return d.DialContext(ctx, network, addr)
	}
}

var errConnRefusedForTest = errors.New("connection refused (test: not loopback)")

// TestDNSRebindingCannotPass uses a resolver that answers a public address
// first and loopback afterwards. The host dials exactly what it checked, so
// the first request goes to the public address (refused by the test dialer,
// never sent) and the second is refused by the destination check.
func TestDNSRebindingCannotPass(t *testing.T) {
	victim := newServer(t, func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "internal") })
	host := victim.hostport("rebind.example.com")
	var lookups atomic.Int64
	var mu sync.Mutex
	var dialled []string
	c := newTestCall(t, callOpts{policy: PolicyConfig{Allow: []string{host}}, hook: func(c *Call) {
		refuseNonLoopbackDials(c)
		inner := c.rawDial
		c.rawDial = func(ctx context.Context, network, addr string) (net.Conn, error) {
			mu.Lock()
			dialled = append(dialled, addr)
			mu.Unlock()
			return inner(ctx, network, addr)
		}
		c.lookup = func(ctx context.Context, name string) ([]netip.Addr, error) {
			if lookups.Add(1) == 1 {
				return []netip.Addr{netip.MustParseAddr("93.184.216.34")}, nil
			}
			return []netip.Addr{netip.MustParseAddr("127.0.0.1")}, nil
		}
	}})
	doc := `{"url":"http://` + host + `/"}`
	wantKind(t, do(t, c, doc), KindConnection)
	wantKind(t, do(t, c, doc), KindForbiddenDestination)
	wantKind(t, do(t, c, doc), KindForbiddenDestination)
	if victim.hits.Load() != 0 {
		t.Fatal("rebinding reached the loopback server")
	}
	for _, a := range dialled {
		if strings.HasPrefix(a, "127.") {
			t.Fatalf("dialled %s", a)
		}
	}
	if len(dialled) != 1 || !strings.HasPrefix(dialled[0], "93.184.216.34:") {
		t.Fatalf("dialled %v, want exactly the checked public address", dialled)
	}
}

// TestRedirectsAreCheckedEveryHop: the first server is allowed (on
// 127.0.0.2, let through by AllowPrivate=127.0.0.2/32) and redirects to
// targets that must each be refused.
func TestRedirectsAreCheckedEveryHop(t *testing.T) {
	victim := newServer(t, func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "internal") })
	var target atomic.Value
	front := newServerOn(t, "127.0.0.2", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Location", target.Load().(string))
		w.WriteHeader(http.StatusFound)
	})
	front2 := front.hostport("front.example.com")
	policy := PolicyConfig{
		Allow: []string{front2, victim.hostport("127.0.0.1"), victim.hostport("victim.example.com"), "169.254.169.254"},
		Resolve: merge(pin(front2, "127.0.0.2"),
			pin(victim.hostport("victim.example.com"), "127.0.0.1")),
		AllowPrivate: []netip.Prefix{netip.MustParsePrefix("127.0.0.2/32")},
	}
	cases := []struct {
		name, location string
		want           Kind
	}{
		{"to loopback literal", "http://" + victim.hostport("127.0.0.1") + "/", KindForbiddenDestination},
		{"to name resolving to loopback", "http://" + victim.hostport("victim.example.com") + "/", KindForbiddenDestination},
		{"to metadata", "http://169.254.169.254/latest/meta-data/", KindForbiddenDestination},
		{"to host not allowed", "http://evil.example.org/", KindHostNotAllowed},
		{"to other port", "http://" + front.hostport("front.example.com") + "0/", KindHostNotAllowed},
		{"to file scheme", "file:///etc/passwd", KindHostNotAllowed},
		{"to userinfo", "http://u:p@" + front2 + "/", KindHostNotAllowed},
		{"to decimal loopback", "http://" + victim.hostport("2130706433") + "/", KindForbiddenDestination},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			target.Store(tc.location)
			c := newTestCall(t, callOpts{policy: policy, hook: refuseNonLoopbackDials})
			wantKind(t, do(t, c, `{"url":"http://`+front2+`/"}`), tc.want)
		})
	}
	if victim.hits.Load() != 0 {
		t.Fatal("a redirect reached the victim")
	}
	if front.hits.Load() == 0 {
		t.Fatal("the allowed front server was never reached; the test proves nothing")
	}
}

// TestCredentialsDoNotCrossRedirects: the entry of the first host injects a
// credential; the server redirects to another allowed host (and to the same
// host on another port), which must not see it.
func TestCredentialsDoNotCrossRedirects(t *testing.T) {
	var seenMu sync.Mutex
	seen := map[string]string{}
	record := func(who string) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			seenMu.Lock()
			seen[who] = r.Header.Get("X-Api-Key") + "|" + r.Header.Get("Authorization")
			seenMu.Unlock()
			io.WriteString(w, who)
		}
	}
	other := newServer(t, record("other"))
	var next atomic.Value
	origin := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/final" {
			record("origin")(w, r)
			return
		}
		seenMu.Lock()
		seen["origin-first"] = r.Header.Get("X-Api-Key")
		seenMu.Unlock()
		http.Redirect(w, r, next.Load().(string), http.StatusTemporaryRedirect)
	})
	o, x := origin.hostport("api.example.com"), other.hostport("other.example.com")
	x2 := other.hostport("api.example.com") // same host name, other port
	c := newTestCall(t, callOpts{policy: PolicyConfig{
		Allow:   []string{o, x, x2},
		Resolve: merge(pin(o, "127.0.0.1"), pin(x, "127.0.0.1"), pin(x2, "127.0.0.1")),
		Credentials: []Credential{
			{Pattern: o, Header: "X-Api-Key", Value: func(context.Context) (string, bool) { return "s3cr3t", true }},
		},
		AllowPrivate: loopback(),
	}})
	for _, loc := range []string{"http://" + x + "/", "http://" + x2 + "/"} {
		next.Store(loc)
		r := do(t, c, `{"url":"http://`+o+`/start"}`)
		wantOK(t, r)
		if r.OK.Body.Text != "other" {
			t.Fatalf("redirect not followed: %s", r.raw)
		}
		if seen["origin-first"] != "s3cr3t" {
			t.Fatalf("the origin did not get its credential: %q", seen["origin-first"])
		}
		if seen["other"] != "|" {
			t.Fatalf("credential leaked across the redirect to %s: %q", loc, seen["other"])
		}
	}
	// A redirect back to the origin itself keeps the credential.
	next.Store("/final")
	wantOK(t, do(t, c, `{"url":"http://`+o+`/start"}`))
	if seen["origin"] != "s3cr3t|" {
		t.Fatalf("same-origin redirect lost the credential: %q", seen["origin"])
	}
}

func TestAllowPrivateRangeKeepsOtherChecks(t *testing.T) {
	victim := newServer(t, func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "v") })
	front := newServerOn(t, "127.0.0.2", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "http://"+victim.hostport("127.0.0.1")+"/", http.StatusFound)
	})
	c := newTestCall(t, callOpts{policy: PolicyConfig{
		Allow:        []string{front.hostport("127.0.0.2"), victim.hostport("127.0.0.1")},
		AllowPrivate: []netip.Prefix{netip.MustParsePrefix("127.0.0.2/32")},
	}})
	wantKind(t, do(t, c, `{"url":"http://`+front.hostport("127.0.0.2")+`/"}`), KindForbiddenDestination)
	wantKind(t, do(t, c, `{"url":"http://`+front.hostport("127.0.0.3")+`/"}`), KindHostNotAllowed)
	if victim.hits.Load() != 0 || front.hits.Load() != 1 {
		t.Fatalf("hits victim=%d front=%d", victim.hits.Load(), front.hits.Load())
	}
}

func TestDisableDestinationCheckKeepsAllowlist(t *testing.T) {
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") })
	c := newTestCall(t, callOpts{policy: PolicyConfig{Allow: []string{srv.hostport("127.0.0.1")}, DisableDestinationCheck: true}})
	wantOK(t, do(t, c, `{"url":"http://`+srv.hostport("127.0.0.1")+`/"}`))
	wantKind(t, do(t, c, `{"url":"http://`+srv.hostport("localhost")+`/"}`), KindHostNotAllowed)
}

func TestNonPublicClassifiesEmbeddedAddresses(t *testing.T) {
	cases := []struct {
		addr, wantIn string
	}{
		{"2001:0:4136:e378:8000:63bf:80ff:fffe", "127.0.0.1"}, // Teredo client 127.0.0.1
		{"2002:a9fe:a9fe::1", "169.254.169.254"},
		{"64:ff9b::a00:1", "10.0.0.1"},
		{"64:ff9b:1:a01:2:300::", "10.1.2.3"},
		{"::ffff:192.168.0.1", "192.168.0.1"},
		{"::10.0.0.1", "10.0.0.1"},
	}
	for _, tc := range cases {
		why := nonPublic(netip.MustParseAddr(tc.addr))
		if !strings.Contains(why, tc.wantIn) {
			t.Errorf("nonPublic(%s) = %q, want it to name %s", tc.addr, why, tc.wantIn)
		}
	}
	for _, pub := range []string{"8.8.8.8", "1.1.1.1", "93.184.216.34", "2606:4700:4700::1111", "::ffff:8.8.8.8", "2a00:1450:4001::1"} {
		if why := nonPublic(netip.MustParseAddr(pub)); why != "" {
			t.Errorf("public %s refused: %s", pub, why)
		}
	}
}
