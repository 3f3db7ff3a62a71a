package runtime

import (
	"bytes"
	"io"
	"sync"
	"sync/atomic"
	"time"
)

// The hooks of a command line: a status line while the host works
// (Config.Progress) and the author's view of the conversation over stdio
// (Config.Trace). Both are optional and cost nothing when unset.

// ProgressStep names a slow step of the host.
type ProgressStep string

// The steps Progress is told about.
const (
	// StepCompile is the fuel metering and compilation of a module (from
	// the compilation cache when one is configured and holds it).
	StepCompile ProgressStep = "compile"
	// StepDiscover is a discovery run (server/discover, tools/list).
	StepDiscover ProgressStep = "discover"
)

// ProgressEvent is the start (Done false) or the end (Done true) of a step.
type ProgressEvent struct {
	Step ProgressStep
	Done bool
	// Bytes is the size of the module being compiled (StepCompile).
	Bytes int
	// Duration is the step's wall time (Done only).
	Duration time.Duration
}

// TraceKind says what a TraceEvent is.
type TraceKind string

// The events of an instance's conversation.
const (
	// TraceSend is a line the host wrote to the module's stdin.
	TraceSend TraceKind = "send"
	// TraceReceive is a line the module wrote to its stdout.
	TraceReceive TraceKind = "receive"
	// TraceClose is the host closing the module's stdin.
	TraceClose TraceKind = "close"
	// TraceExit is the end of the instance; Exit says how it ended.
	TraceExit TraceKind = "exit"
	// TraceStderr is a line the module wrote to its stderr (at most
	// traceStderrMax bytes of it: a longer line comes in pieces), traced
	// as it is written.
	TraceStderr TraceKind = "stderr"
)

// traceStderrMax bounds the stderr a trace holds back waiting for "\n".
const traceStderrMax = 4096

// TraceEvent is one event of an instance's conversation over stdio.
type TraceEvent struct {
	// Instance numbers the instances of one Runtime from 1, so that the
	// lines of check's many probes can be told apart.
	Instance int64
	Kind     TraceKind
	Time     time.Time
	// Line is the line without its "\n" (TraceSend, TraceReceive). It is
	// only valid during the call: copy it to keep it.
	Line []byte
	// Exit is how the instance ended (TraceExit): "exit code 0", or the
	// error that ended it.
	Exit string
}

// sessionTrace reports one instance's events; nil when tracing is off.
type sessionTrace struct {
	instance int64
	fn       func(TraceEvent)
	err      *stderrTrace // set by stderr; its last line is traced at the exit
}

func (rt *Runtime) newSessionTrace() *sessionTrace {
	if rt.trace == nil {
		return nil
	}
	return &sessionTrace{instance: atomic.AddInt64(&rt.traceSeq, 1), fn: rt.trace}
}

func (t *sessionTrace) event(kind TraceKind, line []byte) {
	if t == nil {
		return
	}
	if n := len(line); n > 0 && line[n-1] == '\n' {
		line = line[:n-1]
	}
	t.fn(TraceEvent{Instance: t.instance, Kind: kind, Time: time.Now(), Line: line})
}

func (t *sessionTrace) exit(err error) {
	if t == nil {
		return
	}
	if e := t.err; e != nil && len(e.line) > 0 {
		// A last stderr line without "\n"; the instance has ended, so no
		// write races this.
		t.event(TraceStderr, e.line)
		e.line = nil
	}
	how := "exit code 0"
	if err != nil {
		how = err.Error()
	}
	t.fn(TraceEvent{Instance: t.instance, Kind: TraceExit, Time: time.Now(), Exit: how})
}

// progress tells Config.Progress that a step started, and returns the
// function that tells it the step ended.
func (rt *Runtime) progress(step ProgressStep, bytes int) func() {
	if rt.progressFn == nil {
		return func() {}
	}
	started := time.Now()
	rt.progressFn(ProgressEvent{Step: step, Bytes: bytes})
	return func() {
		rt.progressFn(ProgressEvent{Step: step, Done: true, Bytes: bytes, Duration: time.Since(started)})
	}
}

// stderr returns the module's stderr writer: w, and, when tracing, a copy
// of each line to the trace.
func (t *sessionTrace) stderr(w io.Writer) io.Writer {
	if t == nil {
		return w
	}
	t.err = &stderrTrace{w: w, t: t}
	return t.err
}

// stderrTrace passes stderr on and traces it a line at a time.
type stderrTrace struct {
	w    io.Writer
	t    *sessionTrace
	mu   sync.Mutex
	line []byte
}

func (s *stderrTrace) Write(p []byte) (int, error) {
	s.mu.Lock()
	rest := p
	for len(rest) > 0 {
		i := bytes.IndexByte(rest, '\n')
		if room := traceStderrMax - len(s.line); i < 0 || i > room {
			if len(rest) < room {
				s.line = append(s.line, rest...)
				break
			}
			s.line = append(s.line, rest[:room]...)
			rest = rest[room:]
			s.t.event(TraceStderr, s.line)
			s.line = s.line[:0]
			continue
		}
		s.line = append(s.line, rest[:i]...)
		rest = rest[i+1:]
		s.t.event(TraceStderr, s.line)
		s.line = s.line[:0]
	}
	s.mu.Unlock()
	return s.w.Write(p)
}
