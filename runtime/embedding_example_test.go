package runtime_test

// The examples of docs/embedding.md: the doc quotes the functions below
// verbatim (cmd/subako-runner/docs_test.go checks it), and the Example
// functions run them, so the doc's code compiles and its output is checked.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"

	"go.opentelemetry.io/otel/metric"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	"go.uber.org/zap"

	"github.com/subako/subako-runner/hostmod/subakohttp"
	"github.com/subako/subako-runner/internal/devtools/testguest"
	"github.com/subako/subako-runner/limits"
	"github.com/subako/subako-runner/otelobserver"
	"github.com/subako/subako-runner/runtime"
)

// greetPackage makes a package directory around the example guest and
// returns it with a function that removes it.
func greetPackage() (string, func()) {
	module, err := testguest.BuildGo("../testdata/guests/greet")
	if err != nil {
		log.Fatal(err)
	}
	b, err := os.ReadFile(module)
	if err != nil {
		log.Fatal(err)
	}
	dir, err := os.MkdirTemp("", "subako-example-")
	if err != nil {
		log.Fatal(err)
	}
	pkg := filepath.Join(dir, "greet")
	files := map[string]string{
		"subako-package.json": `{"abi":1,"name":"greet","version":"0.1.0"}`,
		"module.wasm":         string(b),
		"assets/greeting.txt": "Hello",
	}
	for name, content := range files {
		p := filepath.Join(pkg, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			log.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			log.Fatal(err)
		}
	}
	return pkg, func() { os.RemoveAll(dir) }
}

func greetAda(ctx context.Context, dir string) error {
	rt, err := runtime.New(ctx, runtime.Config{})
	if err != nil {
		return err
	}
	defer rt.Close(ctx)
	pkg, err := rt.Load(ctx, dir) // the upload: checks, fuel metering, compilation, discovery
	if err != nil {
		return err
	}
	res, err := pkg.Call(ctx, runtime.CallRequest{Tool: "greet", Arguments: []byte(`{"name":"Ada"}`)})
	if err != nil {
		return err
	}
	defer res.Release()
	fmt.Println(res.Outcome, res.View[0].Text)
	return nil
}

// The library in ten lines.
func Example_greetAda() {
	dir, cleanup := greetPackage()
	defer cleanup()
	if err := greetAda(context.Background(), dir); err != nil {
		log.Fatal(err)
	}
	// Output:
	// ok {"message":"Hello, Ada!"}
}

// upload is what the backend does once per package version: everything
// that can be decided before a call is decided here, and kept in store.
func upload(ctx context.Context, rt *runtime.Runtime, dir, store string) error {
	pkg, err := rt.Load(ctx, dir)
	var rej *runtime.RejectedError
	if errors.As(err, &rej) {
		for _, r := range rej.Rejections {
			fmt.Printf("rejected: %s: %s\n", r.Code, r.Message)
		}
		if rej.Crash != nil { // discovery crashed: discovery_failed
			fmt.Printf("discovery crashed (%s); its stderr:\n%s", rej.Crash.Reason, rej.Crash.Stderr)
		}
		return err
	}
	if err != nil {
		return err // the host could not work: unreadable path, cancelled context
	}
	defer pkg.Close(ctx)
	for _, t := range pkg.Tools() {
		fmt.Println("tool:", t.Name)
	}
	return pkg.Artifact().Save(store) // artifact.json and metered.wasm
}

// open is what any process does later, after a restart or on another
// machine sharing the store: it runs no check, no discovery, and with the
// compilation cache no compilation either.
func open(ctx context.Context, rt *runtime.Runtime, dir, store string) (*runtime.Package, error) {
	a, err := runtime.ReadArtifact(store)
	if err != nil {
		return nil, err
	}
	pkg, err := rt.Open(ctx, a, dir) // refused if module.wasm changed since the upload
	if err == nil && pkg.Opened.Metering == runtime.MeteringRederived {
		// An older runner's metering, made again from module.wasm: save
		// this runner's so the next process need not.
		_ = pkg.Artifact().Save(store)
	}
	return pkg, err
}

