package main

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

func TestOtelExporterChoice(t *testing.T) {
	tests := []struct {
		flag string
		env  map[string]string
		want string
		err  bool
	}{
		{"", nil, "", false},
		{"console", nil, "console", false},
		{"otlp", map[string]string{"OTEL_SDK_DISABLED": "true"}, "otlp", false}, // the flag wins
		{"none", map[string]string{"OTEL_TRACES_EXPORTER": "otlp"}, "", false},
		{"jaeger", nil, "", true},
		{"", map[string]string{"OTEL_TRACES_EXPORTER": "console"}, "console", false},
		{"", map[string]string{"OTEL_TRACES_EXPORTER": "otlp"}, "otlp", false},
		{"", map[string]string{"OTEL_TRACES_EXPORTER": "none", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318"}, "", false},
		{"", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318"}, "otlp", false},
		{"", map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://127.0.0.1:4318/v1/traces"}, "otlp", false},
		{"", map[string]string{"OTEL_SDK_DISABLED": "TRUE", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318"}, "", false},
		{"", map[string]string{"OTEL_TRACES_EXPORTER": "zipkin"}, "", true},
	}
	for _, tt := range tests {
		got, err := otelExporter(tt.flag, func(k string) string { return tt.env[k] })
		if (err != nil) != tt.err || got != tt.want {
			t.Errorf("--otel=%q %v: %q, %v; want %q (error %v)", tt.flag, tt.env, got, err, tt.want, tt.err)
		}
	}
}

// cliEnv runs the command in-process with the given environment.
func cliEnv(t *testing.T, vars map[string]string, args ...string) (int, string, string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	e := &env{stdin: strings.NewReader(""), stdout: &stdout, stderr: &stderr, getenv: func(k string) string { return vars[k] }}
	code := mainWith(context.Background(), e, args)
	return code, stdout.String(), stderr.String()
}

// --otel prints the call's spans and the metrics on stderr; stdout keeps
// the model view.
func TestCallOtelConsole(t *testing.T) {
	pkg := pkgDir(t, "greet", nil)
	code, stdout, stderr := cliEnv(t, nil, "call", "--otel", pkg, "greet", `{"name":"Ada"}`)
	if code != 0 || !strings.Contains(stdout, "Hello, Ada!") {
		t.Fatalf("exit %d, stdout %q, stderr %s", code, stdout, stderr)
	}
	for _, want := range []string{`"Name":"subako.call"`, `"Name":"subako.call.run"`, `"Name":"subako.upload"`, `"subako.calls"`, `"service.name"`} {
		if !strings.Contains(stderr, want) {
			t.Fatalf("stderr lacks %s:\n%s", want, stderr)
		}
	}
	if strings.Contains(stdout, "subako.call") {
		t.Fatalf("telemetry on stdout: %s", stdout)
	}
}

// OTEL_EXPORTER_OTLP_ENDPOINT alone sends traces and metrics over OTLP/HTTP
// (to a collector stand-in on loopback), and the command waits for the
// flush.
func TestCallOtelOTLP(t *testing.T) {
	var mu sync.Mutex
	paths := map[string]int{}
	collector := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		paths[r.Method+" "+r.URL.Path]++
		mu.Unlock()
		w.Header().Set("Content-Type", "application/x-protobuf")
		w.WriteHeader(http.StatusOK)
	}))
	defer collector.Close()
	pkg := pkgDir(t, "greet", nil)
	code, _, stderr := cliEnv(t, map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": collector.URL}, "call", pkg, "greet", `{"name":"Ada"}`)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	mu.Lock()
	defer mu.Unlock()
	if paths["POST /v1/traces"] == 0 || paths["POST /v1/metrics"] == 0 {
		t.Fatalf("the collector saw %v; want traces and metrics posted", paths)
	}
}
