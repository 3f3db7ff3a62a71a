package runtime

import (
	"context"
	"encoding/hex"
	"errors"
	"slices"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/subako/subako-runner/hostmod/subakohttp"
)

// Observer receives one event per upload (Load) and per call, so that the
// embedder can feed Prometheus, OpenTelemetry or anything else without the
// runner depending on them.
//
// # Notes
//
//   - Methods are called synchronously as the operation returns, from the
//     goroutine that ran it: keep them quick, and safe for concurrent use.
//   - Events never carry arguments, results or secrets.
type Observer interface {
	Upload(ctx context.Context, e UploadEvent)
	Call(ctx context.Context, e CallEvent)
}

// InstanceObserver is an Observer that also counts module instances as
// they start and end (calls, discoveries, probes and commands alike), for
// a gauge of instances running. The runtime checks for it once, in New.
type InstanceObserver interface {
	Observer
	InstanceStarted(ctx context.Context)
	InstanceEnded(ctx context.Context)
}

// Phase is one step of an upload, timed: "check" (the upload checks),
// "validate" (the module as uploaded, in full), "meter" (fuel metering),
// "compile" and "discover".
type Phase struct {
	Name     string
	Start    time.Time
	Duration time.Duration
}

// UploadEvent describes one Load.
type UploadEvent struct {
	Package string
	// ModuleSHA256 is the hex SHA-256 of module.wasm; empty when it could
	// not be read.
	ModuleSHA256 string
	// Outcome is OutcomeOK, OutcomeRejected (upload checks or tool list),
	// OutcomeCrashed (discovery crashed), OutcomeCanceled when the
	// caller's context ended the upload (no verdict on the package), or
	// OutcomeError when the host could not work.
	Outcome Outcome
	// Codes are the rejection codes, and the crash code when it crashed.
	Codes    []string
	Tools    int
	Duration time.Duration
	// Phases are the steps the upload went through, in the order they
	// began; a step that did not run (the upload ended before it) is
	// absent. "validate" and "meter" run side by side (Start and Duration
	// say how they overlapped).
	Phases []Phase
}

// CallEvent describes one Package.Call or PackageSet.Call: every Call,
// whether it ran, was refused or failed, ends in exactly one event. A set's
// call that reached its package has Package.Call's event; one that did
// not (its open failed or was waited for in vain) has the set's own, with
// the key as Package, no ModuleSHA256 and no Stats.
type CallEvent struct {
	// Package is the package's name, or the set's key when a
	// PackageSet.Call never reached the package.
	Package string
	// Tool is the tool the call asked for (it may be unknown to the
	// package when Outcome is OutcomeRefused).
	Tool string
	// Outcome is the call's Outcome when Call returned a Result. When Call
	// returned an error it is OutcomeRefused (a *CallError: unknown tool,
	// bad arguments), OutcomeCanceled (the caller's context ended the call,
	// while it waited for its turn or ran), or OutcomeError (the host could
	// not run it: the runtime closed, a directory could not be opened).
	// A PackageSet.Call that never reached its package is OutcomeCanceled
	// (the caller's context ended while it waited for the open) or
	// OutcomeError with Code CodeOpenFailed or CodePackageSetClosed.
	// Count the last three apart from crashes: they say nothing about the
	// module.
	Outcome Outcome
	// Crash is the crash code, empty unless Outcome is OutcomeCrashed.
	Crash string
	// Code is the refusal code (unknown_tool, bad_arguments) when Outcome
	// is OutcomeRefused, the set's code (open_failed, package_set_closed)
	// when a PackageSet.Call ended in OutcomeError before its package, and
	// empty otherwise.
	Code string
	// Stats are the resources the instance used; zero when no instance
	// ran.
	Stats Stats
	// ModuleSHA256 is the hex SHA-256 of the package's module.wasm.
	ModuleSHA256 string
	// Start is when Call began. InstanceStart is when the instance began
	// to be instantiated (zero when no instance ran), Instantiate how long
	// that took, and Run how long the guest's _start then ran.
	Start, InstanceStart time.Time
	Instantiate, Run     time.Duration
	// HTTP are the requests the guest made through subako_http, at most
	// 64; HTTPNotKept counts those beyond.
	HTTP        []subakohttp.RequestRecord
	HTTPNotKept int
}

