package conformance

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/subako/subako-runner/internal/wasmbin"
	"github.com/subako/subako-runner/limits"
	"github.com/subako/subako-runner/protocol"
	srt "github.com/subako/subako-runner/runtime"
)

// Options tune a run.
type Options struct {
	// Examples maps a tool name to argument objects to call it with; each
	// call is reported as a check "examples.<tool>/<n>" (n from 1).
	Examples map[string][]json.RawMessage
	// Concurrency bounds how many module instances run at once; 0 means
	// GOMAXPROCS (at least 2).
	Concurrency int

	// nearLimits overrides, per check id, the share of its limit above
	// which the check warns (nearLimit otherwise). Only tests set it
	// (export_test.go): how long a module takes depends on how loaded the
	// machine is, so a test that must see a time warning moves the
	// threshold far below what the module is made to take, instead of
	// betting on a margin of the clock.
	nearLimits map[string]float64
}

// ParseExamples reads an --examples file: a JSON object mapping each tool
// name to an array of argument objects.
func ParseExamples(b []byte) (map[string][]json.RawMessage, error) {
	var m map[string][]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("examples must be a JSON object of tool name → array of argument objects: %v", err)
	}
	for name, list := range m {
		for i, a := range list {
			var obj map[string]any
			if err := json.Unmarshal(a, &obj); err != nil || obj == nil {
				return nil, fmt.Errorf("examples of %q, entry %d: arguments must be a JSON object", name, i+1)
			}
		}
	}
	return m, nil
}

// protocolProbeTimeout caps the wall clock of the raw protocol probes: each
// sends a tools/call with {} that a module answers at once, and a module
// that never answers (an id it cannot read) should not hold the run for the
// full call limit.
const protocolProbeTimeout = 10 * time.Second

// nearLimit is the share of a limit above which a check warns.
const nearLimit = 0.8

// near is the share of its limit above which check id warns.
func (r *run) near(id string) float64 {
	if v, ok := r.opts.nearLimits[id]; ok {
		return v
	}
	return nearLimit
}

// unknownToolName is the tool the unknown-tool probe calls.
const unknownToolName = "subako_check_no_such_tool"

// Run checks the package at path (a package directory or a bare .wasm
// file) with the runtime's limits. Findings about the package, however bad,
// are in the Report; an error means the host could not do the work (the
// path is unreadable, a probe could not be started).
func Run(ctx context.Context, rt *srt.Runtime, path string, opts Options) (*Report, error) {
	started := time.Now()
	r := &run{rt: rt, lim: rt.Limits(), path: path, opts: opts, checks: map[string]*Check{}}
	if err := r.all(ctx); err != nil {
		return nil, err
	}
	rep := &Report{Package: path, Passed: true, Duration: time.Since(started)}
	for _, id := range r.order {
		c := r.checks[id]
		if c.Status == Fail {
			rep.Passed = false
		}
		rep.Checks = append(rep.Checks, *c)
	}
	return rep, nil
}

// run is the state of one Run.
type run struct {
	rt   *srt.Runtime
	lim  limits.Limits
	path string
	opts Options

	mu      sync.Mutex
	order   []string
	checks  map[string]*Check
	hostErr error

	pkg     *srt.Package
	tools   []protocol.Tool
	imports map[string]bool // "module.name"
	assets  bool

	// evidence gathered by the probes, for the cross-cutting checks
	evidence []evidence
	calls    []callRecord
	outputs  []outputCheck
}

type outputCheck struct {
	check *Check
	tool  *protocol.CompiledTool
}

// evidence is what one module instance showed, for the checks that look
// across every probe (stdout, stderr, resources).
type evidence struct {
	probe         string // the check id that ran it
	crash         *srt.Crash
	stderr        string
	notifications int
	profile       *Profile
	call          bool // a tools/call through Package.Call (the call limits apply)
	bytesWritten  int64
	httpRequests  int64
}

// add registers a check in report order; set fills it in later.
func (r *run) add(id string, item int, title string) *Check {
	if item > 0 {
		title = fmt.Sprintf("[%d] %s", item, title)
	}
	c := &Check{ID: id, Item: item, Title: title, Status: Skip}
	r.order = append(r.order, id)
	r.checks[id] = c
	return c
}

func (c *Check) set(s Status, format string, a ...any) {
	c.Status = s
	c.Detail = fmt.Sprintf(format, a...)
}

