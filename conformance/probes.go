package conformance

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/subako/subako-runner/limits"
	"github.com/subako/subako-runner/protocol"
	srt "github.com/subako/subako-runner/runtime"
)

// protocolProbeTimeout caps the wall clock of the raw protocol probes: each
// sends a tools/call with {} that a module answers at once, and a module
// that never answers (an id it cannot read) should not hold the run for the
// full call limit.
const protocolProbeTimeout = 10 * time.Second

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

func (r *run) probe(ctx context.Context, c *Check, msgs []json.RawMessage) *srt.ProbeResult {
	id := c.ID
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
	check *Check
	ids   []protocol.ID
	// serious: the host sends ids like these, so a mismatch is a failure;
	// otherwise only a warning.
	serious bool
}

// longStringID is a 1,000-byte string id: longer than any fixed buffer a
// module might copy ids into, and than the host's own (23 bytes).
func longStringID() string {
	return "subako-check-" + strings.Repeat("0123456789abcdef", 61) + "0123456789a"
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
			res := r.probe(ctx, r.fixed.protocolEofExit, nil)
			if res != nil {
				r.judgeEOF(res)
			}
		},
		func() {
			defer close(baselineDone)
			baseline = r.probe(ctx, r.fixed.protocolExitAfterAnswer, []json.RawMessage{call(protocol.StringID("subako-check-exit"))})
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
			res := r.probe(ctx, r.fixed.protocolNotificationsIgnored, msgs)
			<-baselineDone
			if res != nil {
				r.judgeNotifications(res, baseline, first)
			}
		},
	}
	cases := []idCase{
		{r.fixed.protocolIDString, []protocol.ID{protocol.StringID("subako-check-5f0c2a9e1b7d3846"), protocol.StringID("subako-check-2")}, true},
		{r.fixed.protocolIDInteger, []protocol.ID{protocol.IntID(1), protocol.IntID(protocol.MaxIntID)}, true},
		// The extremes the host never sends, in a fixed order so every run
		// judges the same ids: where a float64 still holds integers
		// exactly, then beyond.
		{r.fixed.protocolIDSafeInteger, []protocol.ID{protocol.IntID(1 << 52), protocol.IntID(1<<53 - 1)}, false},
		{r.fixed.protocolIDBigInteger, []protocol.ID{numberID("9007199254740993"), numberID("12345678901234567890123")}, false},
		{r.fixed.protocolIDLongString, []protocol.ID{protocol.StringID(longStringID())}, false},
		{r.fixed.protocolIDUnusual, []protocol.ID{protocol.StringID(""), protocol.IntID(0), protocol.IntID(-1), protocol.StringID("quote \" backslash \\ ü ✓ \u2028")}, false},
	}
	for _, ic := range cases {
		jobs = append(jobs, func() {
			msgs := make([]json.RawMessage, len(ic.ids))
			for i, id := range ic.ids {
				msgs[i] = call(id)
			}
			res := r.probe(ctx, ic.check, msgs)
			<-baselineDone
			if res != nil {
				r.judgeIDs(ic, res, baseline, first)
			}
		})
	}
	return jobs
}

func (r *run) judgeEOF(res *srt.ProbeResult) {
	c := r.fixed.protocolEofExit
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
	c := r.fixed.protocolExitAfterAnswer
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
	c := r.fixed.protocolNotificationsIgnored
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
	c := ic.check
	c.Profile = profileOf(res.Stats)
	var sent []string
	for _, id := range ic.ids {
		sent = append(sent, excerpt(id.String(), 80))
	}
	bad := Warn
	why := fmt.Sprintf("The host never sends such ids (its integer ids stay within 1..%d, its strings are 23 bytes), so this cannot break a call under it, but JSON-RPC allows them and another host may send them: echo the id as the JSON text it came as.", protocol.MaxIntID)
	if ic.serious {
		bad = Fail
		why = "The host sends ids like these: a call answered with another id is a crash (unexpected_id). Copy the request's id into the response unchanged."
	}
	if len(res.Responses) == len(ic.ids) && (res.Crash == nil || res.Crash.Reason != srt.CrashUnexpectedID) {
		c.set(Pass, "tools/call %s with ids %s: each answer carried its id exactly", tool, strings.Join(sent, ", "))
		return
	}
	at := excerpt(ic.ids[len(res.Responses)].String(), 80)
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
