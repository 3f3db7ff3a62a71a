// Package otelobserver reports the runtime's uploads and calls to
// OpenTelemetry: a span per upload and per call, parented on the span in
// the caller's context, with child spans for a call's wait for its turn,
// its instantiation, the guest's run and each request the guest made
// through subako_http; and metrics of calls, their durations, queue waits,
// fuel and memory, uploads and instances running.
//
//	obs, err := otelobserver.New(otelobserver.Config{TracerProvider: tp, MeterProvider: mp})
//	rt, err := runtime.New(ctx, runtime.Config{Observer: obs})
//
// The package uses the OpenTelemetry API only; the embedder brings the SDK
// (or nothing: with no provider set, the global no-op providers cost next
// to nothing, as the bench row "otel observer, no-op provider" shows).
//
// Spans are made when the operation has ended, from the event the runtime
// gives its Observer, with the timestamps the runtime measured: a call's
// span covers its whole Package.Call. Nothing a guest sees depends on
// tracing: trace context is never propagated into the guest's HTTP
// requests (a module must not learn the platform's trace ids), and
// attributes never carry arguments, results, URLs' paths or queries,
// headers, credentials or bodies.
//
// Span status is Error only when the host failed or the module crashed: a
// tool's isError answer, a refused call (unknown tool, bad arguments) and
// a call the caller cancelled are not the host's errors.
package otelobserver
