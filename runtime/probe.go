package runtime

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"go.uber.org/zap"

	"github.com/subako/subako-runner/internal/instance"
	"github.com/subako/subako-runner/protocol"
)

// Probe is a raw conversation with one fresh instance of a loaded package,
// for conformance testing (`subako-runner check`): the messages are written
// exactly as given, and the module's answers are returned unjudged.
type Probe struct {
	// Messages are written to stdin, one per line, in order. After a
	// request (a message with a method and an id) the probe waits for its
	// answer before writing the next message; a notification is written
	// at once. Each message must be one line of JSON.
	Messages []json.RawMessage
	// Discovery runs the instance as discovery does: only /package
	// mounted, no network, the discovery deadline.
	Discovery bool
}

// ProbeResult is what one probe observed.
type ProbeResult struct {
	// Responses are the module's answers, one per request, in order; a
	// request left unanswered has none.
	Responses []protocol.Message
	// Notifications counts the messages without an id the module wrote.
	Notifications int
	// Crash is the first rule of docs/abi.md §6 the run broke, judged as
	// for a call except that JSON-RPC errors and results are not judged.
	Crash *Crash
	// ExitAfterClose is how long the module ran after stdin closed; zero
	// when it exited before.
	ExitAfterClose time.Duration
	// Stderr is the tail of the module's stderr.
	Stderr string
	Stats  Stats
}

// Probe runs a raw conversation with a fresh instance. req supplies the
// mounts, network and limits as for a call (its Tool and Arguments are not
// used). An error means the host could not run the probe, a message is not
// a request or notification on one line, or ctx ended first (the error
// wraps ctx.Err(); the run is then no evidence about the module).
func (p *Package) Probe(ctx context.Context, pr Probe, req CallRequest) (*ProbeResult, error) {
	if err := canceled(ctx, "probe"); err != nil {
		return nil, err
	}
	if p.rt.eng.IsClosed() {
		return nil, closedError("probe")
	}
	lim, err := p.rt.limitsFor(req.Limits)
	if err != nil {
		return nil, err
	}
	lines := make([][]byte, len(pr.Messages))
	pending := make([]string, len(pr.Messages))
	for i, m := range pr.Messages {
		line := append(append([]byte(nil), m...), '\n')
		msg, err := protocol.Classify(m)
		switch {
		case err != nil:
			return nil, fmt.Errorf("probe message %d: %v", i, err)
		case msg.Kind == protocol.KindRequest:
			pending[i] = msg.ID.Key()
		case msg.Kind != protocol.KindNotification:
			return nil, fmt.Errorf("probe message %d is not a request or a notification", i)
		}
		lines[i] = line
	}
	tmp := req.Tmp
	if tmp == "" && !pr.Discovery {
		dir, err := p.rt.volumes.Get()
		if err != nil {
			return nil, err
		}
		defer p.rt.volumes.Put(dir, false) // probes are rare: not worth proving the instance gone
		tmp = dir
	}
	if p.checked.remote != nil {
		return p.probeRemote(ctx, pr, req, tmp, lim)
	}
	log := p.rt.log.With(zap.String("package", p.name), zap.String("probe", "raw"))
	s, err := p.startSession(ctx, req, tmp, lim, pr.Discovery, log)
	if err != nil {
		return nil, fmt.Errorf("probe: %w", err)
	}
	defer s.Close()
	s.Start()
	res := &ProbeResult{}
	var crash *instance.Crash
	for i := range lines {
		msg, cr := s.Send(lines[i], pending[i])
		if cr != nil {
			crash = cr
			break
		}
		if pending[i] != "" {
			res.Responses = append(res.Responses, msg)
		}
	}
	if crash == nil {
		crash = s.Finish()
		res.ExitAfterClose = s.ExitWait()
	} else {
		s.Abort()
	}
	if err := s.Interrupted(); err != nil {
		return nil, interruptedError("probe", err)
	}
	res.Crash = crashOf(crash)
	res.Stats = sessionStats(s)
	res.Stderr = s.Stderr()
	res.Notifications = s.Notifications()
	return res, nil
}
