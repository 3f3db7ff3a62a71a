package subakohttp

import (
	"net/netip"
	"strings"
	"testing"
)

// rangeEdges pins both sides of every range of ranges.go: for each range,
// the address just before it, its first and last address, and the one
// just after. want is "" for a public address, the range's CIDR where the
// refusal must name that range (so a range shrunk inside a wider one is
// seen), and "refused" where another range (or the reserved IPv6 space)
// refuses it too. Written from the registries, not computed from the
// table, so that a changed prefix length is a failing test (CGNAT
// 100.64.0.0/10 shrunk to /16 refused 100.127.255.255 no more).
var rangeEdges = []struct{ addr, want string }{
	{"169.254.169.253", "refused"},
	{"169.254.169.254", "refused"},
	{"169.254.169.255", "refused"},
	{"169.254.170.1", "refused"},
	{"169.254.170.2", "refused"},
	{"169.254.170.3", "refused"},
	{"100.100.100.199", "refused"},
	{"100.100.100.200", "refused"},
	{"100.100.100.201", "refused"},
	{"168.63.129.15", ""},
	{"168.63.129.16", "refused"},
	{"168.63.129.17", ""},
	{"192.0.0.191", "refused"},
	{"192.0.0.192", "refused"},
	{"192.0.0.193", "refused"},
	{"fd00:ec2::253", "refused"},
	{"fd00:ec2::254", "refused"},
	{"fd00:ec2::255", "refused"},
	{"fd00:ec2::22", "refused"},
	{"fd00:ec2::23", "refused"},
	{"fd00:ec2::24", "refused"},
	{"0.0.0.0", "0.0.0.0/8"},
	{"0.255.255.255", "0.0.0.0/8"},
	{"1.0.0.0", ""},
	{"9.255.255.255", ""},
	{"10.0.0.0", "10.0.0.0/8"},
	{"10.255.255.255", "10.0.0.0/8"},
	{"11.0.0.0", ""},
	{"100.63.255.255", ""},
	{"100.64.0.0", "100.64.0.0/10"},
	{"100.127.255.255", "100.64.0.0/10"},
	{"100.128.0.0", ""},
	{"126.255.255.255", ""},
	{"127.0.0.0", "127.0.0.0/8"},
	{"127.255.255.255", "127.0.0.0/8"},
	{"128.0.0.0", ""},
	{"169.253.255.255", ""},
	{"169.254.0.0", "169.254.0.0/16"},
	{"169.254.255.255", "169.254.0.0/16"},
	{"169.255.0.0", ""},
	{"172.15.255.255", ""},
	{"172.16.0.0", "172.16.0.0/12"},
	{"172.31.255.255", "172.16.0.0/12"},
	{"172.32.0.0", ""},
	{"191.255.255.255", ""},
	{"192.0.0.0", "192.0.0.0/24"},
	{"192.0.0.255", "192.0.0.0/24"},
	{"192.0.1.0", ""},
	{"192.0.1.255", ""},
	{"192.0.2.0", "192.0.2.0/24"},
	{"192.0.2.255", "192.0.2.0/24"},
	{"192.0.3.0", ""},
	{"192.31.195.255", ""},
	{"192.31.196.0", "192.31.196.0/24"},
	{"192.31.196.255", "192.31.196.0/24"},
	{"192.31.197.0", ""},
	{"192.52.192.255", ""},
	{"192.52.193.0", "192.52.193.0/24"},
	{"192.52.193.255", "192.52.193.0/24"},
	{"192.52.194.0", ""},
	{"192.88.98.255", ""},
	{"192.88.99.0", "192.88.99.0/24"},
	{"192.88.99.255", "192.88.99.0/24"},
	{"192.88.100.0", ""},
	{"192.167.255.255", ""},
	{"192.168.0.0", "192.168.0.0/16"},
	{"192.168.255.255", "192.168.0.0/16"},
	{"192.169.0.0", ""},
	{"192.175.47.255", ""},
	{"192.175.48.0", "192.175.48.0/24"},
	{"192.175.48.255", "192.175.48.0/24"},
	{"192.175.49.0", ""},
	{"198.17.255.255", ""},
	{"198.18.0.0", "198.18.0.0/15"},
	{"198.19.255.255", "198.18.0.0/15"},
	{"198.20.0.0", ""},
	{"198.51.99.255", ""},
	{"198.51.100.0", "198.51.100.0/24"},
	{"198.51.100.255", "198.51.100.0/24"},
	{"198.51.101.0", ""},
	{"203.0.112.255", ""},
	{"203.0.113.0", "203.0.113.0/24"},
	{"203.0.113.255", "203.0.113.0/24"},
	{"203.0.114.0", ""},
	{"223.255.255.255", ""},
	{"224.0.0.0", "224.0.0.0/4"},
	{"239.255.255.255", "224.0.0.0/4"},
	{"240.0.0.0", "refused"},
	{"255.255.255.254", "refused"},
	{"255.255.255.255", "refused"},
	{"239.255.255.255", "refused"},
	{"240.0.0.0", "240.0.0.0/4"},
	{"255.255.255.255", "refused"},
	{"::", "refused"},
	{"::1", "refused"},
	{"::", "refused"},
	{"::1", "refused"},
	{"::2", "refused"},
	{"64:ff9a:ffff:ffff:ffff:ffff:ffff:ffff", "refused"},
	{"64:ff9b::", "64:ff9b::/96"},
	{"64:ff9b::ffff:ffff", "64:ff9b::/96"},
	{"64:ff9b::1:0:0", "refused"},
	{"64:ff9b:0:ffff:ffff:ffff:ffff:ffff", "refused"},
	{"64:ff9b:1::", "64:ff9b:1::/48"},
	{"64:ff9b:1:ffff:ffff:ffff:ffff:ffff", "64:ff9b:1::/48"},
	{"64:ff9b:2::", "refused"},
	{"ff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", "refused"},
	{"100::", "100::/64"},
	{"100::ffff:ffff:ffff:ffff", "100::/64"},
	{"100:0:0:1::", "refused"},
	{"100::ffff:ffff:ffff:ffff", "refused"},
	{"100:0:0:1::", "100:0:0:1::/64"},
	{"100::1:ffff:ffff:ffff:ffff", "100:0:0:1::/64"},
	{"100:0:0:2::", "refused"},
	{"2000:ffff:ffff:ffff:ffff:ffff:ffff:ffff", ""},
	{"2001::", "2001::/32"},
	{"2001:0:ffff:ffff:ffff:ffff:ffff:ffff", "2001::/32"},
	{"2001:1::", "refused"},
	{"2001:1:ffff:ffff:ffff:ffff:ffff:ffff", "refused"},
	{"2001:2::", "2001:2::/48"},
	{"2001:2:0:ffff:ffff:ffff:ffff:ffff", "2001:2::/48"},
	{"2001:2:1::", "refused"},
	{"2001:db7:ffff:ffff:ffff:ffff:ffff:ffff", ""},
	{"2001:db8::", "2001:db8::/32"},
	{"2001:db8:ffff:ffff:ffff:ffff:ffff:ffff", "2001:db8::/32"},
	{"2001:db9::", ""},
	{"2000:ffff:ffff:ffff:ffff:ffff:ffff:ffff", ""},
	{"2001::", "refused"},
	{"2001:1ff:ffff:ffff:ffff:ffff:ffff:ffff", "2001::/23"},
	{"2001:200::", ""},
	{"2001:ffff:ffff:ffff:ffff:ffff:ffff:ffff", ""},
	{"2002::", "2002::/16"},
	{"2002:ffff:ffff:ffff:ffff:ffff:ffff:ffff", "2002::/16"},
	{"2003::", ""},
	{"3ffe:ffff:ffff:ffff:ffff:ffff:ffff:ffff", ""},
	{"3fff::", "3fff::/20"},
	{"3fff:fff:ffff:ffff:ffff:ffff:ffff:ffff", "3fff::/20"},
	{"3fff:1000::", ""},
	{"5eff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", "refused"},
	{"5f00::", "5f00::/16"},
	{"5f00:ffff:ffff:ffff:ffff:ffff:ffff:ffff", "5f00::/16"},
	{"5f01::", "refused"},
	{"fbff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", "refused"},
	{"fc00::", "fc00::/7"},
	{"fdff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", "fc00::/7"},
	{"fe00::", "refused"},
	{"fe7f:ffff:ffff:ffff:ffff:ffff:ffff:ffff", "refused"},
	{"fe80::", "fe80::/10"},
	{"febf:ffff:ffff:ffff:ffff:ffff:ffff:ffff", "fe80::/10"},
	{"fec0::", "refused"},
	{"febf:ffff:ffff:ffff:ffff:ffff:ffff:ffff", "refused"},
	{"fec0::", "fec0::/10"},
	{"feff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", "fec0::/10"},
	{"ff00::", "refused"},
	{"feff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", "refused"},
	{"ff00::", "ff00::/8"},
	{"ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", "ff00::/8"},
}