// reportUpload logs the one line of a Load and tells the observer.
func (rt *Runtime) reportUpload(ctx context.Context, name string, hash []byte, started time.Time, phases *phaseLog, p *Package, err error) {
	e := UploadEvent{Package: name, Outcome: OutcomeOK, Duration: time.Since(started), Phases: phases.phases()}
	if hash != nil {
		e.ModuleSHA256 = hex.EncodeToString(hash)
	}
	var rej *RejectedError
	switch {
	case err == nil:
		e.Tools = len(p.tools.Tools())
	case errors.As(err, &rej):
		e.Outcome = OutcomeRejected
		for _, r := range rej.Rejections {
			e.Codes = append(e.Codes, r.Code)
		}
		if rej.Crash != nil {
			e.Outcome = OutcomeCrashed
			e.Codes = append(e.Codes, rej.Crash.Reason)
		}
	case callerEnded(ctx) != nil && errors.Is(err, callerEnded(ctx)):
		e.Outcome = OutcomeCanceled
	default:
		e.Outcome = OutcomeError
	}
	fields := []zap.Field{zap.String("package", e.Package), zap.String("sha256", e.ModuleSHA256), zap.String("outcome", string(e.Outcome)),
		zap.Duration("duration", e.Duration), zap.Int("tools", e.Tools)}
	if len(e.Codes) > 0 {
		fields = append(fields, zap.Strings("codes", e.Codes))
	}
	if e.Outcome == OutcomeError {
		fields = append(fields, zap.Error(err))
	}
	rt.log.Info("upload", fields...)
	if rt.observer != nil {
		rt.observer.Upload(ctx, e)
	}
}

// reportCall logs the line of one call and tells the observer.
func (rt *Runtime) reportCall(ctx context.Context, log *zap.Logger, e CallEvent) {
	if ce := log.Check(zap.InfoLevel, "call"); ce != nil {
		ce.Write(callFields(e)...)
	}
	if rt.observer != nil {
		rt.observer.Call(ctx, e)
	}
}

// callFields are the log fields of a call's end, built only when the log
// takes them.
func callFields(e CallEvent) []zap.Field {
	s := e.Stats
	fields := []zap.Field{zap.String("outcome", string(e.Outcome)), zap.Duration("duration", s.Duration),
		zap.Uint64("fuel", s.FuelUsed), zap.Int64("memoryBytes", s.MemoryBytes), zap.Int64("bytesWritten", s.BytesWritten),
		zap.Int64("httpRequests", s.HTTPRequests)}
	if s.QueueWait > 0 {
		fields = append(fields, zap.Duration("queueWait", s.QueueWait), zap.Int("queued", s.Queued))
	}
	if e.Crash != "" {
		fields = append(fields, zap.String("crash", e.Crash))
	}
	if e.Code != "" {
		fields = append(fields, zap.String("code", e.Code))
	}
	return fields
}

// phaseLog collects the phases of one upload (UploadEvent.Phases). Load
// attaches it to its context; the steps below time themselves into it.
// Validation and metering run side by side, so a phase may end on another
// goroutine than Load's, and phases end in any order: they are listed in
// the order they began.
type phaseLog struct {
	mu   sync.Mutex
	next int // the sequence number of the next phase to begin
	list []loggedPhase
}

type loggedPhase struct {
	seq int
	Phase
}

// phases returns the phases ended so far, in the order they began.
func (l *phaseLog) phases() []Phase {
	l.mu.Lock()
	defer l.mu.Unlock()
	sorted := slices.SortedFunc(slices.Values(l.list), func(a, b loggedPhase) int { return a.seq - b.seq })
	out := make([]Phase, len(sorted))
	for i, p := range sorted {
		out[i] = p.Phase
	}
	return out
}

type phaseLogKey struct{}

func withPhaseLog(ctx context.Context, l *phaseLog) context.Context {
	return context.WithValue(ctx, phaseLogKey{}, l)
}

// phase starts the named phase of the upload ctx belongs to and returns
// the function that ends it; outside an upload (Validate, Open, commands)
// it records nothing.
func phase(ctx context.Context, name string) (end func()) {
	l, _ := ctx.Value(phaseLogKey{}).(*phaseLog)
	if l == nil {
		return func() {}
	}
	l.mu.Lock()
	seq := l.next
	l.next++
	l.mu.Unlock()
	start := time.Now()
	return func() {
		p := loggedPhase{seq, Phase{Name: name, Start: start, Duration: time.Since(start)}}
		l.mu.Lock()
		l.list = append(l.list, p)
		l.mu.Unlock()
	}
}
