package runtime

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/subako/subako-runner/internal/compile"
	"github.com/subako/subako-runner/internal/fuel"
	"github.com/subako/subako-runner/internal/instance"
	"github.com/subako/subako-runner/internal/modcheck"
	"github.com/subako/subako-runner/protocol"
)

// Rejection codes of docs/abi.md §1, §2 and §4: why an upload was refused.
// The module checks and the protocol layer own the codes they find; these
// are the same values under one roof for callers of this package.
const (
	CodeBadManifest       = "bad_manifest"
	CodeMissingModule     = "missing_module"
	CodeNotWasm           = modcheck.CodeNotWasm
	CodeComponent         = modcheck.CodeComponent
	CodeModuleTooLarge    = modcheck.CodeModuleTooLarge
	CodeInvalidModule     = modcheck.CodeInvalidModule
	CodeThreads           = modcheck.CodeThreads
	CodeExceptions        = modcheck.CodeExceptions
	CodeMissingStart      = modcheck.CodeMissingStart
	CodeBadStartSignature = modcheck.CodeBadStartSignature
	CodeReactor           = modcheck.CodeReactor
	CodeMissingMemory     = modcheck.CodeMissingMemory
	CodeUnknownImport     = modcheck.CodeUnknownImport
	CodeImportSignature   = modcheck.CodeImportSignature
	CodeNonFunctionImport = modcheck.CodeNonFunctionImport
	CodeMemoryTooLarge    = modcheck.CodeMemoryTooLarge
	CodeTableTooLarge     = modcheck.CodeTableTooLarge
	CodeModuleTooComplex  = modcheck.CodeModuleTooComplex
	// CodeCompileTimeout: compiling the module to machine code took longer
	// than limits.CompileTimeout.
	CodeCompileTimeout      = compile.CodeCompileTimeout
	CodeDiscoverUnsupported = protocol.CodeDiscoverUnsupported
	CodeInvalidTool         = protocol.CodeInvalidTool
	CodeDuplicateTool       = protocol.CodeDuplicateTool
	CodeNoTools             = protocol.CodeNoTools
	CodeTooManyPages        = protocol.CodeTooManyPages
	CodeDiscoveryFailed     = "discovery_failed"
)

// Crash reasons of docs/abi.md §6: why a run of the module failed.
const (
	CrashJSONRPCError         = protocol.CodeJSONRPCError
	CrashResultNotComplete    = protocol.CodeResultNotComplete
	CrashNotJSONRPC           = protocol.CodeNotJSONRPC
	CrashUnexpectedID         = protocol.CodeUnexpectedID
	CrashServerRequest        = protocol.CodeServerRequest
	CrashExitedBeforeResponse = instance.ReasonExitedBeforeResponse
	CrashExitCode             = instance.ReasonExitCode
	CrashExitTimeout          = instance.ReasonExitTimeout
	CrashTrap                 = instance.ReasonTrap
	CrashOutOfMemory          = instance.ReasonOutOfMemory
	CrashOutOfFuel            = instance.ReasonOutOfFuel
	CrashTimeout              = instance.ReasonTimeout
	CrashInvalidResult        = protocol.CodeInvalidResult
	CrashOutputTooLarge       = protocol.CodeOutputTooLarge
)

// Rejection is one reason an upload was refused.
type Rejection struct {
	// Code is a stable code of the host contract, e.g. "unknown_import".
	Code string `json:"code"`
	// Message is a sentence for the package author naming what to change.
	Message string `json:"message"`
}

// RejectedError is returned when a package fails the upload checks or
// discovery. It lists every problem found, not only the first.
type RejectedError struct {
	Rejections []Rejection
	// Crash is set when discovery crashed (Code discovery_failed).
	Crash *Crash
}

func (e *RejectedError) Error() string {
	parts := make([]string, len(e.Rejections))
	for i, r := range e.Rejections {
		parts[i] = r.Code + ": " + r.Message
	}
	return "package rejected: " + strings.Join(parts, "; ")
}

// Has reports whether the rejection lists code.
func (e *RejectedError) Has(code string) bool {
	for _, r := range e.Rejections {
		if r.Code == code {
			return true
		}
	}
	return false
}

