package instance

import (
	"bytes"
	"sync"
	"time"
	"unicode/utf8"

	"go.uber.org/zap"
)

// stderrTail keeps the last bytes of a module's stderr for crash reports
// and forwards complete lines to the host's logger, rate-limited so a chatty
// module cannot flood the host's logs.
type stderrTail struct {
	limit int
	log   *zap.Logger

	mu  sync.Mutex
	buf []byte // at most 2*limit; trimmed to limit when full

	// logMu guards the logging, apart from buf: a logger that blocks (a
	// full pipe, a slow sink) holds up the guest's stderr writes, never a
	// crash report's String.
	logMu   sync.Mutex
	line    []byte // the current incomplete line, for logging
	window  time.Time
	logged  int
	dropped int
}

// stderrLinesPerSecond is how many stderr lines one instance may log per
// second; the rest are counted and summarised.
const (
	stderrLinesPerSecond = 50
	stderrLineMax        = 1024
)

func newStderrTail(limit int, log *zap.Logger) *stderrTail {
	return &stderrTail{limit: limit, log: log}
}

// Write implements io.Writer; it never fails, so stderr never ends a module.
func (t *stderrTail) Write(p []byte) (int, error) {
	t.mu.Lock()
	if len(p) >= t.limit {
		t.buf = append(t.buf[:0], p[len(p)-t.limit:]...)
	} else {
		t.buf = append(t.buf, p...)
		if len(t.buf) > 2*t.limit {
			t.buf = append(t.buf[:0], t.buf[len(t.buf)-t.limit:]...)
		}
	}
	t.mu.Unlock()
	if t.log != nil && t.log.Core().Enabled(zap.DebugLevel) {
		t.logMu.Lock()
		defer t.logMu.Unlock()
		t.logLines(p)
	}
	return len(p), nil
}

func (t *stderrTail) logLines(p []byte) {
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		if i < 0 {
			room := stderrLineMax - len(t.line)
			t.line = append(t.line, p[:min(len(p), max(room, 0))]...)
			return
		}
		t.line = append(t.line, p[:min(i, max(stderrLineMax-len(t.line), 0))]...)
		t.emit(t.line)
		t.line = t.line[:0]
		p = p[i+1:]
	}
}

func (t *stderrTail) emit(line []byte) {
	now := time.Now()
	if now.Sub(t.window) >= time.Second {
		if t.dropped > 0 {
			t.log.Debug("module stderr lines suppressed", zap.Int("lines", t.dropped))
		}
		t.window, t.logged, t.dropped = now, 0, 0
	}
	if t.logged >= stderrLinesPerSecond {
		t.dropped++
		return
	}
	t.logged++
	t.log.Debug("module stderr", zap.String("line", string(line)))
}

// String returns the tail, at most limit bytes, starting on a UTF-8
// boundary so the report never begins with half a character.
func (t *stderrTail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	b := t.buf
	if len(b) > t.limit {
		b = b[len(b)-t.limit:]
	}
	for i := 0; i < len(b) && i < utf8.UTFMax; i++ {
		if utf8.RuneStart(b[i]) {
			return string(b[i:])
		}
	}
	return string(b[min(len(b), utf8.UTFMax):])
}
