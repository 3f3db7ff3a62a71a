// Command bench measures subako-runner against its baselines, side by side
// in one run, and prints one table: measure, value, baseline, ratio, target,
// and whether the target is met.
//
//	go run ./bench                     # everything (make bench)
//	go run ./bench -only latency,fuel  # a subset
//	go run ./bench -only worker -worker-rows kill  # one measure's rows
//	go run ./bench -h                  # iteration counts and sizes
//
// The measures:
//
//   - latency: one tools/call of the C and Go greet packages through
//     runtime.Package.Call, against the floor (a bare wazero instantiate and
//     run of the same module.wasm with the same stdin: one tools/call line,
//     then EOF) and against one `wazero run` process per call, and the
//     host's share of a call before and after its instance (from a Trace);
//   - scale: calls per second with concurrent callers on GOMAXPROCS 1 and 2,
//     with runtime.GCPercent as the command line runs (the target) and Go's
//     default, in many short interleaved rounds; beside them the machine
//     control, the same calls in one and in two child processes at
//     GOMAXPROCS 1 (this program re-executed with -child-scale);
//   - reopen: opening the stored 14 MB Go-SDK package from its artifact with
//     a warm compilation cache, against the engine's floor (wazero's own
//     CompileModule of the same metered bytes from the same warm cache in a
//     fresh runtime) and against compiling it cold, on every core (the
//     default) and on one compilation worker: the row's ≤ 0.05× target
//     dates from when compilation used one core, and halving the cold
//     compile on two cores put the default's ratio at 0.07–0.09×; the
//     one-worker row is the CPU the cache saves;
//   - fuel: CPU-bound Go and C guests metered (internal/fuel) against
//     unmetered;
//   - memory: the memory-heavy Go guest (testdata/guests/memhog, 64 and 256
//     MiB): stdin close → exit, peak RSS of a call over the guest's memory,
//     RSS after 1,000 calls against before, and exit_timeouts with 4 such
//     calls at once, with admission and without;
//   - download: a 1 GiB HTTP download to a file through subako_http, run in
//     a child process (this program re-executed with -child-download) so its
//     peak RSS (VmHWM) is the call's alone;
//   - tables: the peak RSS of runs of a module declaring a large table, in
//     child processes (-child-tables), under two GOGC settings;
//   - many: the SDK upload by compilation workers; what an open package
//     costs against runtime's estimate; 500 C and 8 Go SDK packages stored
//     once and called in a Zipf order through a PackageSet with a byte
//     budget (peak RSS, failures, the resident call against one package
//     alone, the set's own cost, the first call of an evicted package
//     against wazero's warm-cache compile), and bare wazero's own cost of
//     calling the same 500 modules against one;
//   - otel: the OpenTelemetry observer on no-op providers and on the SDK,
//     against the plain Observer;
//   - worker: runtime.IsolationWorkers against the in-process runtime: a
//     sequential greet call of the C and Go packages (interleaved blocks,
//     medians; split at the CallEvent's timestamps, beside a bare round
//     trip to a child process; the same calls 1 ms apart), calls/s of
//     2×NumCPU callers on NumCPU workers, a worker's RSS after it loaded
//     the C package and served 100 calls less the package's estimate, and
//     the next call after a SIGKILLed worker (10 kills; median and max). The workers are this program
//     re-executed (main calls runtime.ServeWorker first); the rows that
//     need a worker's pid find it as this program's only child process.
//     -worker-rows picks among latency, throughput, rss and kill.
//
// Measurements of a pair are interleaved, so load that comes and goes on the
// machine hits both sides alike; in-process sides that allocate differently
// (the runner and the bare floor) run in blocks, each after its own
// warm-up, so neither pays for the other's garbage. Every loop is bounded
// in count and in time, and the only network traffic is on loopback. Run it from the module root:
// it reads testdata/ and builds the Go guests with internal/devtools/testguest.
package main
