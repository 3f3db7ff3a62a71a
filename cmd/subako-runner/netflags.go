package main

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strings"

	"golang.org/x/net/http/httpguts"

	"github.com/subako/subako-runner/hostmod/subakohttp"
)

// The network flags are parsed here and checked by subakohttp.NewPolicy,
// which owns what an allowlist entry, a resolve key and a credential
// header may be; the CLI only splits the words.

// parseResolve reads a --resolve value, HOST:PORT:ADDR[,ADDR...] as in
// curl (IPv6 addresses, in HOST or ADDR, in brackets). hostport is a
// "host:port" key of PolicyConfig.Resolve. Errors start with the flag.
func parseResolve(s string) (hostport string, addrs []netip.Addr, err error) {
	const want = "want HOST:PORT:ADDR[,ADDR...]"
	hostPart, rest, err := splitBracketed(s)
	if err != nil {
		return "", nil, fmt.Errorf("--resolve %q: %v; %s", s, err, want)
	}
	portPart, addrPart, ok := strings.Cut(rest, ":")
	if !ok {
		return "", nil, fmt.Errorf("--resolve %q: %s", s, want)
	}
	if addrPart == "" {
		return "", nil, fmt.Errorf("--resolve %q: no address given", s)
	}
	for _, a := range strings.Split(addrPart, ",") {
		a = strings.TrimSpace(a)
		if strings.HasPrefix(a, "[") && strings.HasSuffix(a, "]") {
			a = a[1 : len(a)-1]
		}
		ip, err := netip.ParseAddr(a)
		if err != nil || ip.Zone() != "" {
			return "", nil, fmt.Errorf("--resolve %q: %q is not an IP address", s, a)
		}
		addrs = append(addrs, ip)
	}
	hostport = net.JoinHostPort(hostPart, portPart)
	if _, err := subakohttp.NewPolicy(subakohttp.PolicyConfig{Resolve: map[string][]string{hostport: addrStrings(addrs)}}); err != nil {
		return "", nil, fmt.Errorf("--resolve %q: %v", s, innermost(err))
	}
	return hostport, addrs, nil
}

// splitBracketed splits "host:rest" or "[v6]:rest".
func splitBracketed(s string) (host, rest string, err error) {
	if strings.HasPrefix(s, "[") {
		end := strings.IndexByte(s, ']')
		if end < 0 || end+1 >= len(s) || s[end+1] != ':' {
			return "", "", errors.New("unclosed [ or no :PORT after ]")
		}
		return s[1:end], s[end+2:], nil
	}
	host, rest, ok := strings.Cut(s, ":")
	if !ok || host == "" {
		return "", "", errors.New("no host")
	}
	return host, rest, nil
}

// parseCredential reads a --credential value, PATTERN=HEADER:VALUE. VALUE
// is returned as written (env:NAME is read at request time). Errors start
// with the flag and never repeat the value.
func parseCredential(s string) (pattern, header, value string, err error) {
	pattern, rest, ok := strings.Cut(s, "=")
	if !ok || pattern == "" {
		return "", "", "", errors.New("--credential: want PATTERN=HEADER:VALUE")
	}
	header, value, ok = strings.Cut(rest, ":")
	header = strings.TrimSpace(header)
	if !ok || header == "" {
		return "", "", "", fmt.Errorf("--credential for %q: want PATTERN=HEADER:VALUE", pattern)
	}
	if _, err := subakohttp.NewPolicy(subakohttp.PolicyConfig{Allow: []string{pattern}}); err != nil {
		return "", "", "", fmt.Errorf("--credential: pattern %q: %v", pattern, innermost(err))
	}
	if !httpguts.ValidHeaderFieldName(header) {
		return "", "", "", fmt.Errorf("--credential for %q: %q is not a valid header name", pattern, header)
	}
	return pattern, header, value, nil
}

// innermost is the reason without the library's "subakohttp: … %q:"
// prefix, so the CLI's message names the flag once.
func innermost(err error) error {
	for {
		u := errors.Unwrap(err)
		if u == nil {
			return errors.New(strings.TrimPrefix(err.Error(), "subakohttp: "))
		}
		err = u
	}
}

// parseAllowPrivate reads an --allow-private value, CIDR[,CIDR...]. A bare
// address stands for itself alone (/32 or /128).
func parseAllowPrivate(s string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			return nil, errors.New("empty range")
		}
		p, err := subakohttp.ParseRange(part)
		if err != nil {
			return nil, fmt.Errorf("%q is not a CIDR range", part)
		}
		out = append(out, p)
	}
	return out, nil
}

// addrStrings writes addresses as PolicyConfig takes them.
func addrStrings(addrs []netip.Addr) []string {
	out := make([]string, len(addrs))
	for i, a := range addrs {
		out[i] = a.String()
	}
	return out
}