func (r *run) hostError(err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.hostErr == nil {
		r.hostErr = err
	}
}

func (r *run) record(e evidence) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.evidence = append(r.evidence, e)
}

func profileOf(s srt.Stats) *Profile {
	return &Profile{DurationMs: s.DurationMs, FuelUsed: s.FuelUsed, MemoryBytes: s.MemoryBytes}
}

// The checks that do not depend on the tool list, in report order.
type staticCheck struct {
	id    string
	item  int
	title string
}

var (
	uploadChecks = []staticCheck{
		{"upload.checks", 1, "a WASI preview 1 command module exporting _start and memory, without threads or exceptions"},
		{"package.manifest", 0, "subako-package.json with \"abi\": 1 beside module.wasm"},
	}
	discoveryChecks = []staticCheck{
		{"discovery.ok", 4, "server/discover and tools/list answered as an upload needs (checklist 4 and 5)"},
		{"discovery.deterministic", 5, "two discoveries list the same tools"},
		{"discovery.time", 0, "discovery finishes within its time limit"},
		{"schema.result_type", 4, "results carry \"resultType\": \"complete\""},
		{"schema.ttl_ms", 4, "server/discover carries ttlMs"},
		{"schema.cache_scope", 4, "server/discover carries cacheScope"},
		{"schema.server_info", 4, "server/discover carries serverInfo"},
		{"tools.name_length", 5, "tool names are at most 64 characters"},
		{"tools.description", 5, "every tool has a description"},
	}
	protocolChecks = []staticCheck{
		{"protocol.eof_exit", 2, "exits with code 0 within 1 s when stdin closes without a request"},
		{"protocol.exit_after_answer", 2, "exits with code 0 within 1 s when stdin closes after an answer"},
		{"protocol.notifications_ignored", 3, "messages without an id are ignored"},
		{"protocol.id_string", 0, "string ids are echoed exactly"},
		{"protocol.id_integer", 0, "integer ids are echoed exactly"},
		{"protocol.id_big_integer", 0, "integer ids beyond 2^53 are echoed exactly"},
		{"protocol.id_unusual", 0, "unusual ids (empty string, 0, negative, escapes) are echoed exactly"},
	}
	lateChecks = []staticCheck{
		{"tools.unknown_tool", 6, "a call of an unknown tool gets an isError result"},
		{"view.renders", 6, "images and resource links render in the model view"},
		{"stdout.only_jsonrpc", 7, "stdout carries only JSON-RPC messages, one per line"},
		{"stderr.logs", 7, "logs go to stderr"},
		{"files.usage", 8, "files under /volume/tmp, /volume/data, /package, /skills"},
		{"http.usage", 9, "HTTP through subako_http"},
		{"resources.memory", 0, "peak memory stays clear of the memory limit"},
		{"resources.time", 0, "calls stay clear of the time limit"},
		{"resources.fuel", 0, "calls stay clear of the fuel budget"},
	}
)

func (r *run) addAll(list []staticCheck) {
	for _, s := range list {
		r.add(s.id, s.item, s.title)
	}
}

// skipRest marks every check still unjudged as skipped for reason.
func (r *run) skipRest(reason string) {
	for _, id := range r.order {
		if c := r.checks[id]; c.Detail == "" {
			c.set(Skip, "%s", reason)
		}
	}
}