// Upload once, call forever: the artifact and the compilation cache carry
// the upload's work into other processes.
func Example_uploadOnce() {
	ctx := context.Background()
	dir, cleanup := greetPackage()
	defer cleanup()
	store, cache := filepath.Join(filepath.Dir(dir), "store"), filepath.Join(filepath.Dir(dir), "cache")

	rt, err := runtime.New(ctx, runtime.Config{CompilationCacheDir: cache})
	if err != nil {
		log.Fatal(err)
	}
	if err := upload(ctx, rt, dir, store); err != nil {
		log.Fatal(err)
	}
	rt.Close(ctx)

	// Later, as if in another process.
	rt2, err := runtime.New(ctx, runtime.Config{CompilationCacheDir: cache})
	if err != nil {
		log.Fatal(err)
	}
	defer rt2.Close(ctx)
	pkg, err := open(ctx, rt2, dir, store)
	if err != nil {
		log.Fatal(err)
	}
	res, err := pkg.Call(ctx, runtime.CallRequest{Tool: "greet", Arguments: []byte(`{"name":"Grace"}`)})
	if err != nil {
		log.Fatal(err)
	}
	defer res.Release()
	fmt.Println(res.View[0].Text)
	// Output:
	// tool: greet
	// tool: media
	// tool: media_edge
	// tool: echo_args
	// tool: read_file
	// tool: write_file
	// {"message":"Hello, Grace!"}
}

// A package the upload checks refuse: every problem, each with its code.
func Example_rejected() {
	ctx := context.Background()
	rt, err := runtime.New(ctx, runtime.Config{})
	if err != nil {
		log.Fatal(err)
	}
	defer rt.Close(ctx)
	err = upload(ctx, rt, "../testdata/checks/unknown_import.wasm", os.DevNull)
	var rej *runtime.RejectedError
	fmt.Println(errors.As(err, &rej), rej.Has("unknown_import"))
	// Output:
	// rejected: unknown_import: import "env"."foo": subako provides only wasi_snapshot_preview1 and subako_http imports
	// rejected: unknown_import: import "wasi_unstable"."fd_write": subako provides only wasi_snapshot_preview1 and subako_http imports (wasi_unstable is the WASI snapshot before preview 1; rebuild for wasi_snapshot_preview1)
	// rejected: unknown_import: import "wasi_snapshot_preview1"."sock_open": wasi_snapshot_preview1 has no function named "sock_open"
	// true true
}

// callForAgent is one call with everything that belongs to the agent and
// the moment: its volume, its network policy with a credential the
// backend looks up per call, and tighter limits than the runtime's.
func callForAgent(ctx context.Context, pkg *runtime.Package, data string, token func(context.Context) (string, bool)) error {
	policy, err := subakohttp.NewPolicy(subakohttp.PolicyConfig{
		Allow: []string{"api.example.com", "*.cdn.example.com"},
		Credentials: []subakohttp.Credential{
			{Pattern: "api.example.com", Header: "Authorization", Value: token},
		},
	})
	if err != nil {
		return err
	}
	lim := limits.Default()
	lim.CallTimeout = 5 * time.Second
	lim.Memory = 64 * limits.MiB

	res, err := pkg.Call(ctx, runtime.CallRequest{
		Tool:      "write_file",
		Arguments: []byte(`{"path":"/volume/data/notes.txt","text":"remember Ada"}`),
		Data:      data, // mounted read-write at /volume/data; /volume/tmp is fresh
		Network:   policy,
		Limits:    &lim,
	})
	var refused *runtime.CallError
	if errors.As(err, &refused) {
		return fmt.Errorf("refused before the module ran: %s", refused.Code) // unknown_tool, bad_arguments
	}
	if err != nil {
		return err
	}
	defer res.Release() // removes the call's /volume/tmp and the files the view links to

	switch res.Outcome {
	case runtime.OutcomeOK, runtime.OutcomeToolError: // the model reads res.View either way
		for _, v := range res.View {
			fmt.Println(v.Type+":", v.Text)
		}
	case runtime.OutcomeCrashed: // the model is told the function crashed
		fmt.Printf("crashed: %s: %s\n", res.Crash.Reason, res.Crash.Message)
	}
	return nil
}

