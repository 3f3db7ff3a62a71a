package runtime

import (
	"time"

	"github.com/subako/subako-runner/internal/instance"
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
	TraceSend TraceKind = instance.TraceSend
	// TraceReceive is a line the module wrote to its stdout.
	TraceReceive TraceKind = instance.TraceReceive
	// TraceClose is the host closing the module's stdin.
	TraceClose TraceKind = instance.TraceClose
	// TraceExit is the end of the instance; Exit says how it ended.
	TraceExit TraceKind = instance.TraceExit
	// TraceStderr is a line the module wrote to its stderr (at most
	// 4 KiB of it: a longer line comes in pieces), traced
	// as it is written.
	TraceStderr TraceKind = instance.TraceStderr
)

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
