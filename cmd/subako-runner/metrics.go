package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/spf13/cobra"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
)

// registerMetrics adds --metrics-addr (mcp, inspect: the commands that
// keep serving).
func (h *hostFlags) registerMetrics(cmd *cobra.Command) {
	cmd.Flags().StringVar(&h.metricsAddr, "metrics-addr", "", "serve the OpenTelemetry metrics for Prometheus to scrape at http://`ADDR`/metrics (e.g. 127.0.0.1:9464)")
}

// metricsEndpoint serves the metrics of reader's MeterProvider in the
// Prometheus text format at http://ADDR/metrics, through OpenTelemetry's
// Prometheus exporter.
type metricsEndpoint struct {
	reader sdkmetric.Reader
	srv    *http.Server
	addr   net.Addr
}

// startMetrics listens on addr and serves /metrics; the reader it
// returns goes into the MeterProvider whose metrics it serves. It says
// where on stderr.
func startMetrics(addr string, stderr io.Writer) (*metricsEndpoint, error) {
	reg := prometheus.NewRegistry()
	reader, err := otelprom.New(otelprom.WithRegisterer(reg))
	if err != nil {
		return nil, fmt.Errorf("--metrics-addr: %w", err)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("--metrics-addr %s: %w", addr, err)
	}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	m := &metricsEndpoint{reader: reader, addr: ln.Addr(),
		srv: &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}}
	go func() {
		if err := m.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			fmt.Fprintf(stderr, "subako-runner: metrics endpoint: %v\n", err)
		}
	}()
	fmt.Fprintf(stderr, "subako-runner: metrics on http://%s/metrics\n", m.addr)
	return m, nil
}

// close stops serving.
func (m *metricsEndpoint) close() {
	ctx, cancel := context.WithTimeout(context.Background(), otelShutdownTimeout)
	defer cancel()
	m.srv.Shutdown(ctx)
}
