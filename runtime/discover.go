package runtime

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/subako/subako-runner/internal/instance"
	"github.com/subako/subako-runner/protocol"
)

// Package is a loaded package: checked, compiled and discovered. Its tool
// list is what the package provides until its next version (docs/abi.md
// §4); calls for any other tool are refused before the module runs.
//
// # Notes
//
//   - Safe for concurrent use: every Call runs in a fresh instance.
//   - Close releases the compiled code; calls in flight must have returned.
type Package struct {
	rt      *Runtime
	checked *Checked
	name    string
	tools   *protocol.ToolSet

	discovery Discovery // written before the Package is returned, read only after
	closed    sync.Once
	pkgRoot   sharedRoot // /package, opened by the first call that mounts it
	// Opened says how Open opened the package; nil after Load.
	Opened *Opened

	// codeSize is the machine code the compile cost model predicts for
	// the metered module (ResidentBytes), worked out once: by the set's
	// open, which needed it before the package existed, or on first use.
	codeOnce sync.Once
	codeSize int64
}

// Discovery is what the discovery run observed, for reports and `check`.
type Discovery struct {
	// Result is the module's server/discover result.
	Result protocol.DiscoverResult
	// Pages is how many tools/list pages were requested.
	Pages int
	// Notifications counts messages without an id (ignored).
	Notifications int
	// Duration is the whole run, from instantiation to exit.
	Duration time.Duration
	// Stderr is the tail of the module's stderr.
	Stderr string
	// MemoryBytes is the peak linear memory of the instance.
	MemoryBytes int64
	// FuelUsed is the fuel the discovery run spent.
	FuelUsed uint64
}

// Name is the package's manifest name, or the file name without extension.
func (p *Package) Name() string { return p.name }

// Manifest is the package's manifest, nil for a bare .wasm file.
func (p *Package) Manifest() *Manifest { return p.checked.Source.Manifest }

// Hash is the SHA-256 of the package's module.wasm.
func (p *Package) Hash() [32]byte { return p.checked.Hash }

// Tools returns the discovered tools in the order the module listed them.
func (p *Package) Tools() []protocol.Tool { return p.tools.Tools() }

// Tool returns the discovered tool with that name.
func (p *Package) Tool(name string) (*protocol.CompiledTool, bool) { return p.tools.Lookup(name) }

// ToolWarnings are what the tool list does that the host accepts but a
// client may not enforce (e.g. a pattern only JavaScript's regular
// expressions can compile); `check` reports them.
func (p *Package) ToolWarnings() []protocol.Warning { return p.tools.Warnings() }

// Discovery describes the discovery run (for a package Open restored, the
// stored discover result and no run). It returns a copy the caller may
// keep or change.
func (p *Package) Discovery() Discovery {
	d := p.discovery
	r := &d.Result
	r.SupportedVersions = slices.Clone(r.SupportedVersions)
	r.Capabilities, r.ServerInfo = bytes.Clone(r.Capabilities), bytes.Clone(r.ServerInfo)
	r.Instructions, r.Raw = bytes.Clone(r.Instructions), bytes.Clone(r.Raw)
	r.ResultType, r.TTLMs, r.CacheScope = bytes.Clone(r.ResultType), bytes.Clone(r.TTLMs), bytes.Clone(r.CacheScope)
	return d
}

// Close releases the package's reference to its compiled code (see
// Checked) and closes its /package root; calls in flight must have
// returned, and later calls fail. A second Close does nothing.
func (p *Package) Close(ctx context.Context) error {
	var err error
	p.closed.Do(func() {
		if r := p.checked.remote; r != nil {
			err = errors.Join(p.pkgRoot.close(), r.release(ctx))
			return
		}
		err = errors.Join(p.pkgRoot.close(), p.checked.code.release(ctx))
	})
	return err
}

// Load validates the package at path (docs/abi.md §1, §2), compiles it and
// discovers its tools (§4). A package that is refused yields a
// *RejectedError; a discovery that crashed is a RejectedError with code
// discovery_failed and the Crash. When ctx ends first, the error wraps
// ctx.Err() (errors.Is finds context.Canceled or DeadlineExceeded) and
// says nothing about the package.
func (rt *Runtime) Load(ctx context.Context, path string) (p *Package, err error) {
	started := time.Now()
	var hash []byte
	name := filepath.Base(path)
	phases := &phaseLog{}
	ctx = withPhaseLog(ctx, phases)
	defer func() { rt.reportUpload(ctx, name, hash, started, phases, p, err) }()
	if rt.workers != nil {
		if err := canceled(ctx, "load "+path); err != nil {
			return nil, err
		}
		if rt.eng.IsClosed() {
			return nil, closedError("load " + path)
		}
		p, err = rt.loadRemote(ctx, path)
		if p != nil {
			hash, name = p.checked.Hash[:], p.name
		}
		return p, err
	}
	c, err := rt.Validate(ctx, path)
	if err != nil {
		return nil, err
	}
	hash, name = c.Hash[:], c.Source.displayName(path)
	if err := canceled(ctx, "load "+path); err != nil {
		c.Close(context.WithoutCancel(ctx))
		return nil, err
	}
	endDiscover := phase(ctx, "discover")
	p, err = rt.Discover(ctx, c, path)
	endDiscover()
	c.Close(context.WithoutCancel(ctx)) // p, if any, holds its own reference
	if err != nil {
		return nil, err
	}
	return p, nil
}