func TestEveryRangeEdgeBothSides(t *testing.T) {
	for _, tc := range rangeEdges {
		why := nonPublic(netip.MustParseAddr(tc.addr))
		switch tc.want {
		case "":
			if why != "" {
				t.Errorf("%s refused (%s), want public", tc.addr, why)
			}
		case "refused":
			if why == "" {
				t.Errorf("%s allowed, want refused", tc.addr)
			}
		default:
			if !strings.Contains(why, tc.want) {
				t.Errorf("%s: %q, want it refused as %s", tc.addr, why, tc.want)
			}
		}
		// The same address mapped into IPv6 is judged as the IPv4 one.
		if a := netip.MustParseAddr(tc.addr); a.Is4() {
			mapped := netip.AddrFrom16(a.As16())
			if got := nonPublic(mapped); (got == "") != (why == "") {
				t.Errorf("%s is %q, but %s is %q", mapped, got, tc.addr, why)
			}
		}
	}
}

// TestAllowPrivateWidensOnlyItsRange: an --allow-private range lets
// through exactly its addresses, written as IPv4 or IPv4-mapped IPv6, and
// nothing next to them: 127.0.0.1/32 must not become every mapped address,
// nor its neighbours, nor another private range.
func TestAllowPrivateWidensOnlyItsRange(t *testing.T) {
	tests := []struct {
		allow   []string
		addr    string
		allowed bool
	}{
		{[]string{"127.0.0.1/32"}, "127.0.0.1", true},
		{[]string{"127.0.0.1/32"}, "::ffff:127.0.0.1", true},
		{[]string{"127.0.0.1/32"}, "127.0.0.2", false},
		{[]string{"127.0.0.1/32"}, "127.0.0.0", false},
		{[]string{"127.0.0.1/32"}, "::ffff:127.0.0.2", false},
		{[]string{"127.0.0.1/32"}, "::ffff:10.0.0.1", false},
		{[]string{"127.0.0.1/32"}, "::ffff:169.254.169.254", false},
		{[]string{"127.0.0.1/32"}, "10.0.0.1", false},
		{[]string{"127.0.0.1/32"}, "::1", false},
		{[]string{"127.0.0.1/32"}, "::127.0.0.1", false}, // IPv4-compatible is not IPv4-mapped
		{[]string{"127.0.0.1/32"}, "64:ff9b::7f00:1", false},
		{[]string{"10.0.0.0/8"}, "10.255.255.255", true},
		{[]string{"10.0.0.0/8"}, "::ffff:10.0.0.0", true},
		{[]string{"10.0.0.0/8"}, "11.0.0.0", true}, // public anyway
		{[]string{"10.0.0.0/8"}, "172.16.0.1", false},
		{[]string{"::1/128"}, "::1", true},
		{[]string{"::1/128"}, "127.0.0.1", false},
		{[]string{"::1/128"}, "::2", false},
		{[]string{"fc00::/7"}, "fd00::1", true},
		{[]string{"fc00::/7"}, "fe80::1", false},
		{[]string{"::ffff:127.0.0.1/128"}, "::ffff:127.0.0.1", true},
		{[]string{"::ffff:127.0.0.1/128"}, "::ffff:127.0.0.2", false},
		{nil, "127.0.0.1", false},
		{nil, "::ffff:127.0.0.1", false},
		{nil, "8.8.8.8", true},
		{nil, "::ffff:8.8.8.8", true},
	}
	for _, tt := range tests {
		p, err := NewPolicy(PolicyConfig{AllowPrivate: tt.allow})
		if err != nil {
			t.Fatal(err)
		}
		e := p.checkDestination(netip.MustParseAddr(tt.addr))
		if (e == nil) != tt.allowed {
			t.Errorf("allow-private %v, %s: refusal %v, want allowed %v", tt.allow, tt.addr, e, tt.allowed)
		}
		if e != nil && e.Kind != KindForbiddenDestination {
			t.Errorf("allow-private %v, %s: kind %s", tt.allow, tt.addr, e.Kind)
		}
	}
	// DisableDestinationCheck lets every address through; without it, the
	// same policy refuses.
	off, _ := NewPolicy(PolicyConfig{DisableDestinationCheck: true})
	on, _ := NewPolicy(PolicyConfig{})
	for _, a := range []string{"127.0.0.1", "169.254.169.254", "::1"} {
		if off.checkDestination(netip.MustParseAddr(a)) != nil || on.checkDestination(netip.MustParseAddr(a)) == nil {
			t.Errorf("%s: the destination check does not follow DisableDestinationCheck", a)
		}
	}
}