// Crash describes how a module run broke the rules of docs/abi.md §6.
type Crash struct {
	// Reason is a stable crash code, e.g. "exit_timeout".
	Reason string `json:"reason"`
	// Message explains the crash in a sentence.
	Message string `json:"message"`
	// Stderr is the last bytes of the module's stderr (at most
	// limits.StderrTail), cut on a UTF-8 boundary.
	Stderr string `json:"stderr"`
}

func (c *Crash) Error() string { return fmt.Sprintf("module crashed (%s): %s", c.Reason, c.Message) }

// rejection is err, with a module the compiler refused turned into the
// embedder's *RejectedError.
func rejection(err error) error {
	var rej *compile.Rejected
	if errors.As(err, &rej) {
		return &RejectedError{Rejections: []Rejection{{Code: rej.Code, Message: rej.Message}}}
	}
	return err
}

// rejectedOf is the rejection of the problems the module checks found.
func rejectedOf(ps []modcheck.Problem) *RejectedError {
	rej := &RejectedError{Rejections: make([]Rejection, len(ps))}
	for i, p := range ps {
		rej.Rejections[i] = Rejection{Code: p.Code, Message: p.Message}
	}
	return rej
}

// crashOf is the embedder's Crash of an instance's crash; nil for none.
func crashOf(c *instance.Crash) *Crash {
	if c == nil {
		return nil
	}
	return &Crash{Reason: c.Reason, Message: c.Message, Stderr: c.Stderr}
}

// LinkError is returned by RunCommand for a module that cannot be linked
// against the host: it imports a function the host does not provide, with
// another signature, or something other than a function. Problems carry
// the codes validate reports for them (unknown_import, import_signature,
// non_function_import).
type LinkError struct {
	// Path is the module's path as given.
	Path     string
	Problems []Rejection
}

func (e *LinkError) Error() string {
	parts := make([]string, len(e.Problems))
	for i, p := range e.Problems {
		parts[i] = p.Code + ": " + p.Message
	}
	return e.Path + " does not link: " + strings.Join(parts, "; ")
}

// CallError is returned by Package.Call when the host refuses the call
// before running the module.
type CallError struct {
	// Code is "unknown_tool" or "bad_arguments".
	Code    string
	Message string
}

func (e *CallError) Error() string { return e.Code + ": " + e.Message }

// Call refusal codes.
const (
	CodeUnknownTool  = "unknown_tool"
	CodeBadArguments = "bad_arguments"
)

// Codes of the CallEvent of a PackageSet.Call that never reached its
// package (Outcome OutcomeError): the package could not be opened (the
// loader's or Open's error), or the set closed before or while the call
// waited for it.
const (
	CodeOpenFailed       = "open_failed"
	CodePackageSetClosed = "package_set_closed"
)

// ErrClosed is the error of every entry point (Load, Validate, Discover,
// Open, RunCommand, Package.Call, Package.Probe) once Runtime.Close has
// begun: errors.Is(err, ErrClosed) finds it. A runtime shutting down is the
// host's state, never a verdict on a package: work that Close interrupts
// (a call waiting for its turn, an instance running) ends with this error
// too, not with a rejection or a crashed Result.
var ErrClosed = errors.New("subako runtime closed")

// closedError is the error of what, refused or ended because the runtime
// closed.
func closedError(what string) error { return fmt.Errorf("%s: %w", what, ErrClosed) }

// interruptedError is the error of what, whose instance the caller's
// context or the runtime's close ended (session.interrupted's err).
func interruptedError(what string, err error) error {
	if errors.Is(err, ErrClosed) {
		return closedError(what)
	}
	return fmt.Errorf("%s: %w", what, err)
}

// canceled is the error of work that the caller's context ended before it
// was done. It wraps ctx.Err(), so errors.Is finds context.Canceled or
// context.DeadlineExceeded, and the context's cause when the caller gave
// one of its own (a signal, a context.WithCancelCause reason). It is nil
// while ctx is live.
//
// A caller's cancellation is never a verdict on the package: Load, Open,
// Discover, Call and Probe return this error, not a *RejectedError or a
// crashed Result.
func canceled(ctx context.Context, what string) error { return instance.Canceled(ctx, what) }

// callerEnded is why the caller's context has ended (fuel.Ended): the
// fuel meter stops a guest at the caller's deadline without waiting for
// that context's timer, so the event of a call it stopped must not wait
// for it either. It is nil while ctx is live.
func callerEnded(ctx context.Context) error { return fuel.Ended(ctx) }
