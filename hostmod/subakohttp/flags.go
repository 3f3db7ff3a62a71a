package subakohttp

import (
	"errors"
	"fmt"
	"net/netip"
	"strings"
)

// ParseResolve reads a --resolve value, HOST:PORT:ADDR[,ADDR...] as in
// curl (IPv6 addresses, in HOST or ADDR, in brackets). hostport is the
// normalized "host:port" key of PolicyConfig.Resolve.
func ParseResolve(s string) (hostport string, addrs []netip.Addr, err error) {
	hostPart, rest, err := splitBracketed(s)
	if err != nil {
		return "", nil, fmt.Errorf("--resolve %q: %w; want HOST:PORT:ADDR[,ADDR...]", s, err)
	}
	portPart, addrPart, ok := strings.Cut(rest, ":")
	if !ok {
		return "", nil, fmt.Errorf("--resolve %q: want HOST:PORT:ADDR[,ADDR...]", s)
	}
	h, err := normalizeHost(hostPart)
	if err != nil {
		return "", nil, fmt.Errorf("--resolve %q: %w", s, err)
	}
	port, err := parsePort(portPart)
	if err != nil {
		return "", nil, fmt.Errorf("--resolve %q: %w", s, err)
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
	return resolveKey(h, port), addrs, nil
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

// ParseCredentialFlag reads a --credential value, PATTERN=HEADER:VALUE.
// The pattern is an allowlist entry; VALUE is returned as written (the CLI
// reads "env:NAME" itself). Errors never repeat the value.
func ParseCredentialFlag(s string) (pattern, header, value string, err error) {
	pattern, rest, ok := strings.Cut(s, "=")
	if !ok || pattern == "" {
		return "", "", "", errors.New("--credential: want PATTERN=HEADER:VALUE")
	}
	header, value, ok = strings.Cut(rest, ":")
	if !ok || header == "" {
		return "", "", "", fmt.Errorf("--credential for %q: want PATTERN=HEADER:VALUE", pattern)
	}
	if _, err := parseEntry(pattern); err != nil {
		return "", "", "", fmt.Errorf("--credential: pattern %q: %w", pattern, err)
	}
	header = strings.TrimSpace(header)
	if !validToken(header) {
		return "", "", "", fmt.Errorf("--credential for %q: %q is not a valid header name", pattern, header)
	}
	return pattern, header, value, nil
}

// ParseAllowPrivate reads an --allow-private value, CIDR[,CIDR...]. A bare
// address stands for itself alone (/32 or /128).
func ParseAllowPrivate(s string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			return nil, fmt.Errorf("--allow-private %q: empty range", s)
		}
		if !strings.Contains(part, "/") {
			ip, err := netip.ParseAddr(part)
			if err != nil {
				return nil, fmt.Errorf("--allow-private %q: %q is not a CIDR range", s, part)
			}
			out = append(out, netip.PrefixFrom(ip, ip.BitLen()))
			continue
		}
		p, err := netip.ParsePrefix(part)
		if err != nil {
			return nil, fmt.Errorf("--allow-private %q: %q is not a CIDR range", s, part)
		}
		out = append(out, p.Masked())
	}
	return out, nil
}

func validToken(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c <= ' ' || c >= 0x7f || strings.ContainsRune("\"(),/:;<=>?@[\\]{}", rune(c)) {
			return false
		}
	}
	return true
}
