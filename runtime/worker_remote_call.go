package runtime

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"go.uber.org/zap"

	"github.com/subako/subako-runner/fsmount"
	"github.com/subako/subako-runner/hostmod/subakohttp"
	"github.com/subako/subako-runner/internal/instance"
	"github.com/subako/subako-runner/internal/worker"
	"github.com/subako/subako-runner/limits"
	"github.com/subako/subako-runner/protocol"
)

// remoteSession is the parent's side of one call, probe or command that
// runs in a worker: its place among Config.MaxInstances, the call's
// mounts as the parent opens them (for the view and for subako_http's
// file bodies and outputs), and the subako_http state that holds the
// policy and its credentials. The worker only ever sees request and
// response documents.
type remoteSession struct {
	end    func()
	ctx    context.Context // admitted: ends also when the runtime closes
	mounts *fsmount.Set
	http   *subakohttp.Call
	mirror *limits.WriteBudget
	start  time.Time
}

// startRemote takes the call's turn and opens what the parent keeps of it.
// layout nil mounts nothing in the parent.
func (rt *Runtime) startRemote(ctx context.Context, what string, layout *fsmount.Layout, p *Package, network *subakohttp.Policy, lim limits.Limits, log *zap.Logger) (*remoteSession, error) {
	place, actx, err := rt.eng.Admit(ctx)
	if err != nil {
		if errors.Is(err, ErrClosed) {
			return nil, closedError(what)
		}
		if cerr := canceled(ctx, what); cerr != nil {
			return nil, cerr
		}
		return nil, err
	}
	place.Done()
	rs := &remoteSession{end: place.End, ctx: actx, start: time.Now()}
	if layout != nil {
		if p != nil {
			rs.mounts, err = p.openMounts(*layout, true, false)
		} else {
			var mounts []fsmount.Mount
			if mounts, err = layout.Mounts(); err == nil {
				rs.mounts, err = fsmount.Open(mounts)
			}
		}
		if err != nil {
			place.End()
			return nil, fmt.Errorf("%s: %w", what, err)
		}
	}
	if network != nil {
		rs.mirror = limits.NewCallBudget(lim)
		cfg := subakohttp.CallConfig{Policy: network, Budget: rs.mirror, Limits: lim, Logger: log}
		if rs.mounts != nil {
			cfg.Files = instance.NewVolumeFiles(rs.mounts)
		}
		rs.http = subakohttp.NewCall(cfg)
	}
	return rs, nil
}

func (rs *remoteSession) close() {
	if rs.mounts != nil {
		rs.mounts.Close()
	}
	rs.end()
}

// exchange performs one of the guest's HTTP requests for the worker: the
// parent's subako_http, with the policy and credentials, the allowlist,
// the destination checks and the sockets, runs it; the write budget the
// worker reports is caught up with first, so a file output is held to
// what the call has left.
func (rs *remoteSession) exchange(m []byte) ([]byte, error) {
	var req wireHTTPMsg
	if err := decodeWire(m, wireHTTP, &req); err != nil {
		return nil, err
	}
	if rs.http == nil {
		return nil, fmt.Errorf("%w: an HTTP request from a call without a network policy", errMalformed)
	}
	b := rs.mirror
	if d := req.Used - b.Used(); d > 0 {
		b.Reserve(min(d, b.Remaining()))
	}
	for d := req.Entries - b.Entries(); d > 0 && b.ReserveEntry(0); d-- {
	}
	used, entries := b.Used(), b.Entries()
	doc := rs.http.Do(rs.ctx, req.Doc)
	return encodeWire(wireHTTPReply, wireHTTPMsg{Doc: doc, Used: b.Used() - used, Entries: b.Entries() - entries}), nil
}

// drive reads the worker's messages of one operation until its final
// reply, serving its HTTP requests and handing stdio to out. It returns
// the reply, or the error that ended the operation.
func (rs *remoteSession) drive(w *workers, slot int, st *worker.Stream, out func(kind wireKind, m []byte) error) ([]byte, error) {
	for {
		m, err := w.recv(rs.ctx, slot, st)
		if err != nil {
			return nil, err
		}
		k, err := wireKindOf(m)
		if err != nil {
			w.pool.Slot(slot).KillProtocol()
			return nil, err
		}
		switch k {
		case wireReply, wireError:
			return w.replyOf(slot, m)
		case wireSoon:
			// Its arrival has made the channel's reader poll again.
		case wireHTTP:
			reply, err := rs.exchange(m)
			if err != nil {
				w.pool.Slot(slot).KillProtocol()
				return nil, err
			}
			if err := st.Send(reply); err != nil {
				return nil, err
			}
		default:
			if out == nil || out(k, m) != nil {
				w.pool.Slot(slot).KillProtocol()
				return nil, fmt.Errorf("%w: kind %d in the middle of an operation", errMalformed, k)
			}
		}
	}
}

