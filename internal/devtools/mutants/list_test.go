package mutants

// mutant is one planted bug: in file (from the repository root), the
// snippet from, which must occur exactly once, becomes to. pkgs are the
// packages whose tests must catch it (the file's own by default).
type mutant struct {
	id       string
	file     string
	from, to string
	pkgs     []string
}

// list is the kept list of mutants. Keep each one a bug someone could
// plausibly write (a boundary off by one, a range too narrow, a check
// dropped), not a syntax change no one would make, and none equivalent
// to the code (policy.go's 1<<20 for an exact entry is not listed: an
// exact name is always longer than any wildcard domain that matches the
// same host, so the term never decides).
var list = []mutant{
	// subako_http: PolicyConfig's addresses, strings parsed (policy.go).
	{id: "addrstr/private-bare-widened", file: "hostmod/subakohttp/policy.go",
		from: `return netip.PrefixFrom(ip, ip.BitLen()), nil`, to: `return netip.PrefixFrom(ip, ip.BitLen()-8), nil`},
	{id: "addrstr/resolve-zone-accepted", file: "hostmod/subakohttp/policy.go",
		from: `if err != nil || ip.Zone() != "" {
				return nil, fmt.Errorf("subakohttp: resolve entry`, to: `if err != nil {
				return nil, fmt.Errorf("subakohttp: resolve entry`},
	// subako_http: which addresses a request may reach (ranges.go).
	{id: "ranges/cgnat-narrowed", file: "hostmod/subakohttp/ranges.go",
		from: `"100.64.0.0/10", "a shared`, to: `"100.64.0.0/16", "a shared`},
	{id: "ranges/private10-narrowed", file: "hostmod/subakohttp/ranges.go",
		from: `"10.0.0.0/8", "a private`, to: `"10.0.0.0/16", "a private`},
	{id: "ranges/private172-narrowed", file: "hostmod/subakohttp/ranges.go",
		from: `"172.16.0.0/12", "a private`, to: `"172.16.0.0/16", "a private`},
	{id: "ranges/loopback-narrowed", file: "hostmod/subakohttp/ranges.go",
		from: `"127.0.0.0/8", "a loopback`, to: `"127.0.0.0/24", "a loopback`},
	{id: "ranges/linklocal-narrowed", file: "hostmod/subakohttp/ranges.go",
		from: `"169.254.0.0/16", "a link-local`, to: `"169.254.169.0/24", "a link-local`},
	{id: "ranges/ula-narrowed", file: "hostmod/subakohttp/ranges.go",
		from: `"fc00::/7", "a unique local`, to: `"fd00::/8", "a unique local`},
	{id: "ranges/benchmarking-widened", file: "hostmod/subakohttp/ranges.go",
		from: `"198.18.0.0/15", "a benchmarking`, to: `"198.16.0.0/14", "a benchmarking`},
	{id: "ranges/metadata-dropped", file: "hostmod/subakohttp/ranges.go",
		from: `	"169.254.169.254/32", "a cloud metadata address",` + "\n", to: ``},
	{id: "ranges/mapped-not-unmapped", file: "hostmod/subakohttp/ranges.go",
		from: `	if addr.Is4In6() {`, to: `	if false {`},
	{id: "ranges/reserved-v6-allowed", file: "hostmod/subakohttp/ranges.go",
		from: `	if !globalUnicastV6.Contains(addr) {`, to: `	if false {`},
	{id: "ranges/teredo-not-inverted", file: "hostmod/subakohttp/ranges.go",
		from: `{^b[12], ^b[13], ^b[14], ^b[15]}`, to: `{b[12], b[13], b[14], b[15]}`},
	{id: "ranges/this-network-narrowed", file: "hostmod/subakohttp/ranges.go",
		from: `	"0.0.0.0/8", "an unspecified`, to: `	"0.0.0.0/32", "an unspecified`},
	{id: "ranges/private192-narrowed", file: "hostmod/subakohttp/ranges.go",
		from: `	"192.168.0.0/16", "a private`, to: `	"192.168.0.0/24", "a private`},
	{id: "ranges/multicast-narrowed", file: "hostmod/subakohttp/ranges.go",
		from: `	"224.0.0.0/4", "a multicast`, to: `	"224.0.0.0/8", "a multicast`},
	{id: "ranges/v6-loopback-dropped", file: "hostmod/subakohttp/ranges.go",
		from: `	"::1/128", "the loopback address (::1)",` + "\n", to: ``},
	{id: "ranges/v6-linklocal-narrowed", file: "hostmod/subakohttp/ranges.go",
		from: `	"fe80::/10", "a link-local`, to: `	"fe80::/16", "a link-local`},
	// subako_http: the allowlist and the destination check (policy.go).
	{id: "policy/allow-private-every-mapped", file: "hostmod/subakohttp/policy.go",
		from: `pre.Contains(addr) || (addr.Is4In6() && pre.Contains(addr.Unmap()))`, to: `pre.Contains(addr) || addr.Is4In6()`},
	{id: "policy/destination-check-inverted", file: "hostmod/subakohttp/policy.go",
		from: `	if p.noDestCheck {`, to: `	if !p.noDestCheck {`},
	{id: "policy/port-lower-matches", file: "hostmod/subakohttp/policy.go",
		from: `	if port != want {`, to: `	if port > want {`},
	{id: "policy/default-port-https", file: "hostmod/subakohttp/policy.go",
		from: `		want = defaultPort(scheme)`, to: `		want = 443`},
	{id: "policy/wildcard-without-dot", file: "hostmod/subakohttp/policy.go",
		from: `return strings.HasSuffix(h.name, "."+e.host.name) && !underSuffixBelow`, to: `return strings.HasSuffix(h.name, e.host.name) && !underSuffixBelow`},
	{id: "policy/exact-name-as-suffix", file: "hostmod/subakohttp/policy.go",
		from: `	return h.name == e.host.name`, to: `	return strings.HasSuffix(h.name, e.host.name)`},
	{id: "policy/ip-entry-matches-mapped", file: "hostmod/subakohttp/policy.go",
		from: `h.ip == e.host.ip`, to: `h.ip.Unmap() == e.host.ip.Unmap()`},
	{id: "policy/suffix-below-strict", file: "hostmod/subakohttp/policy.go",
		from: `	return len(ps) >= len(domain)
}`, to: `	return len(ps) > len(domain)
}`},

	// The write budget (limits/budget.go).
	{id: "budget/one-byte-free", file: "limits/budget.go",
		from: `	if n <= 0 {
		return true
	}`, to: `	if n <= 1 {
		return true
	}`, pkgs: []string{"./limits", "./wasi"}},
	{id: "budget/exact-fill-refused", file: "limits/budget.go",
		from: `		if n > b.limit-used {`, to: `		if n >= b.limit-used {`, pkgs: []string{"./limits", "./wasi"}},
	{id: "budget/one-entry-past-cap", file: "limits/budget.go",
		from: `		if n >= b.maxEntries {`, to: `		if n > b.maxEntries {`, pkgs: []string{"./limits", "./wasi"}},
	{id: "budget/link-target-one-more", file: "limits/budget.go",
		from: `	if extra > MaxLinkTarget {`, to: `	if extra > MaxLinkTarget+1 {`},
	{id: "budget/refund-charges", file: "limits/budget.go",
		from: `		b.used.Add(-n)`, to: `		b.used.Add(n)`},
	{id: "budget/no-default-cap", file: "limits/budget.go",
		from: `	if maxEntries <= 0 {`, to: `	if maxEntries < 0 {`},

	// WASI: what the guest's writes are charged.
	{id: "wasi/hole-free", file: "wasi/fd.go",
		from: `	hole := max(0, pos-size)`, to: `	hole := int64(0)`},
	{id: "wasi/last-byte-free", file: "wasi/fd.go",
		from: `	cost := int64(total) + hole`, to: `	cost := int64(total) - 1 + hole`},
	{id: "wasi/growth-byte-free", file: "wasi/fd.go",
		from: `	if growth > 0 && in.cfg.Budget != nil && !in.cfg.Budget.Reserve(growth) {`, to: `	if growth > 1 && in.cfg.Budget != nil && !in.cfg.Budget.Reserve(growth) {`},
	{id: "wasi/create-uncharged", file: "wasi/path.go",
		from: `excl || errors.Is(err, fs.ErrNotExist)`, to: `excl && errors.Is(err, fs.ErrNotExist)`},
	// WASI: path rules (path.go) and lengths.
	{id: "wasi/absolute-passed-on", file: "wasi/path.go",
		from: `	case strings.HasPrefix(s, "/"), climbsFirst(s):`, to: `	case climbsFirst(s):`},
	{id: "wasi/dotdot-passed-on", file: "wasi/path.go",
		from: `		case "..":
			return true`, to: `		case "..":
			return false`},
	{id: "wasi/nul-at-start-only", file: "wasi/path.go",
		from: `	case strings.IndexByte(s, 0) >= 0:`, to: `	case strings.IndexByte(s, 0) == 0:`},
	{id: "wasi/path-max-inclusive", file: "wasi/path.go",
		from: `	if n >= fsmount.PathMax {`, to: `	if n > fsmount.PathMax {`},
	{id: "wasi/path-unbounded", file: "wasi/path.go",
		from: `	if n >= fsmount.PathMax {`, to: `	if n >= 1<<31 {`},
	{id: "wasi/descriptor-path-unbounded", file: "wasi/path.go",
		from: `	if len(rel) >= fsmount.PathMax {`, to: `	if len(rel) > 1<<30 {`},
	{id: "wasi/climb-stops-at-dot", file: "wasi/path.go",
		from: `		case ".", "":`, to: `		case "":`},
	{id: "wasi/lex-dotdot-prefix", file: "wasi/path.go",
		from: `strings.HasPrefix(c, "../")`, to: `strings.HasPrefix(c, "..")`},
	{id: "wasi/lex-bare-dotdot", file: "wasi/path.go",
		from: `path.IsAbs(c) || c == ".." || `, to: `path.IsAbs(c) || `},
	{id: "wasi/two-dirs-new-unchecked", file: "wasi/path.go",
		from: `	if lexEscapes(oldPath) || lexEscapes(newPath) {`, to: `	if lexEscapes(oldPath) {`},
	{id: "wasi/two-mounts-not-exdev", file: "wasi/path.go",
		from: `	if a.mount != b.mount || in.cfg.Mounts == nil {`, to: `	if in.cfg.Mounts == nil {`},
	{id: "wasi/iovec-count-one-more", file: "wasi/module.go",
		from: `	if n > maxIovecs {`, to: `	if n > maxIovecs+1 {`},
	{id: "wasi/subscriptions-one-more", file: "wasi/poll.go",
		from: `	if n == 0 || n > maxSubscriptions {`, to: `	if n == 0 || n > maxSubscriptions+1 {`},
	// WASI: link rules (links.go).
	{id: "links/dotdot-after-name", file: "wasi/links.go",
		from: `			if named {`, to: `			if false && named {`},
	{id: "links/climb-one-more", file: "wasi/links.go",
		from: `	if !ok || up > maxLinkClimb {`, to: `	if !ok || up > maxLinkClimb+1 {`},
	{id: "links/new-link-one-deeper", file: "wasi/links.go",
		from: `	if up > depth {`, to: `	if up > depth+1 {`},
	{id: "links/moved-link-one-deeper", file: "wasi/links.go",
		from: `	return !ok || up > depth`, to: `	return !ok || up > depth+1`},
	{id: "links/moved-dir-up-one-unchecked", file: "wasi/links.go",
		from: `		if newDepth >= oldDepth {`, to: `		if newDepth+1 >= oldDepth {`},

	// Mount prefixes (fsmount).
	{id: "fsmount/prefix-without-slash", file: "fsmount/fsmount.go",
		from: `		case strings.HasPrefix(guestPath, m.Guest+"/"):`, to: `		case strings.HasPrefix(guestPath, m.Guest):`},
	{id: "fsmount/first-not-longest", file: "fsmount/fsmount.go",
		from: `		if best < 0 || len(m.Guest) > len(s.mounts[best].Guest) {`, to: `		if best < 0 {`},
	{id: "fsmount/root-holds-relative", file: "fsmount/fsmount.go",
		from: `		case m.Guest == "/" && strings.HasPrefix(guestPath, "/"):`, to: `		case m.Guest == "/":`},
	{id: "fsmount/path-max-inclusive", file: "fsmount/fsmount.go",
		from: `	if len(guestPath) >= PathMax {`, to: `	if len(guestPath) > PathMax {`},
	{id: "fsmount/error-quotes-whole-path", file: "fsmount/fsmount.go",
		from: `Path: p[:64] + "..."`, to: `Path: p`},
	{id: "fsmount/readonly-only-wronly", file: "fsmount/fsmount.go",
		from: `	if s.mounts[i].ReadOnly && flag&writeFlags != 0 {`, to: `	if s.mounts[i].ReadOnly && flag&os.O_WRONLY != 0 {`},
	{id: "fsmount/skills-follow-links", file: "fsmount/fsmount.go",
		from: `			if e.IsDir() {`, to: `			if e.IsDir() || e.Type()&fs.ModeSymlink != 0 {`},
	{id: "fsmount/unclean-guest", file: "fsmount/fsmount.go",
		from: `		if !path.IsAbs(m.Guest) || path.Clean(m.Guest) != m.Guest {`, to: `		if !path.IsAbs(m.Guest) {`},
	{id: "volume/dotdot-allowed", file: "fsmount/volume.go",
		from: `seg == "" || seg == "." || seg == ".."`, to: `seg == "" || seg == "."`},
	{id: "volume/prefix-without-slash", file: "fsmount/volume.go",
		from: `!strings.HasPrefix(p, GuestTmp+"/") && !strings.HasPrefix(p, GuestData+"/")`, to: `!strings.HasPrefix(p, GuestTmp) && !strings.HasPrefix(p, GuestData)`},
	{id: "volume/nul-allowed", file: "fsmount/volume.go",
		from: `	if strings.IndexByte(p, 0) >= 0 {`, to: `	if false {`},
	// Fuel: what a small leaf is, where a call's return checks, the
	// meter's halves (leaf.go, tail.go, code.go).
	{id: "fuel/small-leaf-one-byte-larger", file: "internal/fuel/leaf.go",
		from: `if rw.shapes[i] != 0 || len(code.Expr) > smallLeafBytes`, to: `if rw.shapes[i] != 0 || len(code.Expr) > smallLeafBytes+1`},
	{id: "fuel/indirect-pays-cheapest-leaf", file: "internal/fuel/leaf.go",
		from: `c.leafCost = max(c.leafCost, cost)`, to: `c.leafCost = min(max(c.leafCost, 1), cost)`},
	{id: "fuel/tail-one-longer", file: "internal/fuel/tail.go",
		from: `			if c > maxUncheckedTail {`, to: `			if c > maxUncheckedTail+1 {`},
	{id: "fuel/tail-loop-branch-unchecked", file: "internal/fuel/tail.go",
		from: `f.fromLabel = 0 // a branch to a loop`, to: `f.fromLabel = c // a branch to a loop`},
	{id: "fuel/tick-grant-unbounded", file: "internal/fuel/meter.go",
		from: `return uint64(counter)<<tickShift<<32 | uint64(uint32(counter))`, to: `return 0x7fffffff<<32 | uint64(uint32(counter))`},
	{id: "fuel/body-bound-off-by-one", file: "internal/fuel/code.go",
		from: `	if len(code.Expr) > maxBodyBytes {`, to: `	if len(code.Expr) > maxBodyBytes+1 {`},
}