func (r *run) all(ctx context.Context) error {
	r.addAll(uploadChecks)
	r.addAll(discoveryChecks)
	r.addAll(protocolChecks)

	src, err := srt.ReadSource(r.path, r.lim.ModuleSize)
	if err != nil {
		return err
	}
	r.checkManifest(src)
	checked, err := r.rt.Validate(ctx, r.path)
	var rej *srt.RejectedError
	switch {
	case errors.As(err, &rej):
		r.checks["upload.checks"].set(Fail, "the host refuses the upload:\n%s", rejections(rej.Rejections))
		r.addAll(lateChecks)
		r.skipRest("skipped: the package fails the upload checks")
		return nil
	case err != nil:
		return err
	}
	defer checked.Close(ctx)
	r.checks["upload.checks"].set(Pass, "%s bytes, sha256 %s", groupDigits(len(checked.Source.Module)), hex.EncodeToString(checked.Hash[:]))
	r.assets = checked.Source.HasAssets
	r.readImports(checked.Source.Module)

	// Neither Package is closed: both share checked, closed above.
	pkg, err := r.rt.Discover(ctx, checked, r.path)
	if errors.As(err, &rej) {
		r.discoveryFailed(rej)
		return nil
	} else if err != nil {
		return err
	}
	r.pkg = pkg
	r.tools = pkg.Tools()
	r.checks["discovery.ok"].set(Pass, "%d tool(s) in %d page(s): %s", len(r.tools), pkg.Discovery.Pages, toolNames(r.tools))
	r.checkSchema(pkg.Discovery.Result.Raw)
	r.checkToolList()

	var jobs []func()
	var second *srt.Package
	var secondErr error
	jobs = append(jobs, func() { second, secondErr = r.rt.Discover(ctx, checked, r.path) })
	jobs = append(jobs, r.protocolProbes(ctx)...)
	jobs = append(jobs, r.toolProbes(ctx)...)
	r.addAll(lateChecks)
	jobs = append(jobs, r.unknownToolProbe(ctx))
	r.parallel(jobs)
	if r.hostErr != nil {
		return r.hostErr
	}
	if err := ctx.Err(); err != nil {
		// Only the second discovery saw it: it is no evidence about the package.
		return fmt.Errorf("check %s: %w", r.path, err)
	}
	r.checkDeterministic(second, secondErr)
	r.checkDiscoveryTime(second)
	r.record(evidence{probe: "discovery.ok", stderr: pkg.Discovery.Stderr, notifications: pkg.Discovery.Notifications,
		profile: &Profile{DurationMs: float64(pkg.Discovery.Duration) / 1e6, MemoryBytes: pkg.Discovery.MemoryBytes}})
	r.crossChecks()
	return nil
}

// parallel runs the jobs, at most Concurrency at once.
func (r *run) parallel(jobs []func()) {
	n := r.opts.Concurrency
	if n <= 0 {
		n = max(2, runtime.GOMAXPROCS(0))
	}
	sem := make(chan struct{}, n)
	var wg sync.WaitGroup
	for _, job := range jobs {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			job()
		}()
	}
	wg.Wait()
}

func (r *run) checkManifest(src *srt.Source) {
	c := r.checks["package.manifest"]
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
	r.checks["discovery.ok"].set(Fail, "%s", detail)
	if rej.Crash != nil {
		r.record(evidence{probe: "discovery.ok", crash: rej.Crash, stderr: rej.Crash.Stderr})
		switch rej.Crash.Reason {
		case srt.CrashTimeout:
			r.checks["discovery.time"].set(Fail, "discovery ran out of its %v: %s", r.lim.DiscoveryTimeout, rej.Crash.Message)
		case srt.CrashNotJSONRPC, srt.CrashOutputTooLarge, srt.CrashServerRequest:
			r.addAll(lateChecks)
			r.checks["stdout.only_jsonrpc"].set(Fail, "during discovery: %s", rej.Crash.Message)
		}
	}
	if _, ok := r.checks["view.renders"]; !ok {
		r.addAll(lateChecks)
	}
	r.skipRest("skipped: discovery failed (see discovery.ok)")
}

func rejections(list []srt.Rejection) string {
	var b strings.Builder
	for i, rej := range list {
		if i > 0 {
			b.WriteByte('\n')
		}
		fmt.Fprintf(&b, "%s: %s", rej.Code, rej.Message)
	}
	return b.String()
}

func (r *run) readImports(module []byte) {
	r.imports = map[string]bool{}
	m, err := wasmbin.Decode(module)
	if err != nil {
		return // the upload checks passed, so this does not happen
	}
	for _, im := range m.Imports {
		r.imports[im.Module+"."+im.Name] = true
	}
}

