package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetrichttp"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/exporters/stdout/stdoutmetric"
	"go.opentelemetry.io/otel/exporters/stdout/stdouttrace"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/subako/subako-runner/otelobserver"
	"github.com/subako/subako-runner/runtime"
)

// otelShutdownTimeout bounds the flush of spans and metrics at exit: a
// collector that does not answer must not hold the command.
const otelShutdownTimeout = 3 * time.Second

// otelExporter is where telemetry goes: "" (nowhere), "console" (stderr,
// for a local look) or "otlp" (OTLP over HTTP to the OTEL_EXPORTER_OTLP_*
// endpoint).
//
// --otel picks it; without the flag the SDK's own variables do:
// OTEL_SDK_DISABLED=true turns it off, OTEL_TRACES_EXPORTER=console|otlp|none
// picks it, and an OTEL_EXPORTER_OTLP_ENDPOINT (or _TRACES_ENDPOINT)
// alone means otlp.
func otelExporter(flag string, getenv func(string) string) (string, error) {
	if flag != "" {
		exp, ok := exporterNamed(flag)
		if !ok {
			return "", fmt.Errorf("--otel must be console, otlp or none, not %q", flag)
		}
		return exp, nil
	}
	if strings.EqualFold(getenv("OTEL_SDK_DISABLED"), "true") {
		return "", nil
	}
	if v := strings.ToLower(strings.TrimSpace(getenv("OTEL_TRACES_EXPORTER"))); v != "" {
		exp, ok := exporterNamed(v)
		if !ok {
			return "", fmt.Errorf("OTEL_TRACES_EXPORTER=%s: this runner exports to console, otlp or none", v)
		}
		return exp, nil
	}
	if getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != "" || getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") != "" {
		return "otlp", nil
	}
	return "", nil
}

// exporterNamed maps an exporter's name (the flag's or the SDK
// variable's) to "console", "otlp" or "" (none).
func exporterNamed(name string) (string, bool) {
	switch name {
	case "console", "stdout":
		return "console", true
	case "otlp":
		return "otlp", true
	case "none":
		return "", true
	}
	return "", false
}

// otelObserver makes the providers and the runtime's Observer for the
// exporter, with extra metric readers (the Prometheus endpoint's) beside
// it; shutdown flushes and stops them.
func otelObserver(ctx context.Context, exporter string, stderr io.Writer, getenv func(string) string, extra ...sdkmetric.Reader) (runtime.Observer, func(), error) {
	var (
		spans   sdktrace.SpanExporter
		metrics sdkmetric.Exporter
		err     error
	)
	switch exporter {
	case "console":
		if spans, err = stdouttrace.New(stdouttrace.WithWriter(stderr)); err == nil {
			metrics, err = stdoutmetric.New(stdoutmetric.WithWriter(stderr))
		}
	case "otlp":
		var topts []otlptracehttp.Option
		var mopts []otlpmetrichttp.Option
		// The endpoint is read here (the exporters read the other
		// OTEL_EXPORTER_OTLP_* variables themselves).
		if u := getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"); u != "" {
			topts = append(topts, otlptracehttp.WithEndpointURL(u))
		} else if u := getenv("OTEL_EXPORTER_OTLP_ENDPOINT"); u != "" {
			topts = append(topts, otlptracehttp.WithEndpointURL(strings.TrimSuffix(u, "/")+"/v1/traces"))
		}
		if u := getenv("OTEL_EXPORTER_OTLP_METRICS_ENDPOINT"); u != "" {
			mopts = append(mopts, otlpmetrichttp.WithEndpointURL(u))
		} else if u := getenv("OTEL_EXPORTER_OTLP_ENDPOINT"); u != "" {
			mopts = append(mopts, otlpmetrichttp.WithEndpointURL(strings.TrimSuffix(u, "/")+"/v1/metrics"))
		}
		if spans, err = otlptracehttp.New(ctx, topts...); err == nil {
			metrics, err = otlpmetrichttp.New(ctx, mopts...)
		}
	default:
		if len(extra) == 0 {
			return nil, func() {}, nil
		}
	}
	if err != nil {
		return nil, nil, fmt.Errorf("--otel %s: %w", exporter, err)
	}
	name := getenv("OTEL_SERVICE_NAME")
	if name == "" {
		name = "subako-runner"
	}
	res := resource.NewSchemaless(semconv.ServiceName(name), semconv.ServiceVersion(runtime.Version))
	// Without a span exporter (only --metrics-addr) no span is made.
	var tracers trace.TracerProvider = noop.NewTracerProvider()
	var tp *sdktrace.TracerProvider
	if spans != nil {
		tp = sdktrace.NewTracerProvider(sdktrace.WithBatcher(spans), sdktrace.WithResource(res))
		tracers = tp
	}
	mopts := []sdkmetric.Option{sdkmetric.WithResource(res)}
	if metrics != nil {
		mopts = append(mopts, sdkmetric.WithReader(sdkmetric.NewPeriodicReader(metrics)))
	}
	for _, r := range extra {
		mopts = append(mopts, sdkmetric.WithReader(r))
	}
	mp := sdkmetric.NewMeterProvider(mopts...)
	obs, err := otelobserver.New(otelobserver.Config{TracerProvider: tracers, MeterProvider: mp})
	if err != nil {
		return nil, nil, err
	}
	shutdown := func() {
		c, cancel := context.WithTimeout(context.WithoutCancel(ctx), otelShutdownTimeout)
		defer cancel()
		var traceErr error
		if tp != nil {
			traceErr = tp.Shutdown(c)
		}
		if err := errors.Join(traceErr, mp.Shutdown(c)); err != nil {
			fmt.Fprintf(stderr, "subako-runner: telemetry not delivered: %v\n", err)
		}
	}
	return obs, shutdown, nil
}
