package subakohttp

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"io/fs"
	"net"
	"net/http"
	"net/netip"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/subako/subako-runner/limits"
)

// Files opens a request's file bodies and file outputs, confined to
// /volume/tmp and /volume/data of the call. Any error is reported to the
// guest as bad_path. Paths reaching Files are already absolute, clean and
// under one of the two mounts (checked lexically); Files must still refuse
// symlink escapes.
type Files interface {
	// OpenFile opens guestPath as os.OpenFile does, with flag and perm
	// passed through unchanged. The host asks for O_NONBLOCK, so that
	// opening a FIFO or a device never waits for another process, and
	// itself refuses anything that is not a regular file.
	OpenFile(guestPath string, flag int, perm fs.FileMode) (*os.File, error)
}

// CallConfig is what one instance's HTTP needs from the embedder.
type CallConfig struct {
	// Policy is the network policy; nil allows nothing.
	Policy *Policy
	// Files is the file access for file bodies and outputs; nil refuses
	// them with bad_path.
	Files Files
	// Budget is the call's write budget, shared with the WASI layer; nil is
	// unlimited.
	Budget *limits.WriteBudget
	// Limits gives HTTPRequest, HTTPInline and HTTPRedirects. When
	// HTTPRequest is zero (an unset Limits) the defaults of ABI 1 apply.
	Limits limits.Limits
	// Logger receives one debug line per request (host, status, sizes),
	// never URLs' paths or queries, bodies or credentials. May be nil.
	Logger *zap.Logger
	// RootCAs replaces the system's trusted roots for TLS. It exists for
	// tests (httptest.NewTLSServer) and for embedders with a private CA;
	// nil means the system roots.
	RootCAs *x509.CertPool
	// Exchange, when set, performs every request document elsewhere and
	// returns the response document, in place of Do: a worker process, which
	// holds neither the policy's credentials nor a socket, hands its
	// guest's requests to the process that does (the runtime's worker
	// mode). Policy then only refuses what it refuses without a request
	// (DiscoveryPolicy); Files is unused.
	Exchange func(ctx context.Context, request []byte) []byte
}

// Stats counts one instance's HTTP traffic.
type Stats struct {
	// Requests is how many HTTP requests were sent: written to a
	// connection after every check passed, each redirect hop counting.
	// Requests refused before that (allowlist, destination check, DNS, a
	// refused connection, TLS) do not count.
	Requests int64
	// BytesSent is request body bytes sent.
	BytesSent int64
	// BytesReceived is response body bytes received.
	BytesReceived int64
}

// Call is the subako_http state of one module instance: its policy, the
// response it holds for read_response, and its traffic counters.
type Call struct {
	cfg    CallConfig
	policy *Policy
	log    *zap.Logger

	transportOnce sync.Once
	transport     *http.Transport // made by roundTrip

	// Test hooks: lookup replaces the system resolver, rawDial the final
	// dial of an already checked address.
	lookup  func(ctx context.Context, host string) ([]netip.Addr, error)
	rawDial func(ctx context.Context, network, addr string) (net.Conn, error)

	mu   sync.Mutex
	held []byte // nil when nothing is held

	requests, sent, received atomic.Int64

	recMu   sync.Mutex
	records []RequestRecord // at most maxRecords
	dropped int             // records past maxRecords
}

// maxRecords bounds what one instance keeps of its requests for tracing: a
// guest looping over requests must not make the host keep a record each.
const maxRecords = 64

// RequestRecord is one request the guest made through subako_http, as a
// trace shows it: where to and how it ended, never the URL's path or
// query, a header, a credential or a body.
type RequestRecord struct {
	// Method, Scheme, Host and Port are the request's, as the guest asked
	// (the first hop); empty (0) when the request did not parse.
	Method, Scheme, Host string
	Port                 int
	// Status is the final response's status code; 0 when none arrived.
	Status int
	// ErrorKind is the error's kind when the request failed; "" when it
	// answered ok.
	ErrorKind Kind
	// Redirects is the number of redirects followed.
	Redirects int
	// BytesSent and BytesReceived count the body bytes of every hop.
	BytesSent, BytesReceived int64
	// Start is when the host began the request; Duration how long it took.
	Start    time.Time
	Duration time.Duration
}

// Records returns the requests the instance made so far (at most 64, in
// order) and how many more it made that were not kept.
func (c *Call) Records() ([]RequestRecord, int) {
	c.recMu.Lock()
	defer c.recMu.Unlock()
	return append([]RequestRecord(nil), c.records...), c.dropped
}

func (c *Call) record(r RequestRecord) {
	c.recMu.Lock()
	defer c.recMu.Unlock()
	if len(c.records) >= maxRecords {
		c.dropped++
		return
	}
	c.records = append(c.records, r)
}

