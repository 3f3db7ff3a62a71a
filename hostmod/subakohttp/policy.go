package subakohttp

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strings"

	"golang.org/x/net/http/httpguts"
	"golang.org/x/net/publicsuffix"
)

// PolicyConfig is the network policy of one call as an embedder states it.
type PolicyConfig struct {
	// Allow is the allowlist: "host", "*.domain", an IP address, any of
	// them with ":port" (IPv6 in brackets when a port follows). Without a
	// port only the scheme's default port is allowed. Empty denies all.
	Allow []string
	// Credentials are headers injected into requests an entry allows.
	Credentials []Credential
	// Resolve answers DNS for "host:port" with fixed addresses (curl's
	// --resolve), written as strings ("127.0.0.1", "::1") like every
	// address of the config. Every address is still checked before it is
	// dialled.
	Resolve map[string][]string
	// AllowPrivate lets addresses in these ranges through the destination
	// check (local testing): CIDR ranges ("10.0.0.0/8"; host bits are
	// dropped) or single addresses ("127.0.0.1", a /32 or /128), as
	// strings. Every other check stays.
	AllowPrivate []string
	// DisableDestinationCheck turns the destination check off entirely
	// (--allow-private without a value). The allowlist still applies.
	DisableDestinationCheck bool
	// Remedy, when set, words the end of a refusal's message: what would
	// let the request through, said to whoever sets this policy. The CLI,
	// whose user is the function's owner, names its flags ("add
	// --allow-host localhost:8765"); without Remedy the message tells the
	// package author to ask the function's owner. It must not block: it
	// runs inside the guest's request.
	Remedy func(Refusal) string
}

// Refusal is a request the policy refused, as a Remedy sees it.
type Refusal struct {
	// Kind is KindHostNotAllowed or KindForbiddenDestination.
	Kind Kind
	// Entry is the allowlist entry that would allow the URL, written as
	// Allow takes it: "host" for the scheme's default port, else
	// "host:port" ("[v6]:port"). Set for host_not_allowed.
	Entry string
	// Redirect says a redirect, not the module, named the URL.
	Redirect bool
	// Addr is the address the destination check refused, an IPv4-mapped
	// one unmapped (what an AllowPrivate range must contain). Set for
	// forbidden_destination.
	Addr netip.Addr
}

// Credential is a header an allowlist entry injects.
type Credential struct {
	// Pattern is the allowlist entry, exactly as written in Allow (hosts
	// compare case-insensitively).
	Pattern string
	// Header is the header name, e.g. "Authorization".
	Header string
	// Value supplies the secret for the current call; false means it is not
	// available and the request fails with credential_unavailable.
	Value func(ctx context.Context) (string, bool)
}

// Policy is the network policy of one call: the allowlist with its
// credentials, pinned DNS answers and the destination check. It is
// immutable after NewPolicy and safe to share between calls.
type Policy struct {
	entries      []*entry
	resolve      map[string][]netip.Addr
	allowPrivate []netip.Prefix
	noDestCheck  bool
	injected     map[string]bool // lowercased header names any entry injects
	denyMessage  string          // set: every request fails host_not_allowed with it
	remedy       func(Refusal) string
}

type entry struct {
	raw      string
	key      string // canonical form, for matching credentials to entries
	wildcard bool
	host     normHost // for wildcards, the domain below the "*."
	port     int      // 0: the scheme's default port
	creds    []Credential
}

