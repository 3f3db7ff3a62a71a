package conformance

import (
	"fmt"
	"strings"

	"github.com/subako/subako-runner/internal/text"
	"github.com/subako/subako-runner/limits"
	srt "github.com/subako/subako-runner/runtime"
)

// crossChecks judges what only shows across every probe: output schemas
// (all calls of a tool), the model view, stdout and stderr use, files,
// HTTP and resources.
func (r *run) crossChecks() {
	for _, o := range r.outputs {
		r.judgeOutputSchema(o)
	}
	r.judgeView()
	r.judgeStdout()
	r.judgeStderr()
	r.judgeFiles()
	r.judgeHTTP()
	r.judgeResources()
}

func (r *run) judgeOutputSchema(o outputCheck) {
	c, name := o.check, o.tool.Tool.Name
	var judged []string
	for _, rec := range r.calls {
		if rec.tool != name || rec.res.Outcome != srt.OutcomeOK || !(strings.HasPrefix(rec.probe, "tools.call_valid_args/") || strings.HasPrefix(rec.probe, "examples.")) {
			continue
		}
		sc := rec.res.Parsed.StructuredContent
		if sc == nil {
			c.set(Warn, "%s answered %s without structuredContent; MCP requires a tool that declares an outputSchema to return structuredContent matching it", rec.probe, excerpt(string(rec.args), 100))
			return
		}
		if err := o.tool.ValidateOutput(sc); err != nil {
			c.set(Fail, "%s answered structuredContent %s, which does not match the outputSchema: %s\nMCP clients validate structuredContent against the outputSchema and reject a result that breaks it.",
				rec.probe, excerpt(string(sc), 160), excerpt(text.FirstLine(err.Error()), 200))
			return
		}
		judged = append(judged, rec.probe)
	}
	if len(judged) == 0 {
		c.set(Skip, "could not judge: no call of %s was answered without isError; give arguments that succeed with --examples", name)
		return
	}
	c.set(Pass, "structuredContent matched the outputSchema in %s", strings.Join(judged, ", "))
}

// judgeView looks at every image and resource_link block the calls
// returned, and at every block the view omits.
func (r *run) judgeView() {
	c := r.fixed.viewRenders
	var shown, problems []string
	seen := map[string]bool{}
	for _, rec := range r.calls {
		res := rec.res
		if res.Outcome == srt.OutcomeCrashed || len(res.View) != len(res.Parsed.Content) {
			continue
		}
		for i, b := range res.Parsed.Content {
			v := res.View[i]
			// The same tool often answers several probes alike.
			key := fmt.Sprintf("%s\x00%d\x00%s\x00%s", rec.tool, i, v.Type, v.Text)
			if seen[key] {
				continue
			}
			seen[key] = true
			switch {
			case v.Type == "note":
				problems = append(problems, fmt.Sprintf("%s block %d (%s): %s", rec.tool, i, b.Type, v.Text))
			case b.Type == "image" || b.Type == "resource_link":
				shown = append(shown, fmt.Sprintf("%s block %d (%s) → %s", rec.tool, i, b.Type, v.Type))
			}
		}
	}
	switch {
	case len(problems) > 0:
		c.set(Warn, "the model sees a note instead of %d block(s):\n%s\nImages must be PNG, JPEG, GIF or WebP in standard base64 whose bytes match mimeType; a volume:/// link must name a regular file the call wrote under /volume; audio, embedded resources and other block types are omitted.",
			len(problems), strings.Join(limitLines(problems, 8), "\n"))
	case len(shown) > 0:
		c.set(Pass, "%s", strings.Join(limitLines(shown, 8), "\n"))
	default:
		c.set(Skip, "no call returned an image or a resource link (give arguments that produce them with --examples)")
	}
}

func limitLines(l []string, n int) []string {
	if len(l) > n {
		return append(l[:n:n], fmt.Sprintf("… and %d more", len(l)-n))
	}
	return l
}

func (r *run) judgeStdout() {
	c := r.fixed.stdoutOnlyJSONRPC
	for _, e := range r.evidence {
		if e.crash == nil {
			continue
		}
		switch e.crash.Reason {
		case srt.CrashNotJSONRPC, srt.CrashOutputTooLarge, srt.CrashServerRequest:
			c.set(Fail, "in %s: %s\nstdout is for the protocol only: one compact JSON-RPC message per line, then flush. Write logs and debugging output to stderr.", e.probe, e.crash.Message)
			return
		}
	}
	c.set(Pass, "%d module runs: every stdout line was a JSON-RPC message", len(r.evidence))
}