// Discover runs the discovery of a checked module; the Package it returns
// holds its own reference to c's compiled code (close both: see Checked).
// path names the package
// in logs and messages. When ctx ends before discovery is done, the error
// wraps ctx.Err(): the caller's deadline is not the discovery timeout
// limit, whose expiry is the rejection discovery_failed (timeout).
func (rt *Runtime) Discover(ctx context.Context, c *Checked, path string) (*Package, error) {
	if err := canceled(ctx, "discover "+path); err != nil {
		return nil, err
	}
	if rt.eng.IsClosed() {
		return nil, closedError("discover " + path)
	}
	if c.remote != nil {
		return rt.discoverRemote(ctx, c, path)
	}
	defer rt.progress(StepDiscover, 0)()
	lim := rt.limits
	log := rt.log.With(zap.String("package", c.Source.displayName(path)))
	started := time.Now()

	p := &Package{rt: rt, checked: c, name: c.Source.displayName(path)}
	s, err := p.startSession(ctx, CallRequest{}, "", lim, true, log)
	if err != nil {
		return nil, fmt.Errorf("discover %s: %w", path, err)
	}
	defer s.Close()
	s.Start()
	tools, rej, icrash := p.discover(s, lim.MaxPages)
	if icrash == nil && rej == nil {
		icrash = s.Finish()
	} else {
		s.Abort()
	}
	if err := s.Interrupted(); err != nil {
		return nil, interruptedError("discover "+path, err)
	}
	if icrash != nil && rt.eng.IsClosed() {
		return nil, closedError("discover " + path) // the engine's close cut it off: no verdict
	}
	if icrash == nil && rej == nil {
		// Validation (schema compilation) runs after the module exited: the
		// discovery deadline is the module's time, not the host's.
		rej = p.validateTools(tools, lim.MaxTools)
		if err := canceled(ctx, "discover "+path); err != nil {
			return nil, err
		}
	}
	crash := crashOf(icrash)
	p.discovery.Duration = time.Since(started)
	p.discovery.Stderr = s.Stderr()
	p.discovery.Notifications = s.Notifications()
	st := sessionStats(s)
	p.discovery.MemoryBytes, p.discovery.FuelUsed = st.MemoryBytes, st.FuelUsed
	if crash != nil {
		log.Debug("discovery crashed", zap.String("crash", crash.Reason), zap.Duration("duration", p.discovery.Duration))
		return nil, &RejectedError{
			Rejections: []Rejection{{CodeDiscoveryFailed, fmt.Sprintf("discovery crashed (%s): %s", crash.Reason, crash.Message)}},
			Crash:      crash,
		}
	}
	if rej != nil {
		return nil, rej
	}
	log.Debug("package discovered", zap.Int("tools", len(p.tools.Tools())), zap.Int("pages", p.discovery.Pages), zap.Duration("duration", p.discovery.Duration))
	c.code.acquire()
	return p, nil
}

// discover runs server/discover and the tools/list pages (at most
// maxPages) on a session and returns every tool listed.
func (p *Package) discover(s *instance.Session, maxPages int) ([]protocol.Tool, *RejectedError, *instance.Crash) {
	msg, crash := s.Request(protocol.MethodDiscover, map[string]any{})
	if crash != nil {
		return nil, nil, crash
	}
	var err error
	p.discovery.Result, err = protocol.ParseDiscover(msg.Result)
	if err != nil {
		return nil, rejectedBy(err), nil
	}
	var tools []protocol.Tool
	var cursor *string
	for {
		msg, crash := s.Request(protocol.MethodToolsList, protocol.ToolsListParams(cursor))
		if crash != nil {
			return nil, nil, crash
		}
		p.discovery.Pages++
		page, err := protocol.ParseToolsPage(msg.Result)
		if err != nil {
			return nil, rejectedBy(err), nil
		}
		tools = append(tools, page.Tools...)
		if page.NextCursor == nil {
			return tools, nil, nil
		}
		if p.discovery.Pages >= maxPages {
			return nil, rejectedBy(protocol.ErrTooManyPages(maxPages)), nil
		}
		cursor = page.NextCursor
	}
}

// validateTools applies the tool-list rules of docs/abi.md §4.
func (p *Package) validateTools(tools []protocol.Tool, maxTools int) *RejectedError {
	set, problems := protocol.ValidateTools(tools, maxTools)
	if len(problems) > 0 {
		rej := &RejectedError{}
		for _, e := range problems {
			rej.Rejections = append(rej.Rejections, Rejection{Code: e.Code, Message: e.Message})
		}
		return rej
	}
	p.tools = set
	return nil
}

// rejectedBy turns a protocol error into a rejection with the same code.
func rejectedBy(err error) *RejectedError {
	var perr *protocol.Error
	if errors.As(err, &perr) {
		return &RejectedError{Rejections: []Rejection{{Code: perr.Code, Message: perr.Message}}}
	}
	return &RejectedError{Rejections: []Rejection{{Code: CodeDiscoveryFailed, Message: err.Error()}}}
}
