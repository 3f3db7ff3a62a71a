package subakohttp

import (
	"context"
	"fmt"
	"strings"
	"testing"
)

func TestNewPolicyRefusesBadEntries(t *testing.T) {
	for _, entry := range []string{
		"*.com", "*.co.uk", "*.github.io", "*.COM.", "*.xn--p1ai", "*.s3.amazonaws.com", "*.localhost",
		"*", "*.", "a.*.example.com", "*example.com", "ex*ample.com",
		"example.com:0", "example.com:65536", "example.com:", "example.com:http",
		"https://example.com", "example.com/path", "user@example.com", "",
		"[::1", "[example.com]:80", "*.10.0.0.1", "0x7g.1", "1.2.3.4.5", "256.0.0.1",
		"exa mple.com", "a..b",
	} {
		if _, err := NewPolicy(PolicyConfig{Allow: []string{entry}}); err == nil {
			t.Errorf("entry %q accepted", entry)
		}
	}
	for _, entry := range []string{
		"example.com", "*.example.com", "*.example.co.uk", "*.user.github.io", "api.example.com:8443",
		"*.example.com:8080", "127.0.0.1", "127.0.0.1:8080", "[::1]:8080", "::1", "bücher.example", "EXAMPLE.COM.",
		"r3---sn-abc.googlevideo.com", "_dmarc.example.com",
	} {
		if _, err := NewPolicy(PolicyConfig{Allow: []string{entry}}); err != nil {
			t.Errorf("entry %q refused: %v", entry, err)
		}
	}
}

func TestNewPolicyCredentialChecks(t *testing.T) {
	v := func(context.Context) (string, bool) { return "x", true }
	bad := []PolicyConfig{
		{Allow: []string{"a.example.com"}, Credentials: []Credential{{Pattern: "b.example.com", Header: "X-Key", Value: v}}},
		{Allow: []string{"a.example.com"}, Credentials: []Credential{{Pattern: "a.example.com", Header: "Bad Header", Value: v}}},
		{Allow: []string{"a.example.com"}, Credentials: []Credential{{Pattern: "a.example.com", Header: "Host", Value: v}}},
		{Allow: []string{"a.example.com"}, Credentials: []Credential{{Pattern: "a.example.com", Header: "X-Key"}}},
		{Resolve: map[string][]string{"no-port.example.com": {"1.2.3.4"}}},
		{Resolve: map[string][]string{"a.example.com:80": nil}},
	}
	for i, cfg := range bad {
		if _, err := NewPolicy(cfg); err == nil {
			t.Errorf("config %d accepted", i)
		}
	}
	// Patterns compare case-insensitively and by punycode.
	if _, err := NewPolicy(PolicyConfig{Allow: []string{"Bücher.Example"}, Credentials: []Credential{{Pattern: "xn--bcher-kva.example", Header: "X-Key", Value: v}}}); err != nil {
		t.Fatalf("equivalent pattern refused: %v", err)
	}
}

func TestAllowlistMatching(t *testing.T) {
	cases := []struct {
		entries []string
		url     string
		allowed bool
	}{
		{[]string{"api.example.com"}, "https://api.example.com/x", true},
		{[]string{"api.example.com"}, "http://api.example.com/x", true},
		{[]string{"api.example.com"}, "https://API.Example.COM./x", true},
		{[]string{"api.example.com"}, "https://api.example.com:443/x", true},
		{[]string{"api.example.com"}, "https://api.example.com:8443/x", false},
		{[]string{"api.example.com"}, "http://api.example.com:443/", false},
		{[]string{"api.example.com:8443"}, "https://api.example.com:8443/", true},
		{[]string{"api.example.com:8443"}, "https://api.example.com/", false},
		{[]string{"api.example.com"}, "https://www.api.example.com/", false},
		{[]string{"*.example.com"}, "https://a.example.com/", true},
		{[]string{"*.example.com"}, "https://a.b.c.example.com/", true},
		{[]string{"*.example.com"}, "https://example.com/", false},
		{[]string{"*.example.com"}, "https://badexample.com/", false},
		{[]string{"*.example.com"}, "https://a.example.com.evil.org/", false},
		{[]string{"*.example.com:8080"}, "http://a.example.com:8080/", true},
		{[]string{"*.example.com:8080"}, "http://a.example.com/", false},
		{[]string{"bücher.example"}, "https://xn--bcher-kva.example/", true},
		{[]string{"xn--bcher-kva.example"}, "https://BÜCHER.example/", true},
		{[]string{"*.bücher.example"}, "https://shop.bücher.example/", true},
		{[]string{"127.0.0.1"}, "http://127.0.0.1/", true},
		{[]string{"127.0.0.1"}, "http://2130706433/", true},
		{[]string{"127.0.0.1"}, "http://[::ffff:127.0.0.1]/", false},
		{[]string{"[::1]:8080"}, "http://[::1]:8080/", true},
		{[]string{"::1"}, "https://[0:0::1]/", true},
		{[]string{"*.example.com"}, "http://127.0.0.1/", false},
		{[]string{"localhost"}, "http://127.0.0.1/", false},
		{[]string{}, "https://api.example.com/", false},
		{[]string{"a.example.com", "*.example.com"}, "https://b.example.com/", true},
	}
	for _, tc := range cases {
		p, err := NewPolicy(PolicyConfig{Allow: tc.entries})
		if err != nil {
			t.Fatalf("%v: %v", tc.entries, err)
		}
		u, h, port, e := parseURL(tc.url)
		if e != nil {
			t.Fatalf("%s: %v", tc.url, e)
		}
		if got := p.match(u.Scheme, h, port) != nil; got != tc.allowed {
			t.Errorf("%v allows %s = %v, want %v", tc.entries, tc.url, got, tc.allowed)
		}
	}
}

