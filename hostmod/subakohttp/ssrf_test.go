package subakohttp

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
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
		AllowPrivate: []string{"127.0.0.2/32"},
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
		AllowPrivate: []string{"127.0.0.2/32"},
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

// TestWildcardCannotCoverPublicSuffixBelowIt: a wildcard's domain may have
// public-suffix rules below it (s3.amazonaws.com under amazonaws.com,
// blob.core.windows.net under windows.net, *.kawasaki.jp under kawasaki.jp),
// under which anyone can register a name. Such a wildcard must never reach
// those names: the entry is refused when the policy is built if a lookup
// can tell, and every host it would match is refused otherwise. The
// victim answers on loopback, so a bypass would be an answered request.
func TestWildcardCannotCoverPublicSuffixBelowIt(t *testing.T) {
	refused := []string{
		"*.kawasaki.jp",           // a wildcard rule right below: *.kawasaki.jp
		"*.s3.amazonaws.com",      // a rule itself
		"*.compute.amazonaws.com", // a wildcard rule right below
		"*.blob.core.windows.net", // a rule itself
		"*.github.io", "*.co.uk", "*.uk", "*.com",
		"*.x.compute.amazonaws.com", // inside a wildcard rule
	}
	for _, e := range refused {
		if _, err := NewPolicy(PolicyConfig{Allow: []string{e}}); err == nil {
			t.Errorf("entry %q accepted", e)
		}
	}
	for _, e := range []string{"*.example.com", "*.example.co.uk", "*.user.github.io", "*.city.kawasaki.jp", "*.my-bucket.s3.amazonaws.com"} {
		if _, err := NewPolicy(PolicyConfig{Allow: []string{e}}); err != nil {
			t.Errorf("entry %q refused: %v", e, err)
		}
	}

	victim := newServer(t, func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "reached "+r.Host) })
	at := func(host string) string { return victim.hostport(host) }
	cases := []struct {
		entry, host string
		allowed     bool
	}{
		{"*.amazonaws.com", "attacker-bucket.s3.amazonaws.com", false},
		{"*.amazonaws.com", "a.b.s3.amazonaws.com", false},
		{"*.amazonaws.com", "vm.eu-west-1.compute.amazonaws.com", false},
		{"*.amazonaws.com", "sts.amazonaws.com", true}, // under no rule: amazonaws.com's own
		{"*.windows.net", "attacker.blob.core.windows.net", false},
		{"*.core.windows.net", "attacker.blob.core.windows.net", false},
		{"*.core.windows.net", "management.core.windows.net", true},
		{"*.example.com", "api.example.com", true},
		{"*.user.github.io", "www.user.github.io", true},
		{"*.my-bucket.s3.amazonaws.com", "x.my-bucket.s3.amazonaws.com", true},
	}
	for _, tc := range cases {
		t.Run(tc.entry+" "+tc.host, func(t *testing.T) {
			before := victim.hits.Load()
			c := newTestCall(t, callOpts{
				policy: PolicyConfig{Allow: []string{at(tc.entry)}, Resolve: pin(at(tc.host), "127.0.0.1"), AllowPrivate: loopback()},
				hook:   refuseNonLoopbackDials,
			})
			r := do(t, c, `{"url":"http://`+at(tc.host)+`/"}`)
			if !tc.allowed {
				wantKind(t, r, KindHostNotAllowed)
				if !strings.Contains(r.Error.Message, "public suffix") {
					t.Errorf("the message does not say why: %s", r.Error.Message)
				}
				if victim.hits.Load() != before {
					t.Fatalf("%s reached through %s", tc.host, tc.entry)
				}
				return
			}
			wantOK(t, r)
		})
	}

	// A redirect from an allowed host to a name under a suffix below the
	// wildcard is refused on that hop too.
	front := newServerOn(t, "127.0.0.2", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "http://"+at("attacker-bucket.s3.amazonaws.com")+"/", http.StatusFound)
	})
	before := victim.hits.Load()
	c := newTestCall(t, callOpts{policy: PolicyConfig{
		Allow:        []string{at("*.amazonaws.com"), front.hostport("front.amazonaws.com")},
		Resolve:      merge(pin(at("attacker-bucket.s3.amazonaws.com"), "127.0.0.1"), pin(front.hostport("front.amazonaws.com"), "127.0.0.2")),
		AllowPrivate: []string{"127.0.0.0/8"},
	}, hook: refuseNonLoopbackDials})
	wantKind(t, do(t, c, `{"url":"http://`+front.hostport("front.amazonaws.com")+`/"}`), KindHostNotAllowed)
	if victim.hits.Load() != before || front.hits.Load() != 1 {
		t.Fatalf("redirect: victim hits %d, front hits %d", victim.hits.Load()-before, front.hits.Load())
	}
}

