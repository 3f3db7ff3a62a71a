package conformance

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/subako/subako-runner/limits"
	"github.com/subako/subako-runner/protocol"
	srt "github.com/subako/subako-runner/runtime"
)

func (r *run) checkManifest(src *srt.Source) {
	c := r.fixed.packageManifest
	var bad []srt.Rejection
	for _, rej := range src.Rejections {
		if rej.Code == srt.CodeBadManifest || rej.Code == srt.CodeMissingModule {
			bad = append(bad, rej)
		}
	}
	switch {
	case len(bad) > 0:
		c.set(Fail, "%s", rejections(bad))
	case src.Manifest == nil:
		c.set(Warn, "a bare module: the CLI runs it, but an upload is a directory with subako-package.json ({\"abi\": 1, \"name\": ..., \"version\": ...}) beside module.wasm")
	case len(src.Manifest.Unknown) > 0:
		c.set(Warn, "unknown field(s) %s are tolerated (forward compatibility) but mean nothing to ABI 1: known fields are abi, name, version, description", strings.Join(src.Manifest.Unknown, ", "))
	default:
		m := src.Manifest
		c.set(Pass, "abi %d, name %q, version %q", m.ABI, m.Name, m.Version)
	}
}

func (r *run) discoveryFailed(rej *srt.RejectedError) {
	detail := "the host refuses the upload:\n" + rejections(rej.Rejections)
	if rej.Crash != nil {
		detail += "\n" + stderrEvidence(rej.Crash.Stderr)
	}
	r.fixed.discoveryOK.set(Fail, "%s", detail)
	if rej.Crash != nil {
		r.record(evidence{probe: "discovery.ok", crash: rej.Crash, stderr: rej.Crash.Stderr})
		switch rej.Crash.Reason {
		case srt.CrashTimeout:
			r.fixed.discoveryTime.set(Fail, "discovery ran out of its %v: %s", r.lim.DiscoveryTimeout, rej.Crash.Message)
		case srt.CrashNotJSONRPC, srt.CrashOutputTooLarge, srt.CrashServerRequest:
			r.addAll(lateChecks)
			r.fixed.stdoutOnlyJSONRPC.set(Fail, "during discovery: %s", rej.Crash.Message)
		}
	}
	if r.fixed.viewRenders == nil {
		r.addAll(lateChecks)
	}
	r.skipRest("skipped: discovery failed (see discovery.ok)")
}

// rejections lists the host's rejections one a line, each after the
// upload stage that found it (srt.RejectionCodes).
func rejections(list []srt.Rejection) string {
	stage := map[string]srt.Stage{}
	for _, c := range srt.RejectionCodes(limits.Default()) {
		stage[c.Code] = c.Stage
	}
	var b strings.Builder
	for i, rej := range list {
		if i > 0 {
			b.WriteByte('\n')
		}
		if s, ok := stage[rej.Code]; ok {
			fmt.Fprintf(&b, "%s, ", s)
		}
		fmt.Fprintf(&b, "%s: %s", rej.Code, rej.Message)
	}
	return b.String()
}

func (r *run) readImports(checked *srt.Checked) {
	r.imports = map[string]bool{}
	for _, im := range checked.Imports() {
		r.imports[im.Module+"."+im.Name] = true
	}
}

// checkSchema judges the members the official schema requires, from what
// protocol.ParseDiscover kept of them.
func (r *run) checkSchema(d protocol.DiscoverResult) {
	const why = "required by the official MCP 2026-07-28 schema; the host tolerates its absence, other MCP clients may not"
	present := func(c *Check, member, example string, ok bool, value json.RawMessage) {
		if ok {
			c.set(Pass, "server/discover has %s: %s", member, excerpt(string(value), 120))
			return
		}
		c.set(Warn, "server/discover has no %s (%s); add %s", member, why, example)
	}
	present(r.fixed.schemaResultType, "resultType", `"resultType": "complete"`, d.ResultType != nil, d.ResultType)
	present(r.fixed.schemaTTLMs, "ttlMs", `"ttlMs": 0`, d.TTLMs != nil, d.TTLMs)
	present(r.fixed.schemaCacheScope, "cacheScope", `"cacheScope": "public"`, d.CacheScope != nil, d.CacheScope)
	present(r.fixed.schemaServerInfo, "serverInfo", `"_meta": {"io.modelcontextprotocol/serverInfo": {"name": ..., "version": ...}}`, d.ServerInfo != nil, d.ServerInfo)
}

