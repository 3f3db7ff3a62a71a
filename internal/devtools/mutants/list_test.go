package mutants

// mutant is one planted bug: in file (from the repository root), the
// snippet from, which must occur exactly once, becomes to. pkgs are the
// packages whose tests must catch it (the file's own by default).
type mutant struct {
	id       string
	file     string
	from, to string
	pkgs     []string
	// run, when set, is the -run pattern of the tests that judge it (a
	// slow package's tests of the code mutated).
	run string
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
	// The CLI's HTTP servers: a connection still sending its body is shed,
	// one with a complete request never (cmd/subako-runner/internal/loopback).
	{id: "loopback/busy-shed", file: "cmd/subako-runner/internal/loopback/loopback.go",
		from: `			if !u.busy && (oldest == nil`, to: `			if (oldest == nil`},
	{id: "loopback/body-never-complete", file: "cmd/subako-runner/internal/loopback/loopback.go",
		from: `		b.once.Do(b.done)`, to: `		_ = b.done`},
	// mcp: a cancel naming no request in flight reaches none.
	{id: "mcpserve/unknown-cancel-passed-on", file: "cmd/subako-runner/internal/mcpserve/ids.go",
		from: `	if !ok {
		res.drop = true
		return res
	}
	res.newly = newly`, to: `	if !ok {
		return res
	}
	res.newly = newly`},
	// The terminal: the whole C1 range is escaped.
	{id: "text/c1-narrowed", file: "internal/text/text.go",
		from: `		case r >= 0x80 && r <= 0x9f:`, to: `		case r >= 0x80 && r < 0x9f:`},
	// Files: only a regular file is read.
	{id: "regfile/only-directories-refused", file: "internal/regfile/regfile.go",
		from: `	if !info.Mode().IsRegular() {`, to: `	if info.IsDir() {`},
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
	// subako_http: a request's hops (redirect.go), its dial (dial.go) and
	// its file output (classify.go).
	{id: "dial/first-answer-only", file: "hostmod/subakohttp/dial.go",
		from: `	for _, a := range addrs {
		if e := c.policy.checkDestination(a); e != nil {`, to: `	for _, a := range addrs[:1] {
		if e := c.policy.checkDestination(a); e != nil {`},
	{id: "redirect/one-more-hop", file: "hostmod/subakohttp/redirect.go",
		from: `if hop+1 > c.cfg.Limits.HTTPRedirects {`, to: `if hop > c.cfg.Limits.HTTPRedirects {`},
	// An entry "h:P" allows both schemes on P, so only the scheme tells
	// https://h:P from http://h:P, where a credential would go in the clear.
	{id: "redirect/credential-across-scheme", file: "hostmod/subakohttp/redirect.go",
		from: `cur.Scheme == originScheme && resolveKey`, to: `(cur.Scheme == originScheme || true) && resolveKey`},
	{id: "redirect/credential-on-upgrade", file: "hostmod/subakohttp/redirect.go",
		from: `cur.Scheme == originScheme && resolveKey`, to: `(cur.Scheme == originScheme || cur.Scheme == "https") && resolveKey`},
	{id: "classify/budget-unchecked", file: "hostmod/subakohttp/classify.go",
		from: `b != nil && !b.Reserve(int64(n))`, to: `b != nil && !b.Reserve(int64(n)) && false`},

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
	// WASI: rights and read-only mounts in path_open (path.go).
	{id: "wasi/readonly-trunc-allowed", file: "wasi/path.go",
		from: `	if dir.readOnly && (write || creat || trunc || `, to: `	if dir.readOnly && (write || creat || `},
	{id: "wasi/readonly-creat-allowed", file: "wasi/path.go",
		from: `	if dir.readOnly && (write || creat || trunc || `, to: `	if dir.readOnly && (write || trunc || `},
	{id: "wasi/rights-not-narrowed", file: "wasi/path.go",
		from: `	base, inherit := p[5]&dir.inherit, p[6]&dir.inherit`, to: `	base, inherit := p[5], p[6]&dir.inherit`},
	{id: "wasi/inheriting-not-narrowed", file: "wasi/path.go",
		from: `	base, inherit := p[5]&dir.inherit, p[6]&dir.inherit`, to: `	base, inherit := p[5]&dir.inherit, p[6]`},
	// WASI: work the guest sizes, bounded (resolve.go, module.go).
	{id: "wasi/resolve-steps-unbounded", file: "wasi/resolve.go",
		from: `	case r.steps > maxResolveSteps:`, to: `	case r.steps > 1<<30:`},
	{id: "wasi/resolve-dotdot-walks-again", file: "wasi/resolve.go",
		from: `const resolveWindow = 32`, to: `const resolveWindow = 1`},
	{id: "wasi/resolve-context-unseen", file: "wasi/resolve.go",
		from: `r.steps%resolveCheckEvery == 0 && r.ctx.Err() != nil`, to: `r.steps%resolveCheckEvery == 0 && false`},
	{id: "wasi/deadline-unchecked-at-entry", file: "wasi/module.go",
		from: `		checkContext(ctx, mod)
		errno := fn(ctx, in, mod, p)`, to: `		errno := fn(ctx, in, mod, p)`},
	{id: "wasi/intr-reaches-guest", file: "wasi/module.go",
		from: `		if errno == errnoIntr {`, to: `		if false {`},
	{id: "links/lock-dropped", file: "wasi/links.go",
		from: `	release, err := in.cfg.Mounts.Lock(ctx, mount)`, to: `	release, err := func() {}, error(nil)`},
	{id: "links/symlink-resolved-twice", file: "wasi/links.go",
		from: `	err := at.dir.Symlink(target, at.base)`, to: `	err := root.Symlink(target, name)`},
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
	{id: "fsmount/lock-shared", file: "fsmount/lock_unix.go",
		from: `syscall.LOCK_EX|syscall.LOCK_NB`, to: `syscall.LOCK_SH|syscall.LOCK_NB`},
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
	// What of a module's custom sections reaches wazero, and what its
	// types may leave on a Runtime (internal/wasmbin/customs.go,
	// internal/compile, internal/modcheck/names.go, limits).
	{id: "names/modcheck-skips-name-section", file: "internal/modcheck/check.go",
		from: `if ps := nameProblems(m); ps != nil {`, to: `if ps := nameProblems(m); false && ps != nil {`},
	{id: "names/validate-given-whole-module", file: "internal/compile/validate.go",
		from: `module, err := engineBytes(module) // customs.go`, to: `module, err := module, error(nil) // customs.go`},
	{id: "names/compile-given-whole-module", file: "internal/compile/compile.go",
		from: `wasm, err := engineBytes(wasm) // customs.go`, to: `wasm, err := wasm, error(nil) // customs.go`},
	{id: "names/compile-dwarf-on", file: "internal/compile/compile.go",
		from: `WithMemoryLimitPages(maxPages).WithDebugInfoEnabled(false)`, to: `WithMemoryLimitPages(maxPages)`},
	{id: "names/validate-dwarf-on", file: "internal/compile/validate.go",
		from: `WithMemoryLimitPages(maxPages).WithDebugInfoEnabled(false)`, to: `WithMemoryLimitPages(maxPages)`},
	{id: "names/count-one-byte-an-entry", file: "internal/wasmbin/customs.go",
		from: `	n, err := r.count(what, 2)`, to: `	n, err := r.count(what, 1)`},
	{id: "names/utf8-unchecked", file: "internal/wasmbin/customs.go",
		from: `	if !utf8.Valid(b) {`, to: `	if !utf8.Valid(b) && false {`},
	{id: "names/check-trailing-bytes-allowed", file: "internal/wasmbin/customs.go",
		from: `		if sr.remaining() != 0 {`, to: `		if false {`},
	{id: "names/engine-trailing-bytes-kept", file: "internal/wasmbin/customs.go",
		from: `ascendingNames(sr, functions) && sr.remaining() == 0`, to: `ascendingNames(sr, functions)`},
	{id: "names/engine-repeated-index-kept", file: "internal/wasmbin/customs.go",
		from: `if err != nil || uint64(idx) < next || uint64(idx) >= limit {`, to: `if err != nil || uint64(idx)+1 < next || uint64(idx) >= limit {`},
	{id: "names/engine-index-one-past", file: "internal/wasmbin/customs.go",
		from: `if err != nil || uint64(idx) < next || uint64(idx) >= limit {`, to: `if err != nil || uint64(idx) < next || uint64(idx) > limit {`},
	{id: "names/engine-second-name-section-kept", file: "internal/wasmbin/customs.go",
		from: `		case s.ID == SectionCustom && s.Name == "name":
		default:`, to: `		default:`},
	{id: "types/values-default-tenfold", file: "limits/limits.go",
		from: `		TypeValues:          10_000,`, to: `		TypeValues:          100_000,`, pkgs: []string{"./internal/modcheck"}},
	{id: "types/types-default-tenfold", file: "limits/limits.go",
		from: `		Types:               1_000,`, to: `		Types:               10_000,`, pkgs: []string{"./internal/modcheck"}},
	// Host calls and the tick's grant (hostcall.go, leaf.go, meter.go),
	// bulk instructions as leaves, and the upload's own validation
	// (internal/compile): the red team's round four.
	{id: "fuel/r4-indirect-host-call-free", file: "internal/fuel/leaf.go",
		from: `		c.host = c.host || f < rw.nImpFuncs` + "\n", to: ``},
	{id: "fuel/r4-tail-ignores-indirect-host-call", file: "internal/fuel/tail.go",
		from: "\t\t\tif callees.host {\n", to: "\t\t\tif false {\n"},
	{id: "fuel/r4-host-call-keeps-tick", file: "internal/fuel/hostcall.go",
		from: `const hostCallTick = -1`, to: `const hostCallTick = 0`},
	{id: "fuel/r4-host-call-keeps-slice", file: "internal/fuel/meter.go",
		from: `	if tickOut {`, to: `	if false {`},
	{id: "fuel/r4-tick-grant-16x-looser", file: "internal/fuel/check.go",
		from: `const tickShift = 4`, to: `const tickShift = 8`},
	{id: "fuel/r4-fill-small-leaf", file: "internal/fuel/leaf.go",
		from: `case wasmbin.OpMemoryGrow, wasmbin.OpMemoryFill, wasmbin.OpMemoryCopy,`, to: `case wasmbin.OpMemoryGrow, wasmbin.OpMemoryCopy,`},
	{id: "fuel/r4-copy-small-leaf", file: "internal/fuel/leaf.go",
		from: `case wasmbin.OpMemoryGrow, wasmbin.OpMemoryFill, wasmbin.OpMemoryCopy,`, to: `case wasmbin.OpMemoryGrow, wasmbin.OpMemoryFill,`},
	{id: "fuel/r4-depth-tail-call-keeps-frame", file: "internal/fuel/body.go",
		from: "\tfr.seg = fr.storeLevel(fr.seg, true)\n\tfr.writeback()\n\tfr.copy(expr)\n}", to: "\tfr.writeback()\n\tfr.copy(expr)\n}"},
	{id: "compile/r4-upload-validation-ignored-when-metered", file: "internal/compile/validate.go",
		from: "\tif err != nil {\n\t\treturn nil, err\n\t}\n\treturn r.metered, r.err", to: "\tif err != nil && r.err != nil {\n\t\treturn nil, err\n\t}\n\treturn r.metered, r.err"},
	// Upload: the structural bounds and the compile cost model
	// (internal/modcheck: check.go, compilecost.go).
	{id: "modcheck/params-not-locals", file: "internal/modcheck/check.go",
		from: `			locals += int64(len(c.m.Types[c.m.Functions[i]].Params))`, to: `			locals += 0`},
	{id: "modcheck/brtable-cost-per-function", file: "internal/modcheck/check.go",
		from: `	if l := s.limits.BrTableCost; l > 0 && s.brCost > l {`, to: `	if l := s.limits.BrTableCost; l > 0 && s.brFnVal > l {`},
	{id: "modcheck/compile-cost-per-function-only", file: "internal/modcheck/compilecost.go",
		from: `	if l := s.limits.CompileCost; l > 0 && s.total > l {`, to: `	if l := s.limits.CompileCost; l > 0 && s.topVal > l {`},
	{id: "modcheck/function-compile-cost-off-by-one", file: "internal/modcheck/compilecost.go",
		from: `	if l := s.limits.FunctionCompileCost; l > 0 && v > l {`, to: `	if l := s.limits.FunctionCompileCost; l > 0 && v > l+1 {`},
	{id: "modcheck/simd-weighed-as-alu", file: "internal/modcheck/compilecost.go",
		from: `	case wasmbin.PrefixSIMD:
		return classSIMD`, to: `	case wasmbin.PrefixSIMD:
		return classALU`},
	{id: "modcheck/division-weighed-as-alu", file: "internal/modcheck/compilecost.go",
		from: `	case b >= 0x6d && b <= 0x70, b >= 0x7f && b <= 0x82: // div, rem`, to: `	case b >= 0x6d && b <= 0x6f, b >= 0x7f && b <= 0x82: // div, rem`},
	{id: "modcheck/host-call-weighed-as-call", file: "internal/modcheck/compilecost.go",
		from: `		if importedCall {`, to: `		if false {`},
	{id: "modcheck/checked-local-ignores-writes", file: "internal/modcheck/compilecost.go",
		from: `			f.version[in.Index]++`, to: `			_ = in.Index`},
	{id: "modcheck/global-kept-across-calls", file: "internal/modcheck/compilecost.go",
		from: `			v = v<<32 | f.calls&(1<<32-1)`, to: `			v = v << 32`},
	{id: "modcheck/store-elided-like-a-load", file: "internal/modcheck/compilecost.go",
		from: `		return op >= 0x28 && op <= 0x35`, to: `		return op >= 0x28 && op <= 0x3e`},
	{id: "modcheck/br-if-not-a-block", file: "internal/modcheck/compilecost.go",
		from: `	case wasmbin.OpBrIf, wasmbin.OpBrTable,`, to: `	case wasmbin.OpBrTable,`},
	{id: "modcheck/grow-not-a-block", file: "internal/modcheck/compilecost.go",
		from: `wasmbin.OpCallRef, wasmbin.OpMemoryGrow:`, to: `wasmbin.OpCallRef:`},
	{id: "modcheck/fill-one-block", file: "internal/modcheck/compilecost.go",
		from: `		return 3
	}`, to: `		return 1
	}`},

	// The package set's budget and holders (runtime/packageset*.go).
	{id: "packageset/opens-not-counted", file: "runtime/packageset_budget.go",
		from: `s.stats.ResidentBytes+s.reservedBytes > s.cfg.MaxBytes`, to: `s.stats.ResidentBytes > s.cfg.MaxBytes`, run: "^TestPackageSet"},
	{id: "packageset/release-closes-under-second-holder", file: "runtime/packageset_open.go",
		from: `	if e.refs == 0 && e.pkg != nil {`, to: `	if e.refs <= 1 && e.pkg != nil {`, run: "^TestPackageSet"},
	{id: "packageset/remove-closes-under-holder", file: "runtime/packageset.go",
		from: `		if e.refs == 0 {`, to: `		if e.refs <= 1 {`, run: "^TestPackageSet"},

	// Worker mode: what the parent never takes on a worker's word
	// (runtime/worker_*.go).
	{id: "worker/environ-inherited", file: "runtime/worker_remote.go",
		from: `	vars := []string{workerConfigEnv + "=" + string(config)}`, to: `	vars := append(os.Environ(), workerConfigEnv+"="+string(config))`, run: "^TestWorkerEnvironment"},
	{id: "worker/tmp-touch-trusted", file: "runtime/worker_remote_call.go",
		from: `	res.reuse, res.lookLater = wr.Reuse, true
`, to: `	res.reuse, res.mounts = wr.Reuse, rs.mounts
`, run: "^TestWorkerTouchedTmp"},
	{id: "worker/handler-goroutine-not-reused", file: "internal/worker/conn.go",
		from: `		case j = <-c.jobs:
`, to: `		case j = <-c.jobs:
			go c.handlerLoop(j)
			return
`, run: "^TestHandlerGoroutinesAreReused"},
	{id: "worker/last-frames-flushed-apart", file: "internal/worker/conn.go",
		from: `	c.wwait.Add(1) // no frame flushes before the last one`, to: `	c.wwait.Add(0)`, run: "^TestSendLast"},
	{id: "worker/idle-reader-not-kicked", file: "internal/worker/conn.go",
		from: `		// closed and park again before the request goes out.
		c.active.Store(time.Now().UnixNano())
		c.src.kick()`, to: `		// closed and park again before the request goes out.
		c.active.Store(time.Now().UnixNano())`, run: "^TestReaderParksWhenIdle"},
	{id: "worker/park-misses-early-kick", file: "internal/worker/spin_unix.go",
		from: `	if mode, _ := r.poll(); mode != pollPark || r.closing.Load() {`, to: `	if false {`, run: "^TestParkSeesAnOperationThatOpenedFirst"},
	{id: "worker/idle-reader-never-settles", file: "internal/worker/pool.go",
		from: `			p.settleIdle(now)`, to: `			_ = now`, run: "^TestReaderParksWhenIdle"},
	{id: "worker/reader-parks-with-operations-open", file: "internal/worker/spin_unix.go",
		from: `			if mode == pollPark && r.park() {`, to: `			if r.park() {`, run: "^TestReaderNeverParksWithOperationsOpen"},
	{id: "worker/waiting-reader-not-interrupted", file: "internal/worker/spin_unix.go",
		from: `	r.rc.Control(func(fd uintptr) { syscall.Shutdown(int(fd), syscall.SHUT_RDWR) })`, to: ``, run: "^TestWaitingReaderEndsOnClose"},
	{id: "worker/long-answer-not-polled", file: "internal/worker/conn.go",
		from: `	case c.parent && idle < spinBusy+spinLong:`, to: `	case c.parent && idle < spinBusy:`, run: "^TestShouldPoll"},
	{id: "worker/busy-worker-answers-wait-in-kernel", file: "internal/worker/conn.go",
		from: `	case c.parent && idle < spinBusy+spinLong:`, to: `	case c.parent && ops == 1 && idle < spinBusy+spinLong:`, run: "^TestShouldPoll"},
	{id: "worker/upload-not-retried", file: "runtime/worker_remote.go",
		from: `		if attempt == 1 {`, to: `		if attempt == 0 {`, run: "^TestWorkerUploadThatKills"},
	{id: "worker/slot-never-released", file: "runtime/worker_remote.go",
		from: `	r.w.hold(r.slot, -r.resident)
`, to: ``, run: "^TestWorkerEntryPoints"},
	{id: "worker/answer-before-events", file: "runtime/worker_remote.go",
		from: `		done := w.evGen[slot] == 0 || w.evSeen[slot] >= seq`, to: `		done := true`, run: "^TestWorkerTraceArrives"},
}