// ownLimits is lim as a call's header carries it: nil when they are the
// runtime's own, which the worker has.
func (rt *Runtime) ownLimits(lim limits.Limits) *limits.Limits {
	if lim == rt.limits {
		return nil
	}
	return &lim
}

// killedForItsTime reports whether err is the end of a worker the parent
// killed for this operation's time: the kill was for a deadline, and this
// operation's own limit and the grace had passed. Another call's overrun
// ends the worker's other calls too, and those are not timeouts of
// theirs: they get the *WorkerError of any other death.
func (rs *remoteSession) killedForItsTime(err error, w *workers, limit time.Duration) bool {
	var exit *worker.ExitError
	return errors.As(err, &exit) && exit.Reason == worker.ExitDeadline &&
		!time.Now().Before(rs.start.Add(limit+w.grace))
}

// interrupted is the error of a remote operation the caller's context or
// the runtime's close cut off; nil when neither did.
func (rs *remoteSession) interrupted(ctx context.Context, what string) error {
	if rs.ctx.Err() == nil {
		return nil
	}
	if errors.Is(context.Cause(rs.ctx), ErrClosed) && ctx.Err() == nil {
		return closedError(what)
	}
	if cerr := canceled(ctx, what); cerr != nil {
		return cerr
	}
	return closedError(what)
}

// callRemote is call's work for a package held by a worker. The parent
// trusts none of the worker's reading of the result: it parses the result
// again and builds the view from its own mounts, so a worker that lies can
// make a call fail, never make the model read a file outside the call's
// volumes.
func (p *Package) callRemote(ctx context.Context, req CallRequest, lim limits.Limits, res *Result, log *zap.Logger, event *CallEvent) error {
	tool := req.Tool
	what := "call " + tool
	layout := fsmount.Layout{Tmp: res.TmpDir, Data: req.Data, Skills: req.Skills}
	if p.checked.Source.HasAssets {
		layout.Package = p.checked.Source.Dir
	}
	rs, err := p.rt.startRemote(ctx, what, &layout, p, req.Network, lim, log)
	if err != nil {
		return err
	}
	defer rs.close()
	header := func(h uint64) []byte {
		return encodeWire(wireCall, wireCallReq{Handle: h, Tool: tool, Arguments: req.Arguments, Tmp: res.TmpDir, Data: req.Data, Skills: req.Skills,
			Limits: p.rt.ownLimits(lim), Network: req.Network != nil, LazyTmp: res.volumes != nil})
	}
	ref := p.checked.remote
	st, err := ref.stream(rs.ctx, what, header)
	if err != nil {
		if ierr := rs.interrupted(ctx, what); ierr != nil {
			return ierr
		}
		return err
	}
	defer st.Close()
	// The parent's clock: a worker that has not answered by the call's
	// limit and the pool's grace is killed.
	st.SetDeadline(rs.start.Add(lim.CallTimeout))
	stop := context.AfterFunc(rs.ctx, st.Close)
	defer stop()
	m, err := rs.drive(p.rt.workers, ref.slot, st, nil)
	if rs.http != nil {
		event.HTTP, event.HTTPNotKept = rs.http.Records()
	}
	if ierr := rs.interrupted(ctx, what); ierr != nil {
		return ierr
	}
	if rs.killedForItsTime(err, p.rt.workers, lim.CallTimeout) {
		// The guest ran past its limit and the worker did not end it: the
		// call's verdict is the one the in-process runtime gives.
		res.Stats = Stats{Duration: time.Since(rs.start)}
		res.Outcome, res.Crash = OutcomeCrashed, &Crash{Reason: CrashTimeout,
			Message: fmt.Sprintf("the module ran past its time limit of %s and did not stop; its worker process was killed", lim.CallTimeout)}
		event.Stats, event.Outcome, event.Crash = res.Stats, res.Outcome, CrashTimeout
		return nil
	}
	if err != nil {
		var failure *CallError
		if errors.As(err, &failure) {
			return failure
		}
		return workerErr(what, err)
	}
	var wr wireResult
	if err := decodeWire(m, wireReply, &wr); err != nil {
		p.rt.workers.pool.Slot(ref.slot).KillProtocol()
		return workerErr(what, err)
	}
	res.Stats = wr.Stats
	if rs.http != nil {
		h := rs.http.Stats()
		res.Stats.HTTPRequests, res.Stats.HTTPBytesSent, res.Stats.HTTPBytesReceived = h.Requests, h.BytesSent, h.BytesReceived
	}
	res.reuse, res.lookLater = wr.Reuse, true
	res.Result = wr.Result
	crash := wr.Crash
	if crash == nil {
		parsed, err := protocol.ParseCallToolResult(wr.Result)
		if err != nil {
			crash = &Crash{Reason: CrashInvalidResult, Message: err.Error()}
		} else {
			res.Parsed = parsed
		}
	}
	switch {
	case crash != nil:
		res.Outcome, res.Crash, res.Parsed = OutcomeCrashed, crash, protocol.CallToolResult{}
	case res.Parsed.IsError:
		res.Outcome = OutcomeToolError
	default:
		res.Outcome = OutcomeOK
	}
	if crash == nil {
		res.View = protocol.BuildView(res.Parsed, instance.NewVolumeFiles(rs.mounts))
	}
	event.Stats, event.Outcome = res.Stats, res.Outcome
	event.InstanceStart, event.Instantiate, event.Run = wr.Timing.InstanceStart, wr.Timing.Instantiate, wr.Timing.Run
	if crash != nil {
		event.Crash = crash.Reason
	}
	return nil
}