// NewPolicy checks cfg and builds the policy. It refuses malformed entries,
// wildcards that cover a public suffix (*.com, *.co.uk, *.github.io), and
// credentials for entries not in the allowlist.
func NewPolicy(cfg PolicyConfig) (*Policy, error) {
	p := &Policy{
		resolve:     make(map[string][]netip.Addr, len(cfg.Resolve)),
		noDestCheck: cfg.DisableDestinationCheck,
		injected:    map[string]bool{},
		remedy:      cfg.Remedy,
	}
	byKey := map[string]*entry{}
	for _, raw := range cfg.Allow {
		e, err := parseEntry(raw)
		if err != nil {
			return nil, fmt.Errorf("subakohttp: allowlist entry %q: %w", raw, err)
		}
		if _, dup := byKey[e.key]; dup {
			continue
		}
		byKey[e.key] = e
		p.entries = append(p.entries, e)
	}
	for _, c := range cfg.Credentials {
		ce, err := parseEntry(c.Pattern)
		if err != nil {
			return nil, fmt.Errorf("subakohttp: credential pattern %q: %w", c.Pattern, err)
		}
		e, ok := byKey[ce.key]
		if !ok {
			return nil, fmt.Errorf("subakohttp: credential pattern %q is not an allowlist entry; add it to the allowlist too", c.Pattern)
		}
		if !httpguts.ValidHeaderFieldName(c.Header) {
			return nil, fmt.Errorf("subakohttp: credential for %q: %q is not a valid header name", c.Pattern, c.Header)
		}
		if framingHeader(foldHeader(c.Header)) {
			return nil, fmt.Errorf("subakohttp: credential for %q: %q is a connection header and cannot carry a credential", c.Pattern, c.Header)
		}
		if c.Value == nil {
			return nil, fmt.Errorf("subakohttp: credential for %q has no value provider", c.Pattern)
		}
		e.creds = append(e.creds, c)
		p.injected[foldHeader(c.Header)] = true
	}
	for k, addrs := range cfg.Resolve {
		host, port, err := splitHostPortStrict(k)
		if err != nil {
			return nil, fmt.Errorf("subakohttp: resolve entry %q: %w", k, err)
		}
		if len(addrs) == 0 {
			return nil, fmt.Errorf("subakohttp: resolve entry %q has no addresses", k)
		}
		parsed := make([]netip.Addr, 0, len(addrs))
		for _, a := range addrs {
			ip, err := netip.ParseAddr(a)
			if err != nil || ip.Zone() != "" {
				return nil, fmt.Errorf("subakohttp: resolve entry %q: %q is not an IP address (want e.g. 127.0.0.1 or ::1)", k, a)
			}
			parsed = append(parsed, ip)
		}
		p.resolve[resolveKey(host, port)] = parsed
	}
	for _, r := range cfg.AllowPrivate {
		pre, err := ParseRange(r)
		if err != nil {
			return nil, fmt.Errorf("subakohttp: AllowPrivate: %w", err)
		}
		p.allowPrivate = append(p.allowPrivate, pre)
	}
	return p, nil
}

// ParseRange reads an AllowPrivate range: a CIDR range (its host bits
// dropped) or a single address, a /32 or /128.
func ParseRange(s string) (netip.Prefix, error) {
	if !strings.Contains(s, "/") {
		ip, err := netip.ParseAddr(s)
		if err != nil || ip.Zone() != "" {
			return netip.Prefix{}, fmt.Errorf("%q is not a CIDR range or an IP address (want e.g. 10.0.0.0/8 or 127.0.0.1)", s)
		}
		return netip.PrefixFrom(ip, ip.BitLen()), nil
	}
	p, err := netip.ParsePrefix(s)
	if err != nil {
		return netip.Prefix{}, fmt.Errorf("%q is not a CIDR range or an IP address (want e.g. 10.0.0.0/8 or 127.0.0.1)", s)
	}
	return p.Masked(), nil
}

// DiscoveryPolicy refuses every request with the discovery message of
// docs/abi.md §4.
func DiscoveryPolicy() *Policy {
	return &Policy{denyMessage: "network is not available during discovery", injected: map[string]bool{}}
}

func resolveKey(h normHost, port int) string {
	return net.JoinHostPort(h.plain(), fmt.Sprint(port))
}