func (r *run) judgeStderr() {
	c := r.fixed.stderrLogs
	notes, bytes := 0, 0
	var noted []string
	var lastLine string
	for _, e := range r.evidence {
		if e.notifications > 0 {
			notes += e.notifications
			noted = append(noted, e.probe)
		}
		bytes += len(e.stderr)
		if l := lastNonEmptyLine(e.stderr); l != "" {
			lastLine = l
		}
	}
	if notes > 0 {
		c.set(Warn, "the module wrote %d notification(s) to stdout (in %s); the host ignores them, so logs sent as notifications/message are lost: write logs to stderr",
			notes, strings.Join(limitLines(noted, 4), ", "))
		return
	}
	for _, e := range r.evidence {
		if e.call && e.crash != nil && strings.TrimSpace(e.stderr) == "" {
			c.set(Warn, "%s crashed (%s) without a word on stderr; the crash report shows the model and the author the last 4 KiB of stderr, so say there what went wrong", e.probe, e.crash.Reason)
			return
		}
	}
	if lastLine == "" {
		c.set(Pass, "nothing was written to stdout but protocol messages; the module wrote nothing to stderr (logs are optional)")
		return
	}
	c.set(Pass, "nothing was written to stdout but protocol messages; stderr held logs, e.g. %q", excerpt(lastLine, 120))
}

func lastNonEmptyLine(s string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		if strings.TrimSpace(lines[i]) != "" {
			return lines[i]
		}
	}
	return ""
}

func (r *run) judgeFiles() {
	c := r.fixed.filesUsage
	opens := r.imports["wasi_snapshot_preview1.path_open"]
	var written int64
	for _, e := range r.evidence {
		written += e.bytesWritten
	}
	switch {
	case r.assets && !opens:
		c.set(Warn, "the package ships assets (mounted read-only at /package) but the module never imports path_open, so it cannot read them: drop the assets, or open them by absolute path (/package/...)")
	case !opens:
		c.set(Skip, "the module does not import path_open: it uses no files")
	default:
		mounts := "/volume/tmp (fresh, empty)"
		if r.assets {
			mounts += ", /package (read-only)"
		}
		c.set(Pass, "the module imports path_open; calls ran with %s and without /volume/data or /skills, and wrote %d byte(s) to files in all", mounts, written)
	}
}

func (r *run) judgeHTTP() {
	c := r.fixed.httpUsage
	var requests int64
	for _, e := range r.evidence {
		requests += e.httpRequests
	}
	uses := r.imports["subako_http.request"]
	var socks []string
	for _, f := range []string{"sock_accept", "sock_recv", "sock_send", "sock_shutdown"} {
		if r.imports["wasi_snapshot_preview1."+f] {
			socks = append(socks, f)
		}
	}
	switch {
	case len(socks) > 0 && !uses:
		c.set(Warn, "the module imports %s but not subako_http: no socket is ever passed to a module, so socket I/O fails; send HTTP through subako_http.request", strings.Join(socks, ", "))
	case uses:
		c.set(Pass, "the module imports subako_http; it sent %d request(s) during the probes (check runs without network: every request is refused with host_not_allowed)", requests)
	default:
		c.set(Skip, "the module does not import subako_http: it uses no network")
	}
}

func (r *run) judgeResources() {
	type peak struct {
		probe string
		value float64
	}
	var mem, fuel, dur peak
	crashed := map[string]string{}
	for _, e := range r.evidence {
		if e.crash != nil {
			switch e.crash.Reason {
			case srt.CrashOutOfMemory, srt.CrashOutOfFuel:
				crashed[e.crash.Reason] = e.probe
			case srt.CrashTimeout:
				if e.call {
					crashed[e.crash.Reason] = e.probe
				}
			}
		}
		if e.profile == nil {
			continue
		}
		if v := float64(e.profile.MemoryBytes); v > mem.value {
			mem = peak{e.probe, v}
		}
		if v := float64(e.profile.FuelUsed); v > fuel.value {
			fuel = peak{e.probe, v}
		}
		if v := e.profile.DurationMs; e.call && v > dur.value {
			dur = peak{e.probe, v}
		}
	}
	judge := func(c *Check, reason string, used peak, limit float64, unit func(float64) string, limitName string) {
		switch {
		case used.probe == "" && reason == srt.CrashOutOfFuel && crashed[reason] == "":
			c.set(Skip, "not measured: every run reported 0 fuel used (this runtime does not meter fuel)")
		case crashed[reason] != "":
			c.set(Fail, "%s ran out (%s) at the %s limit of %s", crashed[reason], reason, limitName, unit(limit))
		case limit == 0:
			c.set(Pass, "no %s limit; the most used was %s (%s)", limitName, unit(used.value), used.probe)
		case used.value > r.near(c.ID)*limit:
			c.set(Warn, "%s used %s of the %s limit of %s (over %.0f%%); a larger input may hit it", used.probe, unit(used.value), limitName, unit(limit), r.near(c.ID)*100)
		default:
			c.set(Pass, "the most used was %s of %s (%s)", unit(used.value), unit(limit), used.probe)
		}
	}
	judge(r.fixed.resourcesMemory, srt.CrashOutOfMemory, mem, float64(r.lim.Memory), func(v float64) string { return limits.HumanSize(int64(v)) }, "memory")
	judge(r.fixed.resourcesTime, srt.CrashTimeout, dur, float64(r.lim.CallTimeout.Milliseconds()), func(v float64) string { return fmt.Sprintf("%.0f ms", v) }, "call time")
	judge(r.fixed.resourcesFuel, srt.CrashOutOfFuel, fuel, float64(r.lim.Fuel), func(v float64) string { return formatCount(uint64(v)) }, "fuel")
}
