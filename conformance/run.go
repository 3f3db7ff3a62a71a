package conformance

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"time"

	"github.com/subako/subako-runner/hostmod/subakohttp"
	"github.com/subako/subako-runner/limits"
	"github.com/subako/subako-runner/protocol"
	srt "github.com/subako/subako-runner/runtime"
)

// Options tune a run.
type Options struct {
	// Examples maps a tool name to argument objects to call it with; each
	// call is reported as a check "examples.<tool>/<n>" (n from 1).
	Examples map[string][]json.RawMessage
	// ExampleNetwork is the network policy of the example calls (the CLI's
	// --allow-host, --resolve, --allow-private…), so a tool that fetches
	// can be judged on a real answer; nil denies every request. The probes
	// always run without network, as discovery does.
	ExampleNetwork *subakohttp.Policy
	// Concurrency bounds how many module instances run at once; 0 means
	// GOMAXPROCS (at least 2).
	Concurrency int
	// FailOn is the least status that fails the run (Report.Passed
	// false): Fail (the default, also when empty) or Warn, so that CI
	// catches warnings and example calls that answered isError (the CLI's
	// --strict).
	FailOn Status

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
	failOn, err := checkFailOn(opts.FailOn)
	if err != nil {
		return nil, err
	}
	r := &run{rt: rt, lim: rt.Limits(), path: path, opts: opts}
	if err := r.all(ctx); err != nil {
		return nil, err
	}
	rep := &Report{Package: path, FailOn: failOn, Duration: time.Since(started)}
	for _, c := range r.order {
		rep.Checks = append(rep.Checks, *c)
	}
	rep.Passed = rep.passes()
	return rep, nil
}

// run is the state of one Run.
type run struct {
	rt   *srt.Runtime
	lim  limits.Limits
	path string
	opts Options

	mu      sync.Mutex
	order   []*Check // report order
	fixed   fixed
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
	r.order = append(r.order, c)
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
	return &Profile{DurationMs: srt.Milliseconds(s.Duration), FuelUsed: s.FuelUsed, MemoryBytes: s.MemoryBytes}
}

// skipRest marks every check still unjudged as skipped for reason.
func (r *run) skipRest(reason string) {
	for _, c := range r.order {
		if c.Detail == "" {
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
		r.fixed.uploadChecks.set(Fail, "the host refuses the upload:\n%s", rejections(rej.Rejections))
		r.addAll(lateChecks)
		r.skipRest("skipped: the package fails the upload checks")
		return nil
	case err != nil:
		return err
	}
	// Each of checked and the Packages Discover makes from it holds a
	// reference to the compiled code; each is closed when done.
	defer checked.Close(context.WithoutCancel(ctx))
	r.fixed.uploadChecks.set(Pass, "%s bytes, sha256 %s", groupDigits(len(checked.Source.Module)), hex.EncodeToString(checked.Hash[:]))
	r.assets = checked.Source.HasAssets
	r.readImports(checked)

	pkg, err := r.rt.Discover(ctx, checked, r.path)
	if errors.As(err, &rej) {
		r.discoveryFailed(rej)
		return nil
	} else if err != nil {
		return err
	}
	defer pkg.Close(context.WithoutCancel(ctx))
	r.pkg = pkg
	r.tools = pkg.Tools()
	r.fixed.discoveryOK.set(Pass, "%d tool(s) in %d page(s): %s", len(r.tools), pkg.Discovery().Pages, toolNames(r.tools))
	r.checkSchema(pkg.Discovery().Result)
	r.checkToolList()

	var jobs []func()
	var second *srt.Package
	var secondErr error
	jobs = append(jobs, func() {
		second, secondErr = r.rt.Discover(ctx, checked, r.path)
		if second != nil {
			second.Close(context.WithoutCancel(ctx)) // only its tool list and times are needed
		}
	})
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
	slower := pkg.Discovery().Duration
	if second != nil {
		slower = max(slower, second.Discovery().Duration)
	}
	r.checkDiscoveryTime(slower)
	r.record(evidence{probe: "discovery.ok", stderr: pkg.Discovery().Stderr, notifications: pkg.Discovery().Notifications,
		profile: &Profile{DurationMs: srt.Milliseconds(pkg.Discovery().Duration), MemoryBytes: pkg.Discovery().MemoryBytes}})
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
