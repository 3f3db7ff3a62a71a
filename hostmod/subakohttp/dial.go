package subakohttp

import (
	"context"
	"net"
	"net/netip"
	"strconv"
	"syscall"
)

// dialContext resolves the host itself (pinned answers, then the system
// resolver), refuses the connection if any answer is not public, and dials
// exactly the addresses it checked; the Control hook checks once more on
// the socket's own address. Every connection goes through here, so a DNS
// answer that changes between lookups cannot reach a private address.
func (c *Call) dialContext(ctx context.Context, network, address string) (net.Conn, error) {
	hs, ps, err := net.SplitHostPort(address)
	if err != nil {
		return nil, err
	}
	h, err := normalizeHost(hs)
	if err != nil {
		return nil, err
	}
	port, err := strconv.Atoi(ps)
	if err != nil {
		return nil, err
	}
	addrs, err := c.resolve(ctx, h, port)
	if err != nil {
		return nil, err
	}
	for _, a := range addrs {
		if e := c.policy.checkDestination(a); e != nil {
			return nil, e
		}
	}
	var last error
	for _, a := range addrs {
		target := netip.AddrPortFrom(a.Unmap(), uint16(port)).String()
		conn, err := c.dialChecked(ctx, network, target)
		if err == nil {
			return conn, nil
		}
		last = err
		if ctx.Err() != nil {
			break
		}
	}
	return nil, last
}

func (c *Call) dialChecked(ctx context.Context, network, target string) (net.Conn, error) {
	if c.rawDial != nil {
		return c.rawDial(ctx, network, target)
	}
	d := net.Dialer{
		Control: func(_, address string, _ syscall.RawConn) error {
			ap, err := netip.ParseAddrPort(address)
			if err != nil {
				return errorf(KindForbiddenDestination, "the host could not read the address it was about to dial")
			}
			if e := c.policy.checkDestination(ap.Addr()); e != nil {
				return e
			}
			return nil
		},
	}
	return d.DialContext(ctx, network, target)
}

func (c *Call) resolve(ctx context.Context, h normHost, port int) ([]netip.Addr, error) {
	if h.isIP() {
		return []netip.Addr{h.ip}, nil
	}
	if addrs, ok := c.policy.resolve[resolveKey(h, port)]; ok {
		return addrs, nil
	}
	var addrs []netip.Addr
	var err error
	if c.lookup != nil {
		addrs, err = c.lookup(ctx, h.name)
	} else {
		addrs, err = net.DefaultResolver.LookupNetIP(ctx, "ip", h.name)
	}
	if err != nil {
		return nil, err
	}
	if len(addrs) == 0 {
		return nil, &net.DNSError{Err: "no addresses", Name: h.name, IsNotFound: true}
	}
	// A resolver's IPv4 answer may come IPv4-mapped (::ffff:127.0.0.1, from
	// Go's for a name in /etc/hosts): it is the IPv4 address, checked and
	// reported as such. The check sees through the mapping either way.
	for i, a := range addrs {
		addrs[i] = a.Unmap()
	}
	return addrs, nil
}