func (r *run) checkToolList() {
	var long, undescribed []string
	for _, t := range r.tools {
		if n := len([]rune(t.Name)); n > protocol.ConformanceToolNameLen {
			long = append(long, fmt.Sprintf("%s (%d characters)", excerpt(t.Name, 40), n))
		}
		if strings.TrimSpace(t.Description) == "" {
			undescribed = append(undescribed, t.Name)
		}
	}
	if len(long) > 0 {
		r.fixed.toolsNameLength.set(Warn, "ABI 1 accepts up to %d characters, but the MCP conformance suite (and some clients) allow %d: shorten %s",
			protocol.MaxToolNameLen, protocol.ConformanceToolNameLen, strings.Join(long, ", "))
	} else {
		r.fixed.toolsNameLength.set(Pass, "every name is at most %d characters", protocol.ConformanceToolNameLen)
	}
	if len(undescribed) > 0 {
		r.fixed.toolsDescription.set(Warn, "no description: %s. The model chooses tools by their description; say what the tool does and when to use it", strings.Join(undescribed, ", "))
	} else {
		r.fixed.toolsDescription.set(Pass, "%d tool(s), each described", len(r.tools))
	}
	var patterns []string
	for _, w := range r.pkg.ToolWarnings() {
		if w.Kind == protocol.WarnSchemaPattern {
			patterns = append(patterns, excerpt(w.Tool, 40)+": "+w.Message)
		}
	}
	if len(patterns) > 0 {
		r.fixed.toolsSchemaPatterns.set(Warn, "%s.\nThe host accepts such a schema, but neither it nor check can enforce the pattern, and clients whose validators use RE2 or similar may refuse the tool: validate the argument in the module, and prefer a pattern without lookaround or backreferences", strings.Join(patterns, "\n"))
	} else {
		r.fixed.toolsSchemaPatterns.set(Pass, "every pattern compiles as a regular expression the host checks")
	}
}

func (r *run) checkDeterministic(second *srt.Package, err error) {
	c := r.fixed.discoveryDeterministic
	var rej *srt.RejectedError
	if errors.As(err, &rej) {
		c.set(Fail, "the second discovery was refused although the first passed:\n%s", rejections(rej.Rejections))
		return
	} else if err != nil {
		r.hostError(err)
		return
	}
	a, b := canonicalTools(r.tools), canonicalTools(second.Tools())
	if a == b {
		c.set(Pass, "both runs listed the same %d tool(s), member for member", len(r.tools))
		return
	}
	c.set(Fail, "the tool list changed between two runs; what tools/list returns must stay the same until the next version.\nfirst:  %s\nsecond: %s", excerpt(a, 300), excerpt(b, 300))
}

// canonicalTools renders tools with sorted object members, so a module
// whose serialiser orders members at random is not called nondeterministic.
func canonicalTools(tools []protocol.Tool) string {
	var parts []string
	for _, t := range tools {
		var v any
		if err := json.Unmarshal(t.Raw, &v); err != nil {
			parts = append(parts, string(t.Raw))
			continue
		}
		b, _ := json.Marshal(v)
		parts = append(parts, string(b))
	}
	return "[" + strings.Join(parts, ",") + "]"
}

// checkDiscoveryTime judges the slower of the two discoveries, d.
func (r *run) checkDiscoveryTime(d time.Duration) {
	c := r.fixed.discoveryTime
	limit := r.lim.DiscoveryTimeout
	if near := r.near(c.ID); float64(d) > near*float64(limit) {
		c.set(Warn, "the slower of two discoveries took %v of the %v limit (over %.0f%%); an upload on a busier machine may time out", d.Round(time.Millisecond), limit, near*100)
		return
	}
	c.set(Pass, "the slower of two discoveries took %v of the %v limit", d.Round(time.Millisecond), limit)
}