// TestNonRegularVolumeFilesAreRefusedWithoutBlocking: a FIFO planted in
// /volume/data (or reached through a symlink) used as a file body or a file
// output. Opening a FIFO blocks until the other end opens; the host must
// answer bad_path at once and leave no goroutine behind. The guard below
// only turns a hang into a failure: a correct host never waits on anything.
func TestNonRegularVolumeFilesAreRefusedWithoutBlocking(t *testing.T) {
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") })
	files := newDirFiles(t)
	fifo := filepath.Join(files.root, "data", "fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("fifo", filepath.Join(files.root, "data", "link")); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(files.root, "data", "dir"), 0o755); err != nil {
		t.Fatal(err)
	}
	u := jsonString("http://" + srv.hostport("127.0.0.1") + "/")
	cases := []struct{ name, doc string }{
		{"fifo body", `{"method":"POST","url":` + u + `,"body":{"type":"file","path":"/volume/data/fifo"}}`},
		{"fifo output", `{"url":` + u + `,"output":{"type":"file","path":"/volume/data/fifo"}}`},
		{"symlink to fifo body", `{"method":"POST","url":` + u + `,"body":{"type":"file","path":"/volume/data/link"}}`},
		{"symlink to fifo output", `{"url":` + u + `,"output":{"type":"file","path":"/volume/data/link"}}`},
		{"directory body", `{"method":"POST","url":` + u + `,"body":{"type":"file","path":"/volume/data/dir"}}`},
		{"directory output", `{"url":` + u + `,"output":{"type":"file","path":"/volume/data/dir"}}`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := newTestCall(t, callOpts{files: files, policy: PolicyConfig{Allow: []string{srv.hostport("127.0.0.1")}, AllowPrivate: loopback()}})
			base := runtime.NumGoroutine()
			done := make(chan []byte, 1)
			go func() { done <- c.Do(context.Background(), []byte(tc.doc)) }()
			var out []byte
			select {
			case out = <-done:
			case <-time.After(hangGuard):
				// Open the FIFO both ways without blocking, so the stuck
				// open returns and the goroutine can end, then fail.
				if f, err := os.OpenFile(fifo, os.O_RDWR|syscall.O_NONBLOCK, 0); err == nil {
					<-done
					f.Close()
				}
				t.Fatal("the request blocked on a non-regular file")
			}
			wantKind(t, decode(t, out), KindBadPath)
			waitGoroutines(t, base)
			if n := c.Stats().Requests; n != 0 {
				t.Fatalf("%d requests sent", n)
			}
		})
	}
	if srv.hits.Load() != 0 {
		t.Fatalf("the server was reached %d times", srv.hits.Load())
	}
}

// hangGuard only turns a hang into a test failure; no assertion depends on
// how long anything takes.
const hangGuard = 60 * time.Second

// waitGoroutines waits until no more goroutines run than at base: a
// goroutine stuck in the host (an open or a read that never returns) fails
// the test.
func waitGoroutines(t *testing.T, base int) {
	t.Helper()
	deadline := time.Now().Add(hangGuard)
	for runtime.NumGoroutine() > base {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<20)
			t.Fatalf("%d goroutines, %d before the request:\n%s", runtime.NumGoroutine(), base, buf[:runtime.Stack(buf, true)])
		}
		time.Sleep(time.Millisecond)
	}
}