// Per-call volumes, network policy and limits.
func Example_callForAgent() {
	ctx := context.Background()
	dir, cleanup := greetPackage()
	defer cleanup()
	rt, err := runtime.New(ctx, runtime.Config{})
	if err != nil {
		log.Fatal(err)
	}
	defer rt.Close(ctx)
	pkg, err := rt.Load(ctx, dir)
	if err != nil {
		log.Fatal(err)
	}
	data := filepath.Join(filepath.Dir(dir), "agent-data")
	if err := os.Mkdir(data, 0o755); err != nil {
		log.Fatal(err)
	}
	token := func(context.Context) (string, bool) { return "Bearer from-the-vault", true }
	if err := callForAgent(ctx, pkg, data, token); err != nil {
		log.Fatal(err)
	}
	b, _ := os.ReadFile(filepath.Join(data, "notes.txt"))
	fmt.Println(string(b))
	// Output:
	// text: wrote 12 bytes to /volume/data/notes.txt
	// remember Ada
}

// metrics is an Observer: one event per upload and per call, without
// arguments, results or secrets, to feed Prometheus or OpenTelemetry.
type metrics struct {
	mu    sync.Mutex
	calls map[string]int // by outcome
}

func (m *metrics) Upload(ctx context.Context, e runtime.UploadEvent) {
	fmt.Printf("upload %s: %s, %d tools\n", e.Package, e.Outcome, e.Tools)
}

func (m *metrics) Call(ctx context.Context, e runtime.CallEvent) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.calls[string(e.Outcome)]++
	_ = e.Stats.FuelUsed // also Duration, MemoryBytes, BytesWritten, HTTPRequests
}

func newObservedRuntime(ctx context.Context, logger *zap.Logger, m *metrics) (*runtime.Runtime, error) {
	return runtime.New(ctx, runtime.Config{
		Logger:   logger, // one line per upload and per call at info; module stderr at debug
		Observer: m,
	})
}

// Logging and metrics; calls run concurrently on one package.
func Example_observer() {
	ctx := context.Background()
	dir, cleanup := greetPackage()
	defer cleanup()
	m := &metrics{calls: map[string]int{}}
	rt, err := newObservedRuntime(ctx, zap.NewNop(), m)
	if err != nil {
		log.Fatal(err)
	}
	defer rt.Close(ctx)
	pkg, err := rt.Load(ctx, dir)
	if err != nil {
		log.Fatal(err)
	}
	var wg sync.WaitGroup
	for _, name := range []string{"Ada", "Grace", ""} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, err := pkg.Call(ctx, runtime.CallRequest{Tool: "greet", Arguments: []byte(`{"name":"` + name + `"}`)})
			if err != nil {
				log.Fatal(err)
			}
			res.Release()
		}()
	}
	wg.Wait()
	fmt.Println(m.calls)
	// Output:
	// upload greet: ok, 6 tools
	// map[ok:2 tool_error:1]
}

func newTracedRuntime(ctx context.Context, tp trace.TracerProvider, mp metric.MeterProvider) (*runtime.Runtime, error) {
	obs, err := otelobserver.New(otelobserver.Config{TracerProvider: tp, MeterProvider: mp})
	if err != nil {
		return nil, err
	}
	return runtime.New(ctx, runtime.Config{Observer: obs})
}

// Traces and metrics through OpenTelemetry: the SDK's in-memory exporter
// stands in for the backend's Jaeger or Tempo.
func Example_openTelemetry() {
	ctx := context.Background()
	dir, cleanup := greetPackage()
	defer cleanup()
	spans := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(spans))
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader()))
	rt, err := newTracedRuntime(ctx, tp, mp)
	if err != nil {
		log.Fatal(err)
	}
	defer rt.Close(ctx)
	pkg, err := rt.Load(ctx, dir)
	if err != nil {
		log.Fatal(err)
	}
	defer pkg.Close(ctx)
	ctx, handler := tp.Tracer("backend").Start(ctx, "agent turn") // the embedder's own span
	res, err := pkg.Call(ctx, runtime.CallRequest{Tool: "greet", Arguments: []byte(`{"name":"Ada"}`)})
	handler.End()
	if err != nil {
		log.Fatal(err)
	}
	res.Release()
	var names []string
	for _, s := range spans.GetSpans() {
		if s.SpanContext.TraceID() == handler.SpanContext().TraceID() {
			names = append(names, s.Name)
		}
	}
	slices.Sort(names)
	fmt.Println(names)
	// Output:
	// [agent turn subako.call subako.call.instantiate subako.call.run]
}

