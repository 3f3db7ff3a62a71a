package main

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/subako/subako-runner/limits"
	"github.com/subako/subako-runner/runtime"
)

// --metrics-addr serves the runtime's metrics for Prometheus: a scrape
// of the endpoint on loopback finds the calls counted by outcome, through
// OpenTelemetry's Prometheus exporter; closing the runtime stops it.
func TestMetricsAddrServesTheCallCounters(t *testing.T) {
	pkgPath := pkgDir(t, "greet", nil)
	var stderr bytes.Buffer
	e := &env{stdout: io.Discard, stderr: &stderr, getenv: func(string) string { return "" }}
	h := hostFlags{metricsAddr: "127.0.0.1:0", logLevel: "warn", logFormat: "console", noCache: true}
	ctx := context.Background()
	rt, closeRT, err := h.openRuntime(ctx, e, limits.Default(), pkgPath)
	if err != nil {
		t.Fatal(err)
	}
	closed := false
	defer func() {
		if !closed {
			closeRT()
		}
	}()
	url := regexp.MustCompile(`metrics on (http://127\.0\.0\.1:\d+/metrics)`).FindStringSubmatch(stderr.String())
	if url == nil {
		t.Fatalf("stderr does not say where the metrics are: %q", stderr.String())
	}
	pkg, err := rt.Load(ctx, pkgPath)
	if err != nil {
		t.Fatal(err)
	}
	for _, args := range []string{`{"name":"Ada"}`, `{"name":"Bob"}`} {
		res, err := pkg.Call(ctx, runtime.CallRequest{Tool: "greet", Arguments: []byte(args)})
		if err != nil {
			t.Fatal(err)
		}
		res.Release()
	}
	if _, err := pkg.Call(ctx, runtime.CallRequest{Tool: "no_such_tool"}); err == nil {
		t.Fatal("an unknown tool was called")
	}
	pkg.Close(ctx)
	resp, err := http.Get(url[1])
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	scrape := string(body)
	for _, want := range []*regexp.Regexp{
		regexp.MustCompile(`(?m)^subako_calls_total\{[^}]*subako_call_outcome="ok"[^}]*\} 2$`),
		regexp.MustCompile(`(?m)^subako_calls_total\{[^}]*subako_call_outcome="refused"[^}]*\} 1$`),
		regexp.MustCompile(`(?m)^subako_uploads_total\{[^}]*\} 1$`),
		regexp.MustCompile(`(?m)^subako_call_duration_seconds_count\{[^}]*subako_call_outcome="ok"[^}]*\} 2$`),
	} {
		if !want.MatchString(scrape) {
			t.Errorf("the scrape has no line matching %s:\n%s", want, scrape)
		}
	}
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/plain") {
		t.Errorf("Content-Type %q; want Prometheus' text format", ct)
	}
	closeRT()
	closed = true
	if resp, err := http.Get(url[1]); err == nil {
		resp.Body.Close()
		t.Error("the endpoint still answers after the runtime closed")
	}
}

// mcp and inspect take --metrics-addr; a command that ends at once does not.
func TestMetricsAddrFlag(t *testing.T) {
	for _, cmd := range []string{"mcp", "inspect"} {
		_, out, _ := cli(t, "", cmd, "--help")
		if !strings.Contains(out, "--metrics-addr ADDR") {
			t.Errorf("%s --help lacks --metrics-addr ADDR:\n%s", cmd, out)
		}
	}
	if code, _, _ := cli(t, "", "call", "--metrics-addr", "127.0.0.1:0", "x", "y"); code != exitUsage {
		t.Errorf("call --metrics-addr: exit %d, want a usage error", code)
	}
	pkg := pkgDir(t, "greet", nil)
	code, _, errOut := cli(t, "", "inspect", "--metrics-addr", "127.0.0.1:not-a-port", pkg)
	if code != exitUsage || !strings.Contains(errOut, "--metrics-addr 127.0.0.1:not-a-port") {
		t.Errorf("a bad --metrics-addr: exit %d, %q", code, errOut)
	}
}
