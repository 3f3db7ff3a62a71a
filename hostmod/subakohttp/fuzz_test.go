package subakohttp

import (
	"context"
	"strings"
	"testing"
	"unicode/utf8"
)

// FuzzParseRequest: any document either parses into a request whose URL is
// absolute http(s) without userinfo and whose headers are all allowed, or
// is refused with a kind of §8; never a panic.
func FuzzParseRequest(f *testing.F) {
	for _, s := range []string{
		`{"url":"https://api.example.com/orders"}`,
		`{"method":"POST","url":"https://api.example.com/orders","headers":{"accept":"application/json"},"body":{"type":"json","json":{"order":1042}},"output":{"type":"inline"},"follow_redirects":true,"timeout_ms":5000}`,
		`{"url":"http://0x7f.1/","body":{"type":"base64","data":"AAEC"}}`,
		`{"url":"http://[::ffff:127.0.0.1]:8080/","output":{"type":"file","path":"/volume/tmp/out.bin"}}`,
		`{"url":"http://user:pw@a.example/","headers":{"Authorization":"x"}}`,
		`{"url":"https://bücher.example/","body":{"type":"file","path":"/volume/data/../x"}}`,
		`{"url":"https://a.example/","headers":{"X-Key":"v","Proxy-X":"1"},"timeout_ms":1e3}`,
		`[1,2]`, `{"url":"https://a.example/"}garbage`, "",
	} {
		f.Add(s)
	}
	p, err := NewPolicy(PolicyConfig{
		Allow:       []string{"*.example.com"},
		Credentials: []Credential{{Pattern: "*.example.com", Header: "X-Key", Value: func(context.Context) (string, bool) { return "k", true }}},
	})
	if err != nil {
		f.Fatal(err)
	}
	known := map[Kind]bool{KindInvalidRequest: true, KindCredentialHeader: true, KindBadPath: true, KindTooLarge: true}
	f.Fuzz(func(t *testing.T, doc string) {
		r, e := parseRequest([]byte(doc), 1<<20, p)
		if e != nil {
			if !known[e.Kind] || e.Message == "" || !utf8.ValidString(e.Message) {
				t.Fatalf("bad refusal %v", e)
			}
			return
		}
		if r.url.User != nil || (r.url.Scheme != "http" && r.url.Scheme != "https") || r.url.Host == "" {
			t.Fatalf("accepted URL %s", r.url)
		}
		for _, h := range r.headers {
			l := strings.ToLower(h[0])
			if framingHeader(l) || p.credentialHeader(l) {
				t.Fatalf("accepted header %q", h[0])
			}
		}
		if r.outputPath != "" && checkVolumePath(r.outputPath) != nil {
			t.Fatalf("accepted output path %q", r.outputPath)
		}
		if r.timeout <= 0 {
			t.Fatalf("timeout %v", r.timeout)
		}
	})
}

// FuzzAllowlistMatch: an entry either is refused or, when it matches a
// host, the match obeys the rules: same port rule, wildcards never match
// their bare domain, never an IP literal, and exact names match exactly.
func FuzzAllowlistMatch(f *testing.F) {
	for _, s := range [][2]string{
		{"api.example.com", "https://api.example.com/"},
		{"*.example.com", "https://a.b.example.com:443/"},
		{"*.example.com", "https://example.com/"},
		{"*.com", "https://example.com/"},
		{"127.0.0.1:8080", "http://2130706433:8080/"},
		{"[::1]", "http://[::1]/"},
		{"bücher.example", "https://XN--BCHER-KVA.example./"},
		{"*.co.uk", "https://a.co.uk/"},
		{"*.github.io", "https://x.github.io/"},
	} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, entry, rawURL string) {
		p, err := NewPolicy(PolicyConfig{Allow: []string{entry}})
		if err != nil {
			return
		}
		e := p.entries[0]
		if e.wildcard {
			if pub := strings.TrimPrefix(e.key, "*."); pub == "com" || pub == "co.uk" || pub == "github.io" {
				t.Fatalf("wildcard over a public suffix accepted: %q", entry)
			}
		}
		u, h, port, perr := parseURL(rawURL)
		if perr != nil {
			return
		}
		m := p.match(u.Scheme, h, port)
		if m == nil {
			return
		}
		if e.port == 0 && port != defaultPort(u.Scheme) || e.port != 0 && port != e.port {
			t.Fatalf("%q matched %s on port %d", entry, rawURL, port)
		}
		switch {
		case e.wildcard:
			if h.isIP() || h.name == e.host.name || !strings.HasSuffix(h.name, "."+e.host.name) {
				t.Fatalf("%q matched %s", entry, rawURL)
			}
		case h.isIP() != e.host.isIP() || h.String() != e.host.String():
			t.Fatalf("%q matched %s", entry, rawURL)
		}
	})
}
