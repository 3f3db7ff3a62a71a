package main

import (
	"fmt"
	"io"
	"sync"

	"github.com/subako/subako-runner/internal/text"
	"github.com/subako/subako-runner/runtime"
)

// traceLineMax bounds what --trace shows of one line; the rest is counted.
const traceLineMax = 4096

// tracer writes the conversation of every instance, one event a line:
//
//	12:00:00.000123 #1 → {"jsonrpc":"2.0","id":"…","method":"server/discover",…}
//	12:00:00.004001 #1 stderr: greet: server/discover
//	12:00:00.004567 #1 ← {"jsonrpc":"2.0","id":"…","result":{…}}
//	12:00:00.004601 #1 stdin closed
//	12:00:00.005002 #1 exited: exit code 0
type tracer struct {
	mu sync.Mutex
	w  io.Writer
}

func (t *tracer) event(ev runtime.TraceEvent) {
	var what string
	switch ev.Kind {
	case runtime.TraceSend:
		what = "→ " + boundLine(ev.Line)
	case runtime.TraceReceive:
		what = "← " + boundLine(ev.Line)
	case runtime.TraceStderr:
		what = "stderr: " + boundLine(ev.Line)
	case runtime.TraceClose:
		what = "stdin closed"
	case runtime.TraceExit:
		what = "exited: " + ev.Exit
	default:
		what = string(ev.Kind)
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	fmt.Fprintf(t.w, "%s #%d %s\n", ev.Time.Format("15:04:05.000000"), ev.Instance, what)
}

// boundLine is the line, cut at traceLineMax bytes (on a character
// boundary) with the full length said after it.
func boundLine(line []byte) string {
	return text.Bound(line, traceLineMax)
}
