package subakohttp

import (
	"fmt"
	"net/netip"
)

// This file is the one place that says which addresses a request may reach.
//
// Sources:
//   - IANA IPv4 Special-Purpose Address Registry
//     https://www.iana.org/assignments/iana-ipv4-special-registry/ (RFC 6890)
//   - IANA IPv6 Special-Purpose Address Registry
//     https://www.iana.org/assignments/iana-ipv6-special-registry/ (RFC 6890)
//   - IANA IPv4 Multicast Address Space Registry and IPv6 Multicast Address
//     Space Registry (224.0.0.0/4, ff00::/8)
//   - IANA IPv6 Address Space registry: only 2000::/3 is allocated as global
//     unicast; everything else outside the ranges below is reserved by IETF.
//   - Cloud providers' documented metadata endpoints.
//
// Entries that the registries mark "globally reachable" (AS112, AMT, PCP
// anycast, ...) are listed anyway when they sit inside a block that is
// otherwise not: an HTTP client has no business with them, and a short deny
// list is easier to review than a long list of exceptions.

// blockedRange is one non-public range and the words the error uses for it.
type blockedRange struct {
	prefix netip.Prefix
	class  string
}

func mustRanges(pairs ...string) []blockedRange {
	out := make([]blockedRange, 0, len(pairs)/2)
	for i := 0; i < len(pairs); i += 2 {
		out = append(out, blockedRange{netip.MustParsePrefix(pairs[i]), pairs[i+1]})
	}
	return out
}

// cloudMetadata is checked first so the message names it even where a
// broader class (link-local, CGNAT, ULA) also covers the address.
var cloudMetadata = mustRanges(
	"169.254.169.254/32", "a cloud metadata address",
	"169.254.170.2/32", "a cloud metadata address (AWS ECS task metadata)",
	"100.100.100.200/32", "a cloud metadata address (Alibaba Cloud)",
	"168.63.129.16/32", "a cloud platform address (Azure WireServer)",
	"192.0.0.192/32", "a cloud metadata address (Oracle Cloud)",
	"fd00:ec2::254/128", "a cloud metadata address (AWS IPv6)",
	"fd00:ec2::23/128", "a cloud metadata address (AWS IPv6 DNS)",
)

// blockedV4 is the IPv4 special-purpose registry plus multicast and the
// limited broadcast address.
var blockedV4 = mustRanges(
	"0.0.0.0/8", "an unspecified or \"this network\" address (0.0.0.0/8)",
	"10.0.0.0/8", "a private address (10.0.0.0/8)",
	"100.64.0.0/10", "a shared carrier-grade NAT address (100.64.0.0/10)",
	"127.0.0.0/8", "a loopback address (127.0.0.0/8)",
	"169.254.0.0/16", "a link-local address (169.254.0.0/16)",
	"172.16.0.0/12", "a private address (172.16.0.0/12)",
	"192.0.0.0/24", "an IETF protocol assignment (192.0.0.0/24)",
	"192.0.2.0/24", "a documentation address (192.0.2.0/24)",
	"192.31.196.0/24", "an AS112 address (192.31.196.0/24)",
	"192.52.193.0/24", "an AMT address (192.52.193.0/24)",
	"192.88.99.0/24", "a deprecated 6to4 relay address (192.88.99.0/24)",
	"192.168.0.0/16", "a private address (192.168.0.0/16)",
	"192.175.48.0/24", "an AS112 address (192.175.48.0/24)",
	"198.18.0.0/15", "a benchmarking address (198.18.0.0/15)",
	"198.51.100.0/24", "a documentation address (198.51.100.0/24)",
	"203.0.113.0/24", "a documentation address (203.0.113.0/24)",
	"224.0.0.0/4", "a multicast address (224.0.0.0/4)",
	"255.255.255.255/32", "the broadcast address",
	"240.0.0.0/4", "a reserved address (240.0.0.0/4)",
)