// rawServer is a loopback TCP listener speaking just enough HTTP/1.1 to
// record every request line exactly as it arrived on the wire.
type rawServer struct {
	addr  string
	mu    sync.Mutex
	lines []string
}

// newRawServer answers each request with respond(requestLine), a full
// response head (without the final blank line); the body is empty.
func newRawServer(t *testing.T, respond func(line string) string) *rawServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &rawServer{addr: ln.Addr().String()}
	var wg sync.WaitGroup
	t.Cleanup(func() { ln.Close(); wg.Wait() })
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer conn.Close()
				br := bufio.NewReader(conn)
				line, err := br.ReadString('\n')
				if err != nil {
					return
				}
				line = strings.TrimSuffix(line, "\r\n")
				s.mu.Lock()
				s.lines = append(s.lines, line)
				s.mu.Unlock()
				for {
					h, err := br.ReadString('\n')
					if err != nil || h == "\r\n" {
						break
					}
				}
				io.WriteString(conn, respond(line)+"\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
			}()
		}
	}()
	return s
}

func (s *rawServer) seen() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.lines...)
}

// TestRequestLineCarriesNoRawSpaceOrControl: a raw space in the URL reaches
// the request line unless the host encodes it, and a server, proxy or cache
// then reads a different request target ("GET /echo?x http://127.0.0.2/
// HTTP/1.1 HTTP/1.1"). The same holds for redirect targets. Controls are
// refused; space, quotes, angle brackets and non-ASCII bytes are
// percent-encoded, as browsers do.
func TestRequestLineCarriesNoRawSpaceOrControl(t *testing.T) {
	srv := newRawServer(t, func(line string) string {
		if strings.HasPrefix(line, "GET /redirect-space ") {
			return "HTTP/1.1 302 Found\r\nLocation: /next?a b&c=\"<é>\""
		}
		if strings.HasPrefix(line, "GET /redirect-tab ") {
			return "HTTP/1.1 302 Found\r\nLocation: /next?a\tb"
		}
		return "HTTP/1.1 200 OK"
	})
	policy := PolicyConfig{Allow: []string{srv.addr}, AllowPrivate: loopback()}
	base := "http://" + srv.addr
	cases := []struct {
		target    string // path and query as the guest writes it
		wantLines []string
		want      Kind // "" for ok
	}{
		{"/echo?x http://127.0.0.2/", []string{"GET /echo?x%20http://127.0.0.2/ HTTP/1.1"}, ""},
		{"/echo?x HTTP/1.1\r\nHost: evil", nil, KindInvalidRequest},
		{"/echo?a\tb", nil, KindInvalidRequest},
		{"/echo?a\nb", nil, KindInvalidRequest},
		{"/echo?a\x00b", nil, KindInvalidRequest},
		{"/echo?a\x7fb", nil, KindInvalidRequest},
		{"/echo?a\x0bb", nil, KindInvalidRequest},
		{"/e cho/é?q=\"<é>\"&r=%41'", []string{"GET /e%20cho/%C3%A9?q=%22%3C%C3%A9%3E%22&r=%41' HTTP/1.1"}, ""},
		{"/redirect-space", []string{"GET /redirect-space HTTP/1.1", "GET /next?a%20b&c=%22%3C%C3%A9%3E%22 HTTP/1.1"}, ""},
		{"/redirect-tab", []string{"GET /redirect-tab HTTP/1.1"}, KindConnection},
	}
	for _, tc := range cases {
		t.Run(fmt.Sprintf("%q", tc.target), func(t *testing.T) {
			before := len(srv.seen())
			c := newTestCall(t, callOpts{policy: policy})
			r := do(t, c, `{"url":`+jsonString(base+tc.target)+`}`)
			if tc.want == "" {
				wantOK(t, r)
			} else {
				wantKind(t, r, tc.want)
			}
			got := srv.seen()[before:]
			if strings.Join(got, "\n") != strings.Join(tc.wantLines, "\n") {
				t.Fatalf("request lines %q, want %q", got, tc.wantLines)
			}
		})
	}
}

