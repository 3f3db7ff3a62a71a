package runtime

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/subako/subako-runner/internal/instance"
	"github.com/subako/subako-runner/internal/tmpvol"

	"go.uber.org/zap"

	"github.com/subako/subako-runner/fsmount"
	"github.com/subako/subako-runner/hostmod/subakohttp"
	"github.com/subako/subako-runner/limits"
	"github.com/subako/subako-runner/protocol"
)

// CallRequest is one tools/call and everything that is particular to it.
type CallRequest struct {
	// Tool is the name of a discovered tool.
	Tool string
	// Arguments is a JSON object; nil means {}.
	Arguments json.RawMessage
	// Tmp is the host directory mounted at /volume/tmp. When empty the
	// runtime mounts a fresh, empty directory of its own (under
	// Config.TempDir) and removes it after Result.Release.
	Tmp string
	// Data is the host directory mounted at /volume/data; empty means the
	// agent has not enabled it and nothing is mounted there.
	Data string
	// Skills is a host directory whose subdirectories are skills: it is
	// mounted at /skills and each subdirectory at /skills/<name>.
	Skills string
	// Network is the call's network policy; nil denies every request.
	Network *subakohttp.Policy
	// Limits overrides the runtime's limits for this call.
	Limits *limits.Limits

	// exchange, set only inside a worker process, sends the guest's
	// subako_http requests to the parent, which holds the policy.
	exchange func(ctx context.Context, request []byte, budget *limits.WriteBudget) []byte
	// lazyTmp, set only inside a worker process, says Tmp is a directory
	// the parent's runtime made: opened only when the guest uses it, as
	// the parent's own would be.
	lazyTmp bool
	// forParent, set only inside a worker process, leaves out the view:
	// the parent builds its own from its own mounts.
	forParent bool
	// guestEnded, set only inside a worker process, is told when the
	// guest has answered and exited (or crashed), before the instance's
	// end and the result's way back.
	guestEnded func()
}

// Outcome says how a call (Result, CallEvent) or an upload (UploadEvent)
// ended.
type Outcome string

// Outcomes of a call, as cli.md names them, and of an upload.
const (
	// OutcomeOK is a result without isError.
	OutcomeOK Outcome = "ok"
	// OutcomeToolError is a result with isError: the model reads it.
	OutcomeToolError Outcome = "tool_error"
	// OutcomeCrashed means the module broke a rule of docs/abi.md §6.
	OutcomeCrashed Outcome = "crashed"
	// OutcomeCanceled is only ever in an event: the caller's context
	// ended the call (or the upload) and it returned that error, so the
	// run is no verdict on the module (count it apart from crashes).
	OutcomeCanceled Outcome = "canceled"
	// OutcomeRefused is only ever in a CallEvent: the host refused the call
	// before running the module (Call returned a *CallError; CallEvent.Code
	// is its code).
	OutcomeRefused Outcome = "refused"
	// OutcomeError is only ever in an event: the host could not run the
	// call or the upload (it returned another error, ErrClosed among them).
	OutcomeError Outcome = "error"
	// OutcomeRejected is only ever in an UploadEvent: the upload checks or
	// the tool list refused the package (Load returned a *RejectedError).
	OutcomeRejected Outcome = "rejected"
)

// Stats are the resources one call used. Each duration is kept once, as
// a time.Duration; the JSON form (MarshalJSON) gives them in milliseconds
// as cli.md documents.
type Stats struct {
	// Duration is the whole run, from instantiation to exit.
	Duration time.Duration `json:"-"`
	// FuelUsed is the fuel charged: about one per instruction executed
	// (internal/fuel documents the cost model).
	FuelUsed uint64 `json:"fuelUsed"`
	// MemoryBytes is the peak linear memory of the instance.
	MemoryBytes int64 `json:"memoryBytes"`
	// BytesWritten is what the call charged to its write budget.
	BytesWritten int64 `json:"bytesWritten"`
	// HTTPRequests counts requests subako_http sent: written to a
	// connection after every check passed, each redirect hop included.
	// Requests refused before that (allowlist, destination, DNS, a refused
	// connection) do not count.
	HTTPRequests int64 `json:"httpRequests"`
	// HTTPBytesSent and HTTPBytesReceived count HTTP body bytes.
	HTTPBytesSent     int64 `json:"httpBytesSent"`
	HTTPBytesReceived int64 `json:"httpBytesReceived"`
	// ExitWait is the time from the host closing stdin, after the answer,
	// to the instance's end: what the 1 s exit rule (exit_timeout) measures.
	// Zero when the call ended before stdin was closed.
	ExitWait time.Duration `json:"-"`
	// QueueWait is how long the call waited for its turn to run
	// (Config.MaxInstances); it is not part of Duration, nor of any limit.
	QueueWait time.Duration `json:"-"`
	// Queued is the number of calls that were waiting for their turn when
	// this one began to wait, itself included; 0 when it ran at once.
	Queued int `json:"queued"`
}