// blockedV6 is the IPv6 special-purpose registry and multicast. The
// embedding ranges (IPv4-mapped, IPv4-compatible) are handled before this
// table; NAT64, 6to4 and Teredo are refused whole (see doc.go).
var blockedV6 = mustRanges(
	"::/128", "the unspecified address (::)",
	"::1/128", "the loopback address (::1)",
	"64:ff9b::/96", "a NAT64 address (64:ff9b::/96)",
	"64:ff9b:1::/48", "a local-use NAT64 address (64:ff9b:1::/48)",
	"100::/64", "a discard-only address (100::/64)",
	"100:0:0:1::/64", "a dummy IPv6 prefix address (100:0:0:1::/64)",
	"2001::/32", "a Teredo address (2001::/32)",
	"2001:2::/48", "a benchmarking address (2001:2::/48)",
	"2001:db8::/32", "a documentation address (2001:db8::/32)",
	"2001::/23", "an IETF protocol assignment (2001::/23)",
	"2002::/16", "a 6to4 address (2002::/16)",
	"3fff::/20", "a documentation address (3fff::/20)",
	"5f00::/16", "an SRv6 segment identifier (5f00::/16)",
	"fc00::/7", "a unique local address (fc00::/7)",
	"fe80::/10", "a link-local address (fe80::/10)",
	"fec0::/10", "a site-local address (fec0::/10)",
	"ff00::/8", "a multicast address (ff00::/8)",
)

// globalUnicastV6 is the only IPv6 block IANA has allocated for global
// unicast; any other IPv6 address is reserved.
var globalUnicastV6 = netip.MustParsePrefix("2000::/3")

var (
	v4CompatiblePrefix = netip.MustParsePrefix("::/96")
	nat64Prefixes      = []netip.Prefix{netip.MustParsePrefix("64:ff9b::/96"), netip.MustParsePrefix("64:ff9b:1::/48")}
	sixToFourPrefix    = netip.MustParsePrefix("2002::/16")
	teredoPrefix       = netip.MustParsePrefix("2001::/32")
)

// nonPublic says why addr is not a public unicast address, or "" when it is.
// It looks through IPv4-mapped and IPv4-compatible IPv6 addresses, and names
// the IPv4 address that NAT64, 6to4 and Teredo addresses carry.
func nonPublic(addr netip.Addr) string {
	if !addr.IsValid() {
		return "not a valid address"
	}
	if addr.Zone() != "" {
		return "an address with an interface zone"
	}
	if addr.Is4In6() {
		v4 := addr.Unmap()
		if why := nonPublic(v4); why != "" {
			return fmt.Sprintf("an IPv4-mapped IPv6 address of %s, %s", v4, why)
		}
		return ""
	}
	for _, r := range cloudMetadata {
		if r.prefix.Contains(addr) {
			return r.class
		}
	}
	if addr.Is4() {
		for _, r := range blockedV4 {
			if r.prefix.Contains(addr) {
				return r.class
			}
		}
		return ""
	}
	if v4CompatiblePrefix.Contains(addr) && addr != netip.IPv6Unspecified() && addr != netip.IPv6Loopback() {
		b := addr.As16()
		v4 := netip.AddrFrom4([4]byte(b[12:16]))
		if why := nonPublic(v4); why != "" {
			return fmt.Sprintf("an IPv4-compatible IPv6 address of %s, %s", v4, why)
		}
		return fmt.Sprintf("a deprecated IPv4-compatible IPv6 address (of %s)", v4)
	}
	if v4, ok := embeddedV4(addr); ok {
		for _, r := range blockedV6 {
			if r.prefix.Contains(addr) {
				return fmt.Sprintf("%s carrying the IPv4 address %s", r.class, v4)
			}
		}
	}
	for _, r := range blockedV6 {
		if r.prefix.Contains(addr) {
			return r.class
		}
	}
	if !globalUnicastV6.Contains(addr) {
		return "a reserved IPv6 address (outside 2000::/3)"
	}
	return ""
}

// embeddedV4 extracts the IPv4 address a NAT64, 6to4 or Teredo address
// stands for. For Teredo it is the client's public address, stored
// bit-inverted in the last 32 bits (RFC 4380 §4).
func embeddedV4(addr netip.Addr) (netip.Addr, bool) {
	b := addr.As16()
	switch {
	case nat64Prefixes[0].Contains(addr):
		return netip.AddrFrom4([4]byte(b[12:16])), true
	case nat64Prefixes[1].Contains(addr):
		// RFC 6052 §2.2 with a /48 prefix: bits 48..63 and 72..87 (u-octet
		// at 64..71 skipped).
		return netip.AddrFrom4([4]byte{b[6], b[7], b[9], b[10]}), true
	case sixToFourPrefix.Contains(addr):
		return netip.AddrFrom4([4]byte(b[2:6])), true
	case teredoPrefix.Contains(addr):
		return netip.AddrFrom4([4]byte{^b[12], ^b[13], ^b[14], ^b[15]}), true
	}
	return netip.Addr{}, false
}