// splitHostPortStrict reads "host:port" (IPv6 in brackets) into a
// normalized host and a port.
func splitHostPortStrict(s string) (normHost, int, error) {
	hs, ps, err := net.SplitHostPort(s)
	if err != nil {
		return normHost{}, 0, fmt.Errorf("want HOST:PORT: %v", err)
	}
	if strings.Contains(hs, ":") && !strings.HasPrefix(s, "[") {
		return normHost{}, 0, errors.New("write IPv6 addresses in brackets")
	}
	h, err := normalizeHost(hs)
	if err != nil {
		return normHost{}, 0, err
	}
	port, err := parsePort(ps)
	if err != nil {
		return normHost{}, 0, err
	}
	return h, port, nil
}

// parseEntry reads one allowlist entry.
func parseEntry(raw string) (*entry, error) {
	s := strings.TrimSpace(raw)
	if s == "" {
		return nil, errors.New("empty entry")
	}
	hostPart, portPart := s, ""
	switch {
	case strings.HasPrefix(s, "["):
		end := strings.IndexByte(s, ']')
		if end < 0 {
			return nil, errors.New("missing ]")
		}
		hostPart, portPart = s[1:end], s[end+1:]
		if portPart != "" {
			if !strings.HasPrefix(portPart, ":") {
				return nil, errors.New("unexpected text after ]")
			}
			portPart = portPart[1:]
			if portPart == "" {
				return nil, errors.New("empty port")
			}
		}
		if _, err := netip.ParseAddr(hostPart); err != nil || !strings.Contains(hostPart, ":") {
			return nil, errors.New("brackets hold an IPv6 address only")
		}
	case strings.Count(s, ":") > 1:
		// A bare IPv6 address (no port possible without brackets).
	case strings.Contains(s, ":"):
		i := strings.LastIndexByte(s, ':')
		hostPart, portPart = s[:i], s[i+1:]
		if portPart == "" {
			return nil, errors.New("empty port")
		}
	}
	e := &entry{raw: raw}
	if portPart != "" {
		port, err := parsePort(portPart)
		if err != nil {
			return nil, err
		}
		e.port = port
	}
	if strings.HasPrefix(hostPart, "*.") {
		e.wildcard = true
		hostPart = hostPart[2:]
	}
	if strings.Contains(hostPart, "*") {
		return nil, errors.New("a wildcard is allowed only as the whole leftmost label, as in *.example.com")
	}
	if strings.ContainsAny(hostPart, "/?#@ \t") {
		return nil, errors.New("write a host name, not a URL")
	}
	h, err := normalizeHost(hostPart)
	if err != nil {
		return nil, err
	}
	if e.wildcard {
		if h.isIP() {
			return nil, errors.New("a wildcard cannot cover an IP address")
		}
		if ps := suffixBelow(h.name); ps != "" {
			if ps == h.name {
				return nil, fmt.Errorf("*.%s covers the public suffix %q: name a registered domain, as in *.example.%s", h.name, ps, ps)
			}
			return nil, fmt.Errorf("*.%s covers the public suffix %q, under which anyone can register names: name a registered domain instead", h.name, ps)
		}
	}
	e.host = h
	e.key = h.String()
	if e.wildcard {
		e.key = "*." + e.key
	}
	if e.port != 0 {
		e.key += fmt.Sprintf(":%d", e.port)
	}
	return e, nil
}

// match finds the entry allowing scheme://host:port, the most specific one
// when several do: exact over wildcard, a longer wildcard domain over a
// shorter one, an explicit port over the default.
func (p *Policy) match(scheme string, h normHost, port int) *entry {
	var best *entry
	score := func(e *entry) int {
		s := len(e.host.String())
		if !e.wildcard {
			s += 1 << 20
		}
		if e.port != 0 {
			s++
		}
		return s
	}
	for _, e := range p.entries {
		if !e.matches(scheme, h, port) {
			continue
		}
		if best == nil || score(e) > score(best) {
			best = e
		}
	}
	return best
}

func (e *entry) matches(scheme string, h normHost, port int) bool {
	want := e.port
	if want == 0 {
		want = defaultPort(scheme)
	}
	if port != want {
		return false
	}
	if h.isIP() || e.host.isIP() {
		return !e.wildcard && h.isIP() && e.host.isIP() && h.ip == e.host.ip
	}
	if e.wildcard {
		return strings.HasSuffix(h.name, "."+e.host.name) && !underSuffixBelow(h.name, e.host.name)
	}
	return h.name == e.host.name
}