func TestMostSpecificEntryInjects(t *testing.T) {
	v := func(s string) func(context.Context) (string, bool) {
		return func(context.Context) (string, bool) { return s, true }
	}
	p, err := NewPolicy(PolicyConfig{
		Allow: []string{"*.example.com", "api.example.com"},
		Credentials: []Credential{
			{Pattern: "*.example.com", Header: "X-Wild", Value: v("w")},
			{Pattern: "api.example.com", Header: "X-Exact", Value: v("e")},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	_, h, port, _ := parseURL("https://api.example.com/")
	if e := p.match("https", h, port); e == nil || e.creds[0].Header != "X-Exact" {
		t.Fatalf("matched %+v", e)
	}
	// Both injected names are refused as guest headers.
	for _, name := range []string{"x-wild", "X-EXACT", "authorization", "Cookie", "proxy-authorization"} {
		_, e := parseRequest([]byte(`{"url":"https://api.example.com/","headers":{"`+name+`":"v"}}`), 1<<20, p)
		if e == nil || e.Kind != KindCredentialHeader {
			t.Errorf("header %s: %v", name, e)
		}
	}
}

func TestParseRequestRefusals(t *testing.T) {
	p := &Policy{injected: map[string]bool{}}
	cases := []struct {
		doc  string
		want Kind
	}{
		{`[]`, KindInvalidRequest},
		{`null`, KindInvalidRequest},
		{`{"url":"https://a.example/"} {}`, KindInvalidRequest},
		{"{\"url\":\"https://a.example/\xff\"}", KindInvalidRequest},
		{`{"url":"https://a.example/","method":"get"}`, KindInvalidRequest},
		{`{"url":"https://a.example/","method":7}`, KindInvalidRequest},
		{`{"url":"ftp://a.example/"}`, KindInvalidRequest},
		{`{"url":"https:///path"}`, KindInvalidRequest},
		{`{"url":"https:a.example"}`, KindInvalidRequest},
		{`{"url":"https://a.example:99999/"}`, KindInvalidRequest},
		{`{"url":"https://a.example/","headers":[]}`, KindInvalidRequest},
		{`{"url":"https://a.example/","headers":{"a":1}}`, KindInvalidRequest},
		{`{"url":"https://a.example/","headers":{"a":null}}`, KindInvalidRequest},
		{`{"url":"https://a.example/","headers":{"bad name":"v"}}`, KindInvalidRequest},
		{`{"url":"https://a.example/","headers":{"x":"a\r\nb: c"}}`, KindInvalidRequest},
		{`{"url":"https://a.example/","headers":{"Host":"evil"}}`, KindInvalidRequest},
		{`{"url":"https://a.example/","headers":{"content-length":"1"}}`, KindInvalidRequest},
		{`{"url":"https://a.example/","headers":{"Connection":"close"}}`, KindInvalidRequest},
		{`{"url":"https://a.example/","headers":{"upgrade":"h2c"}}`, KindInvalidRequest},
		{`{"url":"https://a.example/","headers":{"TE":"trailers"}}`, KindInvalidRequest},
		{`{"url":"https://a.example/","headers":{"trailer":"x"}}`, KindInvalidRequest},
		{`{"url":"https://a.example/","headers":{"keep-alive":"1"}}`, KindInvalidRequest},
		{`{"url":"https://a.example/","headers":{"Proxy-Connection":"1"}}`, KindInvalidRequest},
		{`{"url":"https://a.example/","headers":{"Proxy-Authorization":"1"}}`, KindCredentialHeader},
		{`{"url":"https://a.example/","body":"text"}`, KindInvalidRequest},
		{`{"url":"https://a.example/","body":{"type":"xml"}}`, KindInvalidRequest},
		{`{"url":"https://a.example/","body":{"type":"json"}}`, KindInvalidRequest},
		{`{"url":"https://a.example/","body":{"type":"text","text":1}}`, KindInvalidRequest},
		{`{"url":"https://a.example/","body":{"type":"text","text":"a","extra":1}}`, KindInvalidRequest},
		{`{"url":"https://a.example/","body":{"type":"base64","data":"!!"}}`, KindInvalidRequest},
		{`{"url":"https://a.example/","body":{"type":"file","path":"/package/x"}}`, KindBadPath},
		{`{"url":"https://a.example/","body":{"type":"file","path":"volume/tmp/x"}}`, KindBadPath},
		{`{"url":"https://a.example/","output":{"type":"stream"}}`, KindInvalidRequest},
		{`{"url":"https://a.example/","output":{"type":"inline","path":"/volume/tmp/x"}}`, KindInvalidRequest},
		{`{"url":"https://a.example/","output":{"type":"file"}}`, KindInvalidRequest},
		{`{"url":"https://a.example/","output":{"type":"file","path":"/volume/tmp"}}`, KindBadPath},
		{`{"url":"https://a.example/","output":{"type":"file","path":"/volume/tmp/a/./b"}}`, KindBadPath},
		{`{"url":"https://a.example/","follow_redirects":"yes"}`, KindInvalidRequest},
		{`{"url":"https://a.example/","follow_redirects":null}`, KindInvalidRequest},
		{`{"url":"https://a.example/","timeout_ms":0}`, KindInvalidRequest},
		{`{"url":"https://a.example/","timeout_ms":-5}`, KindInvalidRequest},
		{`{"url":"https://a.example/","timeout_ms":1.5}`, KindInvalidRequest},
		{`{"url":"https://a.example/","timeout_ms":"100"}`, KindInvalidRequest},
	}
	for _, tc := range cases {
		_, e := parseRequest([]byte(tc.doc), 1<<20, p)
		if e == nil || e.Kind != tc.want {
			t.Errorf("%s: got %v, want %s", tc.doc, e, tc.want)
		}
	}
	r, e := parseRequest([]byte(`{"url":"https://a.example/x#frag"}`), 1<<20, p)
	if e != nil || r.method != "GET" || !r.followRedirects || r.timeout != defaultTimeout || r.url.Fragment != "" {
		t.Fatalf("defaults: %+v %v", r, e)
	}
	_, e = parseRequest([]byte(`{"url":"https://a.example/","body":{"type":"text","text":"`+strings.Repeat("x", 100)+`"}}`), 64, p)
	if e == nil || e.Kind != KindTooLarge {
		t.Fatalf("over the request limit: %v", e)
	}
}

// Every address of a PolicyConfig is a string, parsed by NewPolicy: the
// literal an embedder writes first compiles, and a value that is not an
// address is refused with the field and the value named.
func TestPolicyConfigAddressesAreStrings(t *testing.T) {
	p, err := NewPolicy(PolicyConfig{
		Allow:        []string{"api.test:8080"},
		Resolve:      map[string][]string{"api.test:8080": {"127.0.0.1", "::1"}},
		AllowPrivate: []string{"127.0.0.1", "10.1.2.3/8", "::1"},
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(p.allowPrivate); got != "[127.0.0.1/32 10.0.0.0/8 ::1/128]" {
		t.Errorf("ranges %s; want a bare address as itself alone and the host bits dropped", got)
	}
	if got := fmt.Sprint(p.resolve["api.test:8080"]); got != "[127.0.0.1 ::1]" {
		t.Errorf("resolve %s", got)
	}
	for _, tt := range []struct {
		cfg  PolicyConfig
		want string
	}{
		{PolicyConfig{AllowPrivate: []string{"10.0.0.300/8"}}, `AllowPrivate: "10.0.0.300/8" is not a CIDR range or an IP address`},
		{PolicyConfig{AllowPrivate: []string{"127.0.0.1/33"}}, `AllowPrivate: "127.0.0.1/33" is not a CIDR range`},
		{PolicyConfig{AllowPrivate: []string{""}}, `AllowPrivate: "" is not`},
		{PolicyConfig{AllowPrivate: []string{"fe80::1%eth0"}}, `"fe80::1%eth0" is not`},
		{PolicyConfig{AllowPrivate: []string{"localhost"}}, `"localhost" is not a CIDR range or an IP address (want e.g. 10.0.0.0/8 or 127.0.0.1)`},
		{PolicyConfig{Resolve: map[string][]string{"a.test:80": {"a.test"}}}, `resolve entry "a.test:80": "a.test" is not an IP address`},
		{PolicyConfig{Resolve: map[string][]string{"a.test:80": {"fe80::1%eth0"}}}, `"fe80::1%eth0" is not an IP address`},
	} {
		if _, err := NewPolicy(tt.cfg); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%+v: %v; want %q", tt.cfg, err, tt.want)
		}
	}
}