// probeRemote is Probe's work for a package held by a worker.
func (p *Package) probeRemote(ctx context.Context, pr Probe, req CallRequest, tmp string, lim limits.Limits) (*ProbeResult, error) {
	const what = "probe"
	rs, err := p.rt.startRemote(ctx, what, nil, nil, req.Network, lim, p.rt.log)
	if err != nil {
		return nil, err
	}
	defer rs.close()
	msgs := make([][]byte, len(pr.Messages))
	for i, m := range pr.Messages {
		msgs[i] = m
	}
	ref := p.checked.remote
	st, err := ref.stream(rs.ctx, what, func(h uint64) []byte {
		return encodeWire(wireProbe, wireCallReq{Handle: h, Tmp: tmp, Data: req.Data, Skills: req.Skills, Limits: p.rt.ownLimits(lim), Network: req.Network != nil,
			Messages: msgs, Discovery: pr.Discovery})
	})
	if err != nil {
		if ierr := rs.interrupted(ctx, what); ierr != nil {
			return nil, ierr
		}
		return nil, err
	}
	defer st.Close()
	timeout := lim.CallTimeout
	if pr.Discovery {
		timeout = lim.DiscoveryTimeout
	}
	st.SetDeadline(rs.start.Add(timeout + lim.ExitTimeout))
	stop := context.AfterFunc(rs.ctx, st.Close)
	defer stop()
	m, err := rs.drive(p.rt.workers, ref.slot, st, nil)
	if ierr := rs.interrupted(ctx, what); ierr != nil {
		return nil, ierr
	}
	if rs.killedForItsTime(err, p.rt.workers, timeout+lim.ExitTimeout) {
		return &ProbeResult{Crash: &Crash{Reason: CrashTimeout, Message: "the module ran past its time limit and did not stop; its worker process was killed"},
			Stats: Stats{Duration: time.Since(rs.start)}}, nil
	}
	if err != nil {
		return nil, workerErr(what, err)
	}
	var wr wireResult
	if err := decodeWire(m, wireReply, &wr); err != nil {
		p.rt.workers.pool.Slot(ref.slot).KillProtocol()
		return nil, workerErr(what, err)
	}
	out := &ProbeResult{Crash: wr.Crash, Stats: wr.Stats, Notifications: wr.Notifs, ExitAfterClose: wr.ExitAfter, Stderr: wr.Stderr}
	for _, w := range wr.Responses {
		msg, err := w.message()
		if err != nil {
			p.rt.workers.pool.Slot(ref.slot).KillProtocol()
			return nil, workerErr(what, err)
		}
		out.Responses = append(out.Responses, msg)
	}
	return out, nil
}