// TestNonPublicRefusesOddForms: an address with a zone, an invalid one and
// every IPv6 address outside 2000::/3 are refused; 2000::/3's own edges.
func TestNonPublicRefusesOddForms(t *testing.T) {
	refused := []netip.Addr{
		{},
		netip.MustParseAddr("fe80::1%eth0"),
		netip.MustParseAddr("2606:4700::1%1"),
		netip.MustParseAddr("1fff:ffff:ffff:ffff:ffff:ffff:ffff:ffff"),
		netip.MustParseAddr("4000::"),
		netip.MustParseAddr("::8.8.8.8"), // IPv4-compatible, deprecated
	}
	for _, a := range refused {
		if nonPublic(a) == "" {
			t.Errorf("%v allowed", a)
		}
	}
	for _, s := range []string{"2000::", "2400:cb00::1", "3ffe:ffff:ffff:ffff:ffff:ffff:ffff:ffff"} {
		if why := nonPublic(netip.MustParseAddr(s)); why != "" {
			t.Errorf("%s refused: %s", s, why)
		}
	}
}

// TestWildcardNeverReachesUnderItsOwnSuffix is the second line behind
// NewPolicy's refusal of wildcards on public suffixes: an entry that got
// past it (built here directly) still matches no name whose public
// suffix is its domain or lies below it, and matches a plain registered
// domain's names.
func TestWildcardNeverReachesUnderItsOwnSuffix(t *testing.T) {
	tests := []struct {
		domain, host string
		want         bool
	}{
		{"github.io", "user.github.io", false},         // the suffix is the domain itself
		{"amazonaws.com", "b.s3.amazonaws.com", false}, // a suffix below the domain
		{"example.com", "a.example.com", true},         // a registered domain's name
		{"example.com", "a.b.example.com", true},       // deeper under it
		{"kawasaki.jp", "city.kawasaki.jp", false},     // an exception rule: the suffix is kawasaki.jp
		{"kawasaki.jp", "x.city.kawasaki.jp", false},   // under it too
		{"s3.amazonaws.com", "b.s3.amazonaws.com", false},
	}
	for _, tt := range tests {
		d, err := normalizeHost(tt.domain)
		if err != nil {
			t.Fatal(err)
		}
		h, err := normalizeHost(tt.host)
		if err != nil {
			t.Fatal(err)
		}
		e := &entry{wildcard: true, host: d}
		if got := e.matches("https", h, 443); got != tt.want {
			t.Errorf("*.%s matches %s = %v, want %v", tt.domain, tt.host, got, tt.want)
		}
	}
}