func (r *run) checkSchema(raw json.RawMessage) {
	var m map[string]json.RawMessage
	_ = json.Unmarshal(raw, &m)
	var meta map[string]json.RawMessage
	_ = json.Unmarshal(m["_meta"], &meta)
	const why = "required by the official MCP 2026-07-28 schema; the host tolerates its absence, other MCP clients may not"
	present := func(id, member, example string, ok bool, value json.RawMessage) {
		c := r.checks[id]
		if ok {
			c.set(Pass, "server/discover has %s: %s", member, excerpt(string(value), 120))
			return
		}
		c.set(Warn, "server/discover has no %s (%s); add %s", member, why, example)
	}
	rt, hasRT := m["resultType"]
	present("schema.result_type", "resultType", `"resultType": "complete"`, hasRT, rt)
	present("schema.ttl_ms", "ttlMs", `"ttlMs": 0`, m["ttlMs"] != nil, m["ttlMs"])
	present("schema.cache_scope", "cacheScope", `"cacheScope": "public"`, m["cacheScope"] != nil, m["cacheScope"])
	info := m["serverInfo"]
	if info == nil {
		info = meta["io.modelcontextprotocol/serverInfo"]
	}
	present("schema.server_info", "serverInfo", `"_meta": {"io.modelcontextprotocol/serverInfo": {"name": ..., "version": ...}}`, info != nil, info)
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
		r.checks["tools.name_length"].set(Warn, "ABI 1 accepts up to %d characters, but the MCP conformance suite (and some clients) allow %d: shorten %s",
			protocol.MaxToolNameLen, protocol.ConformanceToolNameLen, strings.Join(long, ", "))
	} else {
		r.checks["tools.name_length"].set(Pass, "every name is at most %d characters", protocol.ConformanceToolNameLen)
	}
	if len(undescribed) > 0 {
		r.checks["tools.description"].set(Warn, "no description: %s. The model chooses tools by their description; say what the tool does and when to use it", strings.Join(undescribed, ", "))
	} else {
		r.checks["tools.description"].set(Pass, "%d tool(s), each described", len(r.tools))
	}
}