// MarshalJSON writes the stats as cli.md documents them: the durations
// as durationMs, exitWaitMs and queueWaitMs (float milliseconds), the
// counts under their own names.
func (s Stats) MarshalJSON() ([]byte, error) {
	type counts Stats // the fields without this method
	return json.Marshal(struct {
		DurationMs float64 `json:"durationMs"`
		counts
		ExitWaitMs  float64 `json:"exitWaitMs"`
		QueueWaitMs float64 `json:"queueWaitMs"`
	}{Milliseconds(s.Duration), counts(s), Milliseconds(s.ExitWait), Milliseconds(s.QueueWait)})
}

// Milliseconds is d in milliseconds, to the microsecond: the unit of every
// duration in the JSON and the reports of the command line.
func Milliseconds(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// Result is the outcome of one call.
//
// # Notes
//
//   - Files that the view links to (volume:/// URIs) stay readable at their
//     HostPath until Release; call Release when done with the result.
type Result struct {
	Outcome Outcome
	// Result is the CallToolResult exactly as the module sent it; it may
	// also be set when the module crashed after answering.
	Result json.RawMessage
	// Parsed is Result decoded; zero when the module crashed.
	Parsed protocol.CallToolResult
	// View is what the model reads (docs/abi.md §5); nil on a crash.
	View []protocol.ViewItem
	// Crash is set when Outcome is OutcomeCrashed.
	Crash *Crash
	Stats Stats
	// TmpDir is the host directory that was mounted at /volume/tmp. Read
	// the files in it, but do not list, change or add to it before
	// Release when the runtime made it: a directory the call never touched
	// goes back to the pool without another look.
	TmpDir string

	volumes *tmpvol.Pool // set when the runtime made TmpDir
	// mounts are the call's, whose record tells whether anything reached
	// TmpDir through them; nil when the call never got that far.
	mounts *fsmount.Set
	// reuse says TmpDir may go back to the pool if the call left it
	// untouched: false when the instance could not be seen to end.
	reuse bool
	// lookLater: a worker process had TmpDir; the look at it is the
	// pool's goroutine's (tmpvol.Pool.ReleaseLater).
	lookLater bool
}

// Release gives back the call's /volume/tmp when the runtime made it: a
// directory the call never touched (nothing reached it through the call's
// mounts) goes back to the runtime's pool of empty ones at once, and one
// it touched but left no trace in after a look at it; any other is
// removed right after, off the caller's path, and at the latest when the
// Runtime closes. Files the view links to are gone then. Release is safe
// to call more than once, and after Runtime.Close.
func (r *Result) Release() error {
	if r.volumes == nil || r.TmpDir == "" {
		return nil
	}
	v := r.volumes
	r.volumes = nil
	touched := r.mounts == nil || r.mounts.Touched(fsmount.GuestTmp)
	r.mounts = nil
	if r.lookLater {
		return v.ReleaseLater(r.TmpDir, r.reuse)
	}
	return v.Release(r.TmpDir, r.reuse, touched)
}

// Call runs one tools/call in a fresh instance. An error means the host
// refused the call (a *CallError: unknown tool, arguments not an object),
// could not run it (unreadable directories, bad limits), the runtime was
// closed (errors.Is(err, ErrClosed)), or ctx ended before the call was done
// (errors.Is(err, context.Canceled) or context.DeadlineExceeded, and the
// context's cause when it has one: the caller's, not the call's own timeout
// limit, which is the crash "timeout"); a module that misbehaves yields a
// Result with OutcomeCrashed.
//
// Every Call, refused or not, ends in exactly one Observer event (and one
// log line), whatever it returns.
func (p *Package) Call(ctx context.Context, req CallRequest) (*Result, error) {
	// WithLazy: the fields are encoded only if the call logs something.
	log := p.rt.log.WithLazy(zap.String("package", p.name), zap.String("tool", req.Tool))
	event := CallEvent{Package: p.name, Tool: req.Tool, ModuleSHA256: p.checked.sha256Hex, Start: time.Now()}
	res, err := p.callOnce(ctx, req, log, &event)
	if err != nil {
		event.Outcome, event.Code = errorOutcome(ctx, err)
	}
	p.rt.reportCall(ctx, log, event)
	return res, err
}

// errorOutcome is the event outcome of a call that returned err: refused
// by the host (with its code), canceled by the caller, or a host error
// (the runtime closed, a directory it could not open).
func errorOutcome(ctx context.Context, err error) (Outcome, string) {
	var cerr *CallError
	var werr *WorkerError
	switch {
	case errors.As(err, &cerr):
		return OutcomeRefused, cerr.Code
	case errors.As(err, &werr):
		return OutcomeError, CodeWorkerExited
	case errors.Is(err, ErrClosed):
		return OutcomeError, ""
	case callerEnded(ctx) != nil && errors.Is(err, callerEnded(ctx)):
		return OutcomeCanceled, ""
	default:
		return OutcomeError, ""
	}
}

// callOnce is Call without its report: it fills event on success (and its
// stats whenever an instance ran).
func (p *Package) callOnce(ctx context.Context, req CallRequest, log *zap.Logger, event *CallEvent) (*Result, error) {
	if err := canceled(ctx, "call "+req.Tool); err != nil {
		return nil, err
	}
	if p.rt.eng.IsClosed() {
		return nil, closedError("call " + req.Tool)
	}
	if _, ok := p.tools.Lookup(req.Tool); !ok {
		return nil, &CallError{CodeUnknownTool, fmt.Sprintf("package %s has no tool %q (it lists %s)", p.name, req.Tool, strings.Join(p.toolNames(), ", "))}
	}
	args := bytes.TrimSpace(req.Arguments)
	if len(args) == 0 {
		args = []byte("{}")
	}
	// Valid JSON that starts with "{" is an object; checking so does not
	// decode it into a map (the module decodes it).
	if args[0] != '{' || !json.Valid(args) {
		return nil, &CallError{CodeBadArguments, "arguments must be a JSON object"}
	}
	lim, err := p.rt.limitsFor(req.Limits)
	if err != nil {
		return nil, err
	}
	res := &Result{TmpDir: req.Tmp}
	if res.TmpDir == "" {
		dir, err := p.rt.volumes.Get()
		if err != nil {
			return nil, err
		}
		res.TmpDir, res.volumes = dir, p.rt.volumes
	}
	req.Arguments = args // the object the module is given: trimmed, {} when empty
	err = p.call(ctx, req, lim, res, log, event)
	if err != nil {
		res.Release()
		return nil, err
	}
	return res, nil
}

// startSession waits for the instance's turn and prepares the mounts,
// budget and network of one call (or probe) and its session, not started
// yet. With discovery set it is set up as discovery is: only /package, no
// volume, no network, the discovery deadline.
//
// The instance runs under ctx and also ends, with cause ErrClosed, when the
// runtime closes; an error from waiting for its turn is ErrClosed as it is
// (the caller names the call) or the caller's cancellation with its cause.
func (p *Package) startSession(ctx context.Context, req CallRequest, tmp string, lim limits.Limits, discovery bool, log *zap.Logger) (*instance.Session, error) {
	layout := fsmount.Layout{Tmp: tmp, Data: req.Data, Skills: req.Skills}
	spec := instance.Spec{
		Compiled:      p.checked.compiled,
		InitialMemory: p.checked.initialMemory,
		Limits:        lim,
		Timeout:       lim.CallTimeout,
		Network:       req.Network,
		Exchange:      req.exchange,
		Log:           log,
	}
	if discovery {
		layout = fsmount.Layout{}
		spec.Network, spec.Exchange, spec.Timeout = subakohttp.DiscoveryPolicy(), nil, lim.DiscoveryTimeout
	}
	if p.checked.Source.HasAssets {
		layout.Package = p.checked.Source.Dir
	}
	lazyTmp := req.lazyTmp
	spec.Mounts = func() (*fsmount.Set, error) { return p.openMounts(layout, !discovery, lazyTmp) }
	return p.rt.eng.NewSession(ctx, spec)
}

// openMounts opens the mounts of one instance. With shared set, /package
// borrows the Package's root, opened once for all its calls (Discover,
// whose Package may never be returned to be closed, opens its own). A
// /volume/tmp the runtime made is opened only when something uses it: a
// call whose guest never touches it costs no system call for it, and its
// Set's record then lets Release recycle it without a look.
func (p *Package) openMounts(layout fsmount.Layout, shared, lazyTmp bool) (*fsmount.Set, error) {
	if p.pkgRoot.isClosed() {
		return nil, fmt.Errorf("package %s: %w", p.name, errPackageClosed)
	}
	mounts, err := layout.Mounts()
	if err != nil {
		return nil, err
	}
	for i := range mounts {
		m := &mounts[i]
		overlap := func(host string) error { return p.rt.volumes.Overlap(m.Guest, host) }
		switch {
		case m.Guest == fsmount.GuestTmp:
			m.Lazy = lazyTmp || p.rt.volumes.Owns(m.Host)
		case m.Guest == fsmount.GuestPackage && shared:
			if m.Root, err = p.pkgRoot.get(m.Host, overlap); err != nil {
				return nil, fmt.Errorf("package %s: %w", p.name, err)
			}
		default:
			if err := overlap(m.Host); err != nil {
				return nil, err
			}
		}
	}
	return fsmount.Open(mounts)
}

// statsOf reads what one instance used, for calls, probes, discovery and
// commands alike; exitWait is the session's (zero for a command). Call it
// after the instance ended.
func statsOf(in *instance.Instance, exitWait time.Duration) Stats {
	h := in.HTTP.Stats()
	st := Stats{
		Duration:          time.Since(in.Started),
		MemoryBytes:       int64(in.Memory.Peak()),
		BytesWritten:      in.Budget.Used(),
		HTTPRequests:      h.Requests,
		HTTPBytesSent:     h.BytesSent,
		HTTPBytesReceived: h.BytesReceived,
		FuelUsed:          in.Fuel.Used(),
		ExitWait:          exitWait,
	}
	st.QueueWait, st.Queued = in.QueueWait()
	return st
}

// sessionStats is statsOf a session's instance.
func sessionStats(s *instance.Session) Stats { return statsOf(s.Instance(), s.ExitWait()) }

// limitsFor is the runtime's limits, or override when it is set (and
// valid): the per-call limits of calls, probes and commands.
func (rt *Runtime) limitsFor(override *limits.Limits) (limits.Limits, error) {
	if override == nil {
		return rt.limits, nil
	}
	if err := override.Validate(); err != nil {
		return limits.Limits{}, err
	}
	return *override, nil
}

// call runs req (its Arguments checked to be an object) in a fresh
// instance under lim, filling res and event.
func (p *Package) call(ctx context.Context, req CallRequest, lim limits.Limits, res *Result, log *zap.Logger, event *CallEvent) error {
	tool := req.Tool
	params, err := protocol.ToolsCallParams(tool, req.Arguments)
	if err != nil {
		return &CallError{CodeBadArguments, err.Error()}
	}
	if p.checked.remote != nil {
		return p.callRemote(ctx, req, lim, res, log, event)
	}
	s, err := p.startSession(ctx, req, res.TmpDir, lim, false, log)
	if err != nil {
		if errors.Is(err, ErrClosed) {
			return closedError("call " + tool)
		}
		return fmt.Errorf("call %s: %w", tool, err)
	}
	in := s.Instance()
	res.mounts = in.Mounts
	defer s.Close()
	// The request is in stdin before the guest starts, and the answer
	// closes stdin: the whole instance runs here, nothing to hand over.
	icrash := s.Post(protocol.MethodToolsCall, params, true)
	var msg protocol.Message
	if icrash == nil {
		s.RunHere()
		msg, icrash = s.Await(protocol.MethodToolsCall)
	}
	if icrash == nil {
		res.Result = msg.Result
		parsed, err := protocol.ParseCallToolResult(msg.Result)
		if err != nil {
			icrash = s.FailNow(CrashInvalidResult, instance.ErrMessage(err))
		} else {
			res.Parsed = parsed
			icrash = s.Finish()
		}
	}
	if req.guestEnded != nil {
		req.guestEnded()
	}
	res.Stats = sessionStats(s)
	// A guest still running could write into /volume/tmp after Release:
	// such a directory must never go back to the pool.
	res.reuse = s.AwaitGone()
	event.Stats = res.Stats
	event.InstanceStart, event.Instantiate, event.Run = in.Timing.Start, in.Timing.Instantiate, in.Timing.Run
	event.HTTP, event.HTTPNotKept = in.HTTP.Records()
	if err := s.Interrupted(); err != nil {
		// The caller ended the call, or the runtime closed: whatever the
		// instance did last says nothing about the module.
		return interruptedError("call "+tool, err)
	}
	if icrash != nil && p.rt.eng.IsClosed() {
		// Close gave up waiting for the instance (its context ended) and
		// the engine's close cut it off: the host's shutdown, not a crash.
		return closedError("call " + tool)
	}
	crash := crashOf(icrash)
	switch {
	case crash != nil:
		res.Outcome, res.Crash = OutcomeCrashed, crash
		res.Parsed = protocol.CallToolResult{}
	case res.Parsed.IsError:
		res.Outcome = OutcomeToolError
	default:
		res.Outcome = OutcomeOK
	}
	if crash == nil && !req.forParent {
		res.View = protocol.BuildView(res.Parsed, in.Files())
	}
	event.Outcome = res.Outcome
	if crash != nil {
		event.Crash = crash.Reason
	}
	return nil
}

func (p *Package) toolNames() []string {
	tools := p.tools.Tools()
	names := make([]string, len(tools))
	for i, t := range tools {
		names[i] = t.Name
	}
	return names
}
