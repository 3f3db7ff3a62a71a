package subakohttp

import (
	"errors"
	"fmt"
	"net/netip"
	"strconv"
	"strings"

	"golang.org/x/net/idna"
)

// idnaProfile maps a host the way a lookup does (UTS #46: case folding,
// width mapping, punycode), without STD3's ban on underscores and without
// the hyphen rules that real hosts like "r3---sn-x.example" break.
// It is configuration, never modified.
var idnaProfile = idna.New(
	idna.MapForLookup(),
	idna.BidiRule(),
	idna.CheckJoiners(true),
	idna.CheckHyphens(false),
	idna.StrictDomainName(false),
	idna.Transitional(false),
)

// normHost is a host in the form the allowlist compares: a lowercase ASCII
// (punycode) name without trailing dot, or an IP address.
type normHost struct {
	name string     // set for names
	ip   netip.Addr // set for IP literals
}

func (h normHost) isIP() bool { return h.ip.IsValid() }

// String is the host as it goes into a URL (IPv6 in brackets).
func (h normHost) String() string {
	if h.isIP() {
		if h.ip.Is6() {
			return "[" + h.ip.String() + "]"
		}
		return h.ip.String()
	}
	return h.name
}

// plain is the host without brackets, as net.JoinHostPort wants it.
func (h normHost) plain() string {
	if h.isIP() {
		return h.ip.String()
	}
	return h.name
}

// normalizeHost turns a host as written (brackets already removed) into its
// comparable form. Numeric hosts are read as IPv4 the way WHATWG URL does,
// so that 2130706433, 0x7f.1 and 0177.0.0.1 are the IP literal 127.0.0.1 and
// never a name some resolver might read differently.
func normalizeHost(raw string) (normHost, error) {
	if raw == "" {
		return normHost{}, errors.New("the host is empty")
	}
	if strings.Contains(raw, ":") {
		ip, err := netip.ParseAddr(raw)
		if err != nil {
			return normHost{}, fmt.Errorf("%q is not a valid IPv6 address", raw)
		}
		if ip.Zone() != "" {
			return normHost{}, errors.New("IPv6 zones (%25...) are not allowed in hosts")
		}
		return normHost{ip: ip}, nil
	}
	h := strings.TrimSuffix(strings.ToLower(raw), ".")
	ascii, err := idnaProfile.ToASCII(h)
	if err != nil {
		return normHost{}, fmt.Errorf("%q is not a valid host name (%v)", raw, err)
	}
	ascii = strings.TrimSuffix(ascii, ".")
	if ascii == "" {
		return normHost{}, errors.New("the host is empty")
	}
	labels := strings.Split(ascii, ".")
	if endsInNumber(labels[len(labels)-1]) {
		ip, ok := parseWHATWGIPv4(labels)
		if !ok {
			return normHost{}, fmt.Errorf("%q looks like an IPv4 address but is not a valid one", raw)
		}
		return normHost{ip: ip}, nil
	}
	if len(ascii) > 253 {
		return normHost{}, fmt.Errorf("the host name %q is longer than 253 characters", raw)
	}
	for _, l := range labels {
		if l == "" || len(l) > 63 {
			return normHost{}, fmt.Errorf("%q has an empty label or one longer than 63 characters", raw)
		}
		for i := 0; i < len(l); i++ {
			c := l[i]
			if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
				return normHost{}, fmt.Errorf("%q contains the character %q, not allowed in host names", raw, c)
			}
		}
	}
	return normHost{name: ascii}, nil
}

// endsInNumber is WHATWG's "ends in a number" test on the last label.
func endsInNumber(last string) bool {
	if last == "" {
		return false
	}
	if allIn(last, "0123456789") {
		return true
	}
	if len(last) >= 2 && (last[:2] == "0x" || last[:2] == "0X") && allIn(last[2:], "0123456789abcdefABCDEF") {
		return true
	}
	return false
}

func allIn(s, set string) bool {
	for i := 0; i < len(s); i++ {
		if !strings.ContainsRune(set, rune(s[i])) {
			return false
		}
	}
	return true
}

// parseWHATWGIPv4 is the IPv4 parser of the WHATWG URL standard: one to four
// parts, each decimal, octal (leading 0) or hex (0x), the last filling the
// remaining bytes.
func parseWHATWGIPv4(parts []string) (netip.Addr, bool) {
	if len(parts) > 4 || len(parts) == 0 {
		return netip.Addr{}, false
	}
	nums := make([]uint64, len(parts))
	for i, p := range parts {
		if p == "" {
			return netip.Addr{}, false
		}
		base := 10
		switch {
		case len(p) >= 2 && (p[:2] == "0x" || p[:2] == "0X"):
			base, p = 16, p[2:]
		case len(p) >= 2 && p[0] == '0':
			base, p = 8, p[1:]
		}
		if p == "" {
			nums[i] = 0
			continue
		}
		n, err := strconv.ParseUint(p, base, 64)
		if err != nil || n > 0xffffffff {
			return netip.Addr{}, false
		}
		nums[i] = n
	}
	last := nums[len(nums)-1]
	for _, n := range nums[:len(nums)-1] {
		if n > 255 {
			return netip.Addr{}, false
		}
	}
	if last >= uint64(1)<<(8*(5-len(nums))) {
		return netip.Addr{}, false
	}
	v := last
	for i, n := range nums[:len(nums)-1] {
		v += n << (8 * (3 - i))
	}
	return netip.AddrFrom4([4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)}), true
}

// parsePort reads a URL or entry port: 1..65535, digits only.
func parsePort(s string) (int, error) {
	if s == "" || len(s) > 5 || !allIn(s, "0123456789") {
		return 0, fmt.Errorf("%q is not a port number", s)
	}
	n, _ := strconv.Atoi(s)
	if n < 1 || n > 65535 {
		return 0, fmt.Errorf("port %d is outside 1-65535", n)
	}
	return n, nil
}

func defaultPort(scheme string) int {
	if scheme == "https" {
		return 443
	}
	return 80
}