// newScrapedRuntime serves the runtime's metrics at /metrics on mux for
// Prometheus to scrape, through OpenTelemetry's Prometheus exporter.
func newScrapedRuntime(ctx context.Context, mux *http.ServeMux) (*runtime.Runtime, error) {
	reg := prometheus.NewRegistry()
	exporter, err := otelprom.New(otelprom.WithRegisterer(reg)) // a metric reader
	if err != nil {
		return nil, err
	}
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(exporter))
	obs, err := otelobserver.New(otelobserver.Config{MeterProvider: mp})
	if err != nil {
		return nil, err
	}
	mux.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	return runtime.New(ctx, runtime.Config{Observer: obs})
}

func Example_prometheus() {
	ctx := context.Background()
	dir, cleanup := greetPackage()
	defer cleanup()
	mux := http.NewServeMux()
	rt, err := newScrapedRuntime(ctx, mux)
	if err != nil {
		log.Fatal(err)
	}
	defer rt.Close(ctx)
	srv := httptest.NewServer(mux) // the backend's own server, on loopback here
	defer srv.Close()
	pkg, err := rt.Load(ctx, dir)
	if err != nil {
		log.Fatal(err)
	}
	defer pkg.Close(ctx)
	res, err := pkg.Call(ctx, runtime.CallRequest{Tool: "greet", Arguments: []byte(`{"name":"Ada"}`)})
	if err != nil {
		log.Fatal(err)
	}
	res.Release()
	resp, err := http.Get(srv.URL + "/metrics")
	if err != nil {
		log.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, "subako_calls_total{") {
			fmt.Println(strings.Contains(line, `subako_call_outcome="ok"`), strings.HasSuffix(line, " 1"))
		}
	}
	// Output:
	// true true
}

// callBefore is one call the backend stops waiting for at a deadline of
// its own (the agent's turn ends, the user went away). That deadline is
// the caller's, not the call's time limit: the call ends with ctx's
// error, never as a crash of the package.
func callBefore(ctx context.Context, pkg *runtime.Package, deadline time.Time) (*runtime.Result, error) {
	ctx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	res, err := pkg.Call(ctx, runtime.CallRequest{Tool: "greet", Arguments: []byte(`{"name":"Ada"}`)})
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		fmt.Println("gave up: nothing for the model, nothing against the package")
	}
	return res, err
}

// The caller's deadline or cancellation is an error, not a crash.
func Example_callBefore() {
	ctx := context.Background()
	dir, cleanup := greetPackage()
	defer cleanup()
	rt, err := runtime.New(ctx, runtime.Config{})
	if err != nil {
		log.Fatal(err)
	}
	defer rt.Close(ctx)
	pkg, err := rt.Load(ctx, dir)
	if err != nil {
		log.Fatal(err)
	}
	res, err := callBefore(ctx, pkg, time.Now()) // a deadline already past
	fmt.Println(res == nil, errors.Is(err, context.DeadlineExceeded))
	// Output:
	// gave up: nothing for the model, nothing against the package
	// true true
}

// uploadInto is the upload into a DirLoader store: the package directory
// copied to Packages/<key>, loaded (every check, discovery), and its
// artifact saved to Artifacts/<key>, where a PackageSet finds both.
func uploadInto(ctx context.Context, rt *runtime.Runtime, store runtime.DirLoader, key, src string) error {
	dir, err := store.PackageDir(key) // refuses a key that is not one plain path element
	if err != nil {
		return err
	}
	if err := os.CopyFS(dir, os.DirFS(src)); err != nil { // refuses to overwrite: a new version, a new key
		return err
	}
	pkg, err := rt.Load(ctx, dir)
	if err != nil {
		os.RemoveAll(dir) // rejected: nothing stays in the store
		return err
	}
	defer pkg.Close(ctx)
	return store.Save(key, pkg)
}