// commandRemote is RunCommand's work in a worker, its stdio carried over
// the stream.
func (rt *Runtime) commandRemote(ctx context.Context, path string, cmd Command, lim limits.Limits) (*CommandResult, error) {
	what := "run " + path
	rs, err := rt.startRemote(ctx, what, nil, nil, cmd.Network, lim, rt.log)
	if err != nil {
		return nil, err
	}
	defer rs.close()
	if cmd.Network != nil && len(cmd.Mounts) > 0 {
		// subako_http's file bodies and outputs resolve in the command's
		// own mounts, as the parent opens them.
		if rs.mounts, err = fsmount.Open(cmd.Mounts); err != nil {
			return nil, fmt.Errorf("%s: %w", what, err)
		}
		rs.http = subakohttp.NewCall(subakohttp.CallConfig{Policy: cmd.Network, Budget: rs.mirror, Limits: lim, Logger: rt.log, Files: instance.NewVolumeFiles(rs.mounts)})
	}
	req := wireCommandReq{Path: path, Args: cmd.Args, Env: cmd.Env, Limits: lim, HasStdin: cmd.Stdin != nil, Network: cmd.Network != nil}
	for _, m := range cmd.Mounts {
		req.Mounts = append(req.Mounts, wireMount{Guest: m.Guest, Host: m.Host, ReadOnly: m.ReadOnly})
	}
	slot := rt.workers.pick()
	st, _, err := rt.workers.open(rs.ctx, slot, encodeWire(wireCommand, req))
	if err != nil {
		if ierr := rs.interrupted(ctx, what); ierr != nil {
			return nil, ierr
		}
		return nil, workerErr(what, err)
	}
	defer st.Close()
	// Compilation is part of a command, so the clock allows for it.
	st.SetDeadline(rs.start.Add(lim.CompileTimeout + lim.CallTimeout))
	stop := context.AfterFunc(rs.ctx, st.Close)
	defer stop()
	if cmd.Stdin != nil {
		go func() {
			buf := make([]byte, 32<<10)
			for {
				n, err := cmd.Stdin.Read(buf)
				if n > 0 && st.Send(encodeWire(wireStdin, buf[:n])) != nil {
					return
				}
				if err != nil {
					st.Send(encodeWire(wireStdin, []byte{}))
					return
				}
			}
		}()
	}
	stdout, stderr := cmd.Stdout, cmd.Stderr
	if stdout == nil {
		stdout = io.Discard
	}
	if stderr == nil {
		stderr = io.Discard
	}
	m, err := rs.drive(rt.workers, slot, st, func(k wireKind, m []byte) error {
		var chunk []byte
		if err := decodeWire(m, k, &chunk); err != nil {
			return err
		}
		switch k {
		case wireStdout:
			stdout.Write(chunk)
		case wireStderr:
			stderr.Write(chunk)
		default:
			return errMalformed
		}
		return nil
	})
	if ierr := rs.interrupted(ctx, what); ierr != nil {
		return nil, ierr
	}
	if rs.killedForItsTime(err, rt.workers, lim.CompileTimeout+lim.CallTimeout) {
		return &CommandResult{Crash: &Crash{Reason: CrashTimeout, Message: "the module ran past its time limit and did not stop; its worker process was killed"},
			Stats: Stats{Duration: time.Since(rs.start)}}, nil
	}
	if err != nil {
		var rej *RejectedError
		var lerr *LinkError
		if errors.As(err, &rej) || errors.As(err, &lerr) {
			return nil, err
		}
		return nil, workerErr(what, err)
	}
	var wr wireResult
	if err := decodeWire(m, wireReply, &wr); err != nil {
		rt.workers.pool.Slot(slot).KillProtocol()
		return nil, workerErr(what, err)
	}
	res := &CommandResult{ExitCode: wr.ExitCode, Crash: wr.Crash, Stats: wr.Stats}
	if rs.http != nil {
		h := rs.http.Stats()
		res.Stats.HTTPRequests, res.Stats.HTTPBytesSent, res.Stats.HTTPBytesReceived = h.Requests, h.BytesSent, h.BytesReceived
	}
	return res, nil
}