// NewCall prepares one instance's HTTP state.
func NewCall(cfg CallConfig) *Call {
	if cfg.Limits.HTTPRequest == 0 {
		d := limits.Default()
		cfg.Limits.HTTPRequest, cfg.Limits.HTTPInline, cfg.Limits.HTTPRedirects = d.HTTPRequest, d.HTTPInline, d.HTTPRedirects
	}
	if cfg.Limits.HTTPInline == 0 {
		cfg.Limits.HTTPInline = limits.Default().HTTPInline
	}
	c := &Call{cfg: cfg, policy: cfg.Policy, log: cfg.Logger}
	if c.policy == nil {
		c.policy = &Policy{injected: map[string]bool{}}
	}
	if c.log == nil {
		c.log = zap.NewNop()
	}
	return c
}

// roundTrip sends req on the call's transport, made at the first request:
// most calls send none, and a transport with its TLS configuration is a
// good part of what a call would otherwise allocate for nothing.
func (c *Call) roundTrip(req *http.Request) (*http.Response, error) {
	c.transportOnce.Do(func() {
		c.transport = &http.Transport{
			Proxy:              nil, // never from the environment
			DialContext:        c.dialContext,
			TLSClientConfig:    &tls.Config{RootCAs: c.cfg.RootCAs, MinVersion: tls.VersionTLS12},
			ForceAttemptHTTP2:  true,
			DisableKeepAlives:  true,
			DisableCompression: true,
			// Bounded so a hostile server cannot make the host buffer
			// unbounded headers; the body limits apply separately.
			MaxResponseHeaderBytes: 1 << 20,
		}
	})
	return c.transport.RoundTrip(req)
}

// Stats returns the traffic so far.
func (c *Call) Stats() Stats {
	return Stats{Requests: c.requests.Load(), BytesSent: c.sent.Load(), BytesReceived: c.received.Load()}
}

type callKey struct{}

// WithCall attaches an instance's Call to the context its module is
// instantiated and run with; the host functions read it from there.
func WithCall(ctx context.Context, c *Call) context.Context {
	return context.WithValue(ctx, callKey{}, c)
}

func callFrom(ctx context.Context) *Call {
	c, _ := ctx.Value(callKey{}).(*Call)
	return c
}

// Do performs one request document and returns the compact response
// document: {"ok":{...}} or {"error":{"kind":...,"message":...}}. It is the
// core of the request host function.
func (c *Call) Do(ctx context.Context, request []byte) []byte {
	rec := RequestRecord{Start: time.Now()}
	sent, received := c.sent.Load(), c.received.Load()
	ok, e := c.do(ctx, request, &rec)
	rec.Duration = time.Since(rec.Start)
	rec.BytesSent, rec.BytesReceived = c.sent.Load()-sent, c.received.Load()-received
	if e != nil {
		rec.ErrorKind = e.Kind
	}
	c.record(rec)
	if e != nil {
		c.log.Debug("subako_http request failed", zap.String("kind", string(e.Kind)))
		return errorResponse(e)
	}
	return marshalCompact(map[string]any{"ok": ok})
}

func (c *Call) do(ctx context.Context, doc []byte, rec *RequestRecord) (*okResponse, *Error) {
	if c.policy.denyMessage != "" {
		return nil, errorf(KindHostNotAllowed, c.policy.denyMessage)
	}
	r, e := parseRequest(doc, c.cfg.Limits.HTTPRequest, c.policy)
	if e != nil {
		return nil, e
	}
	rec.Method, rec.Scheme, rec.Host, rec.Port = r.method, r.url.Scheme, r.host.String(), r.port
	if c.policy.match(r.url.Scheme, r.host, r.port) == nil {
		return nil, c.policy.notAllowed(r.url.Scheme, r.host, r.port, false)
	}
	ctx, cancel := context.WithTimeout(ctx, r.timeout)
	defer cancel()

	body, e := c.openBody(r.body)
	if e != nil {
		return nil, e
	}
	if body.file != nil {
		defer body.file.Close()
	}
	var out *os.File
	if r.outputPath != "" {
		f, e := c.openOutput(r.outputPath)
		if e != nil {
			return nil, e
		}
		defer f.Close()
		out = f
	}
	resp, e := c.roundTrips(ctx, r, body, &rec.Redirects)
	if e != nil {
		truncateOutput(out)
		return nil, e
	}
	rec.Status = resp.StatusCode
	defer resp.Body.Close()
	ok, e := c.readResponse(ctx, r, resp, out)
	if e != nil {
		truncateOutput(out)
		return nil, e
	}
	c.log.Debug("subako_http request", zap.String("host", r.host.String()), zap.Int("port", r.port), zap.Int("status", resp.StatusCode))
	return ok, nil
}
