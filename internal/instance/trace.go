package instance

import (
	"bytes"
	"io"
	"sync"
	"time"
)

// Kinds of trace events (the runtime's TraceKind values).
const (
	TraceSend    = "send"
	TraceReceive = "receive"
	TraceClose   = "close"
	TraceExit    = "exit"
	TraceStderr  = "stderr"
)

// traceStderrMax bounds the stderr a trace holds back waiting for "\n".
const traceStderrMax = 4096

// Event is one event of a session's conversation over stdio: the
// runtime's TraceEvent, which it makes of it.
type Event struct {
	Instance int64
	Kind     string
	Time     time.Time
	Line     []byte
	Exit     string
}

// trace reports one instance's events; nil when tracing is off.
type trace struct {
	instance int64
	fn       func(Event)
	err      *stderrTrace // set by stderr; its last line is traced at the exit
}

func (eng *Engine) newTrace() *trace {
	if eng.traceFn == nil {
		return nil
	}
	return &trace{instance: eng.traceSeq.Add(1), fn: eng.traceFn}
}

func (t *trace) event(kind string, line []byte) {
	if t == nil {
		return
	}
	if n := len(line); n > 0 && line[n-1] == '\n' {
		line = line[:n-1]
	}
	t.fn(Event{Instance: t.instance, Kind: kind, Time: time.Now(), Line: line})
}

func (t *trace) exit(err error) {
	if t == nil {
		return
	}
	if stderr := t.err; stderr != nil && len(stderr.line) > 0 {
		// A last stderr line without "\n"; the instance has ended, so no
		// write races this.
		t.event(TraceStderr, stderr.line)
		stderr.line = nil
	}
	how := "exit code 0"
	if err != nil {
		how = err.Error()
	}
	t.fn(Event{Instance: t.instance, Kind: TraceExit, Time: time.Now(), Exit: how})
}

// stderr returns the module's stderr writer: w, and, when tracing, a copy
// of each line to the trace.
func (t *trace) stderr(w io.Writer) io.Writer {
	if t == nil {
		return w
	}
	t.err = &stderrTrace{w: w, t: t}
	return t.err
}

// stderrTrace passes stderr on and traces it a line at a time.
type stderrTrace struct {
	w    io.Writer
	t    *trace
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