// probeLabel never equals a label of the public suffix list (whose labels
// are letters, digits, '-' and '_'), so a lookup of probeLabel+"."+domain
// reaches the deepest rule that applies to every name under domain.
const probeLabel = "#"

// suffixBelow is the public suffix that a name directly under domain has,
// when it lies at or below domain: domain is itself a public suffix, lies
// under a wildcard rule, or has a wildcard rule right below it. "" when a
// lookup shows no such rule. Rules further below (s3.amazonaws.com under
// amazonaws.com) cannot be listed through x/net/publicsuffix; match refuses
// the hosts under them instead (underSuffixBelow).
func suffixBelow(domain string) string {
	ps, _ := publicsuffix.PublicSuffix(probeLabel + "." + domain)
	if len(ps) >= len(domain) {
		return ps
	}
	return ""
}

// underSuffixBelow reports whether host, a name under domain, has a public
// suffix at or below domain: then its registrable domain belongs to
// whoever registered it under that suffix (attacker-bucket.s3.amazonaws.com
// under *.amazonaws.com), not to domain's owner, and a wildcard on domain
// must not reach it.
func underSuffixBelow(host, domain string) bool {
	ps, _ := publicsuffix.PublicSuffix(host)
	return len(ps) >= len(domain)
}

// suffixShadowed finds a wildcard entry that would allow the host but for
// a public suffix below its domain (underSuffixBelow), for the message.
func (p *Policy) suffixShadowed(scheme string, h normHost, port int) *entry {
	if h.isIP() {
		return nil
	}
	for _, e := range p.entries {
		if e.wildcard && strings.HasSuffix(h.name, "."+e.host.name) && port == cmp.Or(e.port, defaultPort(scheme)) {
			return e
		}
	}
	return nil
}

// checkDestination says why addr may not be dialled, or nil.
func (p *Policy) checkDestination(addr netip.Addr) *Error {
	if p.noDestCheck {
		return nil
	}
	why := nonPublic(addr)
	if why == "" {
		return nil
	}
	for _, pre := range p.allowPrivate {
		if pre.Contains(addr) || (addr.Is4In6() && pre.Contains(addr.Unmap())) {
			return nil
		}
	}
	return errorf(KindForbiddenDestination, fmt.Sprintf("%s is %s; %s", addr, why,
		p.remedyOr(Refusal{Kind: KindForbiddenDestination, Addr: addr.Unmap()}, "requests may only reach public addresses")))
}

// remedyOr is the embedder's wording of what would let r through, or def.
func (p *Policy) remedyOr(r Refusal, def string) string {
	if p.remedy != nil {
		if s := p.remedy(r); s != "" {
			return s
		}
	}
	return def
}

// foldHeader is a header name as the laxest server reads it: lowercase, with
// '_' as '-'. CGI and the frameworks built on it (WSGI, Rack, PHP) turn
// both X-Api-Key and X_Api_Key into HTTP_X_API_KEY, so a guest's X_Api_Key
// could stand in for, or shadow, an injected X-Api-Key.
func foldHeader(name string) string {
	return strings.ReplaceAll(strings.ToLower(name), "_", "-")
}

// framingHeader reports the hop-by-hop and framing headers a guest may not
// set (folded name, foldHeader).
func framingHeader(folded string) bool {
	switch folded {
	case "host", "content-length", "transfer-encoding", "connection", "upgrade", "te", "trailer", "keep-alive":
		return true
	}
	return strings.HasPrefix(folded, "proxy-")
}

// credentialHeader reports the headers a guest may not set because they
// carry credentials (folded name, foldHeader).
func (p *Policy) credentialHeader(folded string) bool {
	switch folded {
	case "authorization", "proxy-authorization", "cookie":
		return true
	}
	return p.injected[folded]
}