// TestGuestHeadersCannotShadowCredentials: many servers and frameworks (CGI,
// WSGI, Rack, PHP) read X_Api_Key and X-Api-Key as the same header, so a
// guest header that folds to an injected or built-in credential header
// (case, '-' and '_' folded) is refused before anything is sent.
func TestGuestHeadersCannotShadowCredentials(t *testing.T) {
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") })
	hp := srv.hostport("127.0.0.1")
	c := newTestCall(t, callOpts{policy: PolicyConfig{
		Allow:        []string{hp},
		Credentials:  []Credential{{Pattern: hp, Header: "X-Api-Key", Value: func(context.Context) (string, bool) { return "s3cr3t", true }}},
		AllowPrivate: loopback(),
	}})
	cases := []struct {
		header string
		want   Kind
	}{
		{"X_Api_Key", KindCredentialHeader},
		{"x_api-KEY", KindCredentialHeader},
		{"X-API_KEY", KindCredentialHeader},
		{"Proxy_Authorization", KindCredentialHeader},
		{"PROXY_authorization", KindCredentialHeader},
		{"Transfer_Encoding", KindInvalidRequest},
		{"Content_Length", KindInvalidRequest},
		{"X_Api_Keys", ""}, // a different name stays allowed
		{"X_Request_Id", ""},
	}
	for _, tc := range cases {
		r := do(t, c, `{"url":"http://`+hp+`/","headers":{`+jsonString(tc.header)+`:"guest"}}`)
		if tc.want == "" {
			wantOK(t, r)
			continue
		}
		wantKind(t, r, tc.want)
		if folded := strings.ReplaceAll(strings.ToLower(tc.header), "_", "-"); !strings.Contains(r.Error.Message, `"`+folded+`"`) {
			t.Errorf("%s: the message does not name %q: %s", tc.header, folded, r.Error.Message)
		}
	}
	if n := srv.hits.Load(); n != 2 {
		t.Fatalf("server reached %d times, want 2 (the allowed headers only)", n)
	}
}

// TestRequestsCountOnlyWhatWasSent: Stats.Requests counts requests written
// to a connection (each redirect hop); requests refused before that — by
// the allowlist, the destination check, DNS or a refused connection — are
// not traffic and do not count.
func TestRequestsCountOnlyWhatWasSent(t *testing.T) {
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/r" {
			http.Redirect(w, r, "/", http.StatusFound)
			return
		}
		io.WriteString(w, "ok")
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := ln.Addr().String()
	ln.Close()
	hp := srv.hostport("127.0.0.1")
	cases := []struct {
		name, url string
		want      Kind
		requests  int64
	}{
		{"not allowed", "http://other.example.com/", KindHostNotAllowed, 0},
		{"forbidden destination", "http://" + srv.hostport("private.example.com") + "/", KindForbiddenDestination, 0},
		{"dns failure", "http://" + srv.hostport("nxdomain.example.com") + "/", KindConnection, 0},
		{"connection refused", "http://" + closed + "/", KindConnection, 0},
		{"tls handshake fails", "https://" + hp + "/", KindConnection, 0},
		{"sent", "http://" + hp + "/", "", 1},
		{"redirect hop", "http://" + hp + "/r", "", 2},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := newTestCall(t, callOpts{policy: PolicyConfig{
				Allow:        []string{hp, closed, srv.hostport("private.example.com"), srv.hostport("nxdomain.example.com")},
				Resolve:      pin(srv.hostport("private.example.com"), "10.0.0.1"),
				AllowPrivate: loopback(),
			}, hook: refuseNonLoopbackDials})
			r := do(t, c, `{"url":`+jsonString(tc.url)+`}`)
			if tc.want == "" {
				wantOK(t, r)
			} else {
				wantKind(t, r, tc.want)
			}
			if got := c.Stats().Requests; got != tc.requests {
				t.Fatalf("Stats().Requests = %d, want %d", got, tc.requests)
			}
		})
	}
}