// TestCloudMetadataIsNamed: each cloud metadata address is refused as
// one, even where a wider range (link-local, CGNAT, ULA) refuses it too,
// so the refusal says what was at stake; its neighbours are not.
func TestCloudMetadataIsNamed(t *testing.T) {
	for _, tc := range []struct {
		addr     string
		metadata bool
	}{
		{"169.254.169.254", true}, {"169.254.169.253", false}, {"169.254.169.255", false},
		{"169.254.170.2", true}, {"169.254.170.3", false},
		{"100.100.100.200", true}, {"100.100.100.201", false},
		{"168.63.129.16", true},
		{"192.0.0.192", true}, {"192.0.0.193", false},
		{"fd00:ec2::254", true}, {"fd00:ec2::255", false},
		{"fd00:ec2::23", true}, {"fd00:ec2::24", false},
		{"::ffff:169.254.169.254", true},
	} {
		why := nonPublic(netip.MustParseAddr(tc.addr))
		if why == "" {
			t.Errorf("%s allowed", tc.addr)
		}
		if got := strings.Contains(why, "cloud"); got != tc.metadata {
			t.Errorf("%s: %q; want it named a cloud address: %v", tc.addr, why, tc.metadata)
		}
	}
}

// TestSpecialAddressesAreNamed: the single addresses whose class has no
// CIDR in its words are refused as what they are, not only as reserved
// space that happens to hold them.
func TestSpecialAddressesAreNamed(t *testing.T) {
	for _, tc := range []struct{ addr, want string }{
		{"::1", "loopback"},
		{"::", "unspecified"},
		{"255.255.255.255", "broadcast"},
		{"::ffff:127.0.0.1", "loopback"},
	} {
		if why := nonPublic(netip.MustParseAddr(tc.addr)); !strings.Contains(why, tc.want) {
			t.Errorf("%s: %q, want it named %s", tc.addr, why, tc.want)
		}
	}
}