func (r *run) checkDeterministic(second *srt.Package, err error) {
	c := r.checks["discovery.deterministic"]
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

func (r *run) checkDiscoveryTime(second *srt.Package) {
	d := r.pkg.Discovery.Duration
	if second != nil && second.Discovery.Duration > d {
		d = second.Discovery.Duration
	}
	c := r.checks["discovery.time"]
	limit := r.lim.DiscoveryTimeout
	if near := r.near(c.ID); float64(d) > near*float64(limit) {
		c.set(Warn, "the slower of two discoveries took %v of the %v limit (over %.0f%%); an upload on a busier machine may time out", d.Round(time.Millisecond), limit, near*100)
		return
	}
	c.set(Pass, "the slower of two discoveries took %v of the %v limit", d.Round(time.Millisecond), limit)
}

// request renders one request line (without its newline) as the host
// writes it, _meta included.
func request(id protocol.ID, method string, params map[string]any) json.RawMessage {
	line, err := protocol.EncodeRequest(id, method, params, protocol.ClientInfo{Name: "subako", Version: srt.Version})
	if err != nil {
		panic(err) // only our own parameters go in
	}
	return bytes.TrimRight(line, "\n")
}

func callRequest(id protocol.ID, tool string, args json.RawMessage) json.RawMessage {
	params, err := protocol.ToolsCallParams(tool, args)
	if err != nil {
		panic(err)
	}
	return request(id, protocol.MethodToolsCall, params)
}

// probeLimits are the limits of the raw protocol probes.
func (r *run) probeLimits() *limits.Limits {
	l := r.lim
	l.CallTimeout = min(l.CallTimeout, protocolProbeTimeout)
	return &l
}

func (r *run) probe(ctx context.Context, id string, msgs []json.RawMessage) *srt.ProbeResult {
	res, err := r.pkg.Probe(ctx, srt.Probe{Messages: msgs}, srt.CallRequest{Limits: r.probeLimits()})
	if err != nil {
		r.hostError(fmt.Errorf("%s: %w", id, err))
		return nil
	}
	r.record(evidence{probe: id, crash: res.Crash, stderr: res.Stderr, notifications: res.Notifications, profile: profileOf(res.Stats),
		bytesWritten: res.Stats.BytesWritten, httpRequests: res.Stats.HTTPRequests})
	return res
}

type idCase struct {
	id   string
	item int
	ids  []protocol.ID
	// serious: the host sends ids like these, so a mismatch is a failure;
	// otherwise only a warning.
	serious bool
}

func numberID(s string) protocol.ID {
	id, err := protocol.NumberID(s)
	if err != nil {
		panic(err)
	}
	return id
}

func (r *run) protocolProbes(ctx context.Context) []func() {
	first := r.tools[0].Name
	call := func(id protocol.ID) json.RawMessage { return callRequest(id, first, nil) }
	var baseline *srt.ProbeResult
	var baselineDone = make(chan struct{})
	jobs := []func(){
		func() {
			res := r.probe(ctx, "protocol.eof_exit", nil)
			if res != nil {
				r.judgeEOF(res)
			}
		},
		func() {
			defer close(baselineDone)
			baseline = r.probe(ctx, "protocol.exit_after_answer", []json.RawMessage{call(protocol.StringID("subako-check-exit"))})
			if baseline != nil {
				r.judgeExitAfterAnswer(baseline, first)
			}
		},
		func() {
			msgs := []json.RawMessage{
				json.RawMessage(`{"jsonrpc":"2.0","method":"notifications/initialized"}`),
				json.RawMessage(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"subako-check-earlier","reason":"probe"}}`),
				json.RawMessage(`{"jsonrpc":"2.0","method":"notifications/subako/check","params":{"note":"ignore me"}}`),
				call(protocol.StringID("subako-check-notifications")),
			}
			res := r.probe(ctx, "protocol.notifications_ignored", msgs)
			<-baselineDone
			if res != nil {
				r.judgeNotifications(res, baseline, first)
			}
		},
	}
	cases := []idCase{
		{"protocol.id_string", 0, []protocol.ID{protocol.StringID("subako-check-5f0c2a9e1b7d3846"), protocol.StringID("subako-check-2")}, true},
		{"protocol.id_integer", 0, []protocol.ID{protocol.IntID(1), protocol.IntID(1<<53 - 1)}, true},
		{"protocol.id_big_integer", 0, []protocol.ID{numberID("9007199254740993"), numberID("12345678901234567890123")}, false},
		{"protocol.id_unusual", 0, []protocol.ID{protocol.StringID(""), protocol.IntID(0), protocol.IntID(-1), protocol.StringID("quote \" backslash \\ ü ✓ \u2028")}, false},
	}
	for _, ic := range cases {
		jobs = append(jobs, func() {
			msgs := make([]json.RawMessage, len(ic.ids))
			for i, id := range ic.ids {
				msgs[i] = call(id)
			}
			res := r.probe(ctx, ic.id, msgs)
			<-baselineDone
			if res != nil {
				r.judgeIDs(ic, res, baseline, first)
			}
		})
	}
	return jobs
}

func (r *run) judgeEOF(res *srt.ProbeResult) {
	c := r.checks["protocol.eof_exit"]
	c.Profile = profileOf(res.Stats)
	if res.Crash != nil {
		c.set(Fail, "stdin closed with no request written, and: %s\nAt end of input exit with code 0 (even when no request came).%s", crashText(res.Crash), stderrSuffix(res.Crash.Stderr))
		return
	}
	r.judgeExitTime(c, res, "with no request, the module exited with code 0")
}

func (r *run) judgeExitTime(c *Check, res *srt.ProbeResult, what string) {
	took := res.ExitAfterClose
	limit := r.lim.ExitTimeout
	if near := r.near(c.ID); float64(took) > near*float64(limit) {
		c.set(Warn, "%s %s after stdin closed: over %.0f%% of the %v allowed; exit at once at end of input", what, ms(took), near*100, limit)
		return
	}
	c.set(Pass, "%s %s after stdin closed (limit %v)", what, ms(took), limit)
}

func (r *run) judgeExitAfterAnswer(res *srt.ProbeResult, tool string) {
	c := r.checks["protocol.exit_after_answer"]
	c.Profile = profileOf(res.Stats)
	if len(res.Responses) == 0 {
		c.set(Skip, "could not judge: tools/call %s {} was not answered: %s (see tools.call_empty_args/%s)", tool, crashText(res.Crash), tool)
		return
	}
	if res.Crash != nil {
		c.set(Fail, "after answering tools/call %s {}: %s%s", tool, crashText(res.Crash), stderrSuffix(res.Crash.Stderr))
		return
	}
	r.judgeExitTime(c, res, fmt.Sprintf("after answering tools/call %s {}, the module exited with code 0", tool))
}

func (r *run) judgeNotifications(res, baseline *srt.ProbeResult, tool string) {
	c := r.checks["protocol.notifications_ignored"]
	c.Profile = profileOf(res.Stats)
	const sent = "three notifications (notifications/initialized, notifications/cancelled, an unknown one) then tools/call "
	if baseline != nil && res.Crash != nil && baseline.Crash != nil && res.Crash.Reason == baseline.Crash.Reason {
		c.set(Skip, "could not judge: the same %s happens without notifications (see protocol.exit_after_answer)", res.Crash.Reason)
		return
	}
	if res.Crash != nil {
		c.set(Fail, "sent %s%s {}: %s\nIgnore messages without an id: write nothing for them.%s", sent, tool, crashText(res.Crash), stderrSuffix(res.Crash.Stderr))
		return
	}
	if len(res.Responses) == 1 && baseline != nil && len(baseline.Responses) == 1 && res.Responses[0].Kind != baseline.Responses[0].Kind {
		c.set(Fail, "after the notifications, tools/call %s {} got a %s instead of the %s it gets without them", tool, res.Responses[0].Kind, baseline.Responses[0].Kind)
		return
	}
	c.set(Pass, "sent %s%s {}: the call was answered and nothing else was written", sent, tool)
}

func (r *run) judgeIDs(ic idCase, res, baseline *srt.ProbeResult, tool string) {
	c := r.checks[ic.id]
	c.Profile = profileOf(res.Stats)
	var sent []string
	for _, id := range ic.ids {
		sent = append(sent, id.String())
	}
	bad := Warn
	why := "The host never sends such ids, so this cannot break a call, but JSON-RPC allows them: echo the id as the JSON value it was (keep numbers as their text, not a float64)."
	if ic.serious {
		bad = Fail
		why = "The host sends ids like these: a call answered with another id is a crash (unexpected_id). Copy the request's id into the response unchanged."
	}
	if len(res.Responses) == len(ic.ids) && (res.Crash == nil || res.Crash.Reason != srt.CrashUnexpectedID) {
		c.set(Pass, "tools/call %s with ids %s: each answer carried its id exactly", tool, strings.Join(sent, ", "))
		return
	}
	at := ic.ids[len(res.Responses)].String()
	if res.Crash != nil && res.Crash.Reason == srt.CrashUnexpectedID {
		c.set(bad, "sent id %s: %s\n%s", at, res.Crash.Message, why)
		return
	}
	if baseline != nil && len(baseline.Responses) == 0 && baseline.Crash != nil && res.Crash != nil && res.Crash.Reason == baseline.Crash.Reason {
		c.set(Skip, "could not judge: tools/call %s {} is not answered with any id (%s; see tools.call_empty_args/%s)", tool, res.Crash.Reason, tool)
		return
	}
	c.set(bad, "the request with id %s was not answered: %s\n%s%s", at, crashText(res.Crash), why, stderrSuffix(crashStderr(res.Crash)))
}

func ms(d time.Duration) string { return fmt.Sprintf("%.1f ms", float64(d)/1e6) }

func crashStderr(c *srt.Crash) string {
	if c == nil {
		return ""
	}
	return c.Stderr
}

func crashText(c *srt.Crash) string {
	if c == nil {
		return "no crash"
	}
	return c.Reason + ": " + c.Message
}

// stderrSuffix is a newline and the stderr evidence, or "" when empty.
func stderrSuffix(tail string) string {
	if strings.TrimSpace(tail) == "" {
		return ""
	}
	return "\n" + stderrEvidence(tail)
}

// stderrEvidence quotes the last lines of a stderr tail.
func stderrEvidence(tail string) string {
	tail = strings.TrimRight(tail, "\n")
	if strings.TrimSpace(tail) == "" {
		return "stderr: (empty)"
	}
	lines := strings.Split(tail, "\n")
	if len(lines) > 4 {
		lines = lines[len(lines)-4:]
	}
	for i, l := range lines {
		lines[i] = "| " + excerpt(l, 160)
	}
	return "stderr (last lines):\n" + strings.Join(lines, "\n")
}

func excerpt(s string, n int) string {
	r := []rune(s)
	if len(r) > n {
		return string(r[:n]) + "…"
	}
	return s
}

func toolNames(tools []protocol.Tool) string {
	names := make([]string, len(tools))
	for i, t := range tools {
		names[i] = excerpt(t.Name, 40)
	}
	if len(names) > 12 {
		names = append(names[:12], fmt.Sprintf("… (%d more)", len(names)-12))
	}
	return strings.Join(names, ", ")
}

func groupDigits(n int) string {
	s := fmt.Sprint(n)
	var b strings.Builder
	for i, ch := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(ch)
	}
	return b.String()
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