// serve calls one tool of the package the embedder stored under key,
// through a set that keeps the open packages within a budget.
func serve(ctx context.Context, rt *runtime.Runtime, store runtime.DirLoader, key string) error {
	set, err := runtime.NewPackageSet(rt, runtime.PackageSetConfig{
		Loader:   store,     // artifact in store.Artifacts/<key>, package in store.Packages/<key>
		MaxBytes: 256 << 20, // estimated resident bytes of the open packages
	})
	if err != nil {
		return err
	}
	defer set.Close(ctx) // waits for the calls in flight, then closes every package
	res, err := set.Call(ctx, key, runtime.CallRequest{Tool: "greet", Arguments: []byte(`{"name":"Ada"}`)})
	if err != nil {
		return err
	}
	defer res.Release()
	st := set.Stats()
	fmt.Println(res.Outcome, res.View[0].Text, st.Opens, st.Resident)
	return nil
}

func Example_packageSet() {
	ctx := context.Background()
	root, err := os.MkdirTemp("", "subako-set-example-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(root)
	rt, err := runtime.New(ctx, runtime.Config{CompilationCacheDir: filepath.Join(root, "cache")})
	if err != nil {
		log.Fatal(err)
	}
	defer rt.Close(ctx)
	// The upload, once: the package under its key, its artifact beside.
	store := runtime.DirLoader{Artifacts: filepath.Join(root, "artifacts"), Packages: filepath.Join(root, "packages")}
	if err := uploadInto(ctx, rt, store, "ada-greets", "../testdata/packages/cgreet"); err != nil {
		log.Fatal(err)
	}
	fmt.Println(uploadInto(ctx, rt, store, "../elsewhere", "../testdata/packages/cgreet"))
	if err := serve(ctx, rt, store, "ada-greets"); err != nil {
		log.Fatal(err)
	}
	// Output:
	// package key "../elsewhere": want one plain path element
	// ok {"message":"Hello, Ada!"} 1 1
}

// newIsolatedRuntime runs every module in sandboxed worker processes: this
// same executable, whose main (and TestMain) calls runtime.ServeWorker
// first thing.
func newIsolatedRuntime(ctx context.Context, logger *zap.Logger, store, data string) (*runtime.Runtime, error) {
	rt, err := runtime.New(ctx, runtime.Config{
		Logger:    logger,
		Isolation: runtime.IsolationWorkers,
		Workers: runtime.WorkerConfig{
			Count:     2,
			ReadOnly:  []string{store}, // the packages; Landlock refuses the workers the rest
			ReadWrite: []string{data},  // the roots of the agents' /volume/data
		},
	})
	if err != nil {
		return nil, err
	}
	if s := rt.Sandbox(); !s.Complete() {
		logger.Warn("guests run without some layers of the sandbox", zap.Strings("missing", s.Missing))
	}
	return rt, nil
}

// callRetrying runs a call once more when the worker process running it
// died (killed for its memory, crashed): the host's failure, never a
// verdict on the package. Only for tools whose effects may happen twice.
func callRetrying(ctx context.Context, pkg *runtime.Package, req runtime.CallRequest) (*runtime.Result, error) {
	res, err := pkg.Call(ctx, req)
	if errors.Is(err, runtime.ErrWorkerExited) {
		return pkg.Call(ctx, req) // a fresh worker has taken the dead one's place
	}
	return res, err
}

// Worker processes: the same calls, with guests in sandboxed processes.
func Example_workers() {
	ctx := context.Background()
	dir, cleanup := greetPackage()
	defer cleanup()
	data, err := os.MkdirTemp("", "subako-example-data-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(data)
	rt, err := newIsolatedRuntime(ctx, zap.NewNop(), filepath.Dir(dir), data)
	if err != nil {
		log.Fatal(err)
	}
	defer rt.Close(ctx)
	pkg, err := rt.Load(ctx, dir)
	if err != nil {
		log.Fatal(err)
	}
	res, err := callRetrying(ctx, pkg, runtime.CallRequest{Tool: "greet", Arguments: []byte(`{"name":"Ada"}`)})
	if err != nil {
		log.Fatal(err)
	}
	defer res.Release()
	fmt.Println(rt.Sandbox().Workers, res.Outcome, res.View[0].Text)
	// Output:
	// true ok {"message":"Hello, Ada!"}
}
