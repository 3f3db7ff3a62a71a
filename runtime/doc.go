// Package runtime is the library face of subako-runner: it loads ABI 1
// packages (the upload-time checks, compilation and tool discovery) and runs
// tool calls, each in a fresh module instance, turning the result into the
// view the model reads.
//
// A Runtime is created once per process and shared; Load a package once
// (at upload), then Call it as often and from as many goroutines as needed:
//
//	rt, _ := runtime.New(ctx, runtime.Config{})
//	defer rt.Close(ctx)
//	pkg, _ := rt.Load(ctx, "path/to/package")
//	res, _ := pkg.Call(ctx, runtime.CallRequest{Tool: "greet", Arguments: []byte(`{"name":"Ada"}`)})
//	defer res.Release()
//
// Failures a package author must act on are verdicts on the package, which
// this package reports apart from the host's own failures: a refused
// upload is the error Load returns, a *RejectedError (errors.As finds it;
// it lists every problem, each with a stable code of the host contract),
// and a module that breaks the protocol during a call is not an error at
// all but a Result whose Outcome is OutcomeCrashed and whose Crash carries
// the reason code and the tail of stderr (limits.Limits.StderrTail). Any other Go error
// returned by this package means the host itself could not do the work,
// or the caller asked for something impossible (an unknown tool, bad
// limits).
//
// Two Go errors are the caller's own doing, never a verdict on a package:
// when the caller's context ends first, the error wraps ctx.Err() and its
// cause (errors.Is finds context.Canceled or context.DeadlineExceeded);
// once Runtime.Close has begun, every entry point (Load, Validate,
// Discover, Open, RunCommand, Package.Call, Package.Probe) returns an error
// that wraps ErrClosed, including the work Close interrupts: calls waiting
// for their turn and guests running, which Close stops.
//
// Every Package.Call ends in exactly one Observer event, whatever it
// returned (CallEvent.Outcome says which).
package runtime
