package subakohttp

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/netip"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unicode/utf8"

	"go.uber.org/zap"
	"golang.org/x/net/http/httpguts"
	"golang.org/x/net/publicsuffix"

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

// truncateOutput empties a file output after a failure, so a partial body
// is never mistaken for a complete one.
func truncateOutput(f *os.File) {
	if f != nil {
		_ = f.Truncate(0)
	}
}

func pathErrText(err error) string {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err.Error()
	}
	return err.Error()
}

// bodySource produces the request body afresh for every hop that sends it.
type bodySource struct {
	data        []byte
	file        *os.File
	size        int64
	contentType string
}

func (c *Call) openBody(b *requestBody) (*bodySource, *Error) {
	if b == nil {
		return &bodySource{}, nil
	}
	if b.kind != "file" {
		return &bodySource{data: b.data, size: int64(len(b.data)), contentType: b.contentType}, nil
	}
	if c.cfg.Files == nil {
		return nil, errorf(KindBadPath, "file bodies are not available in this call")
	}
	f, err := c.cfg.Files.OpenFile(b.path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, errorf(KindBadPath, fmt.Sprintf("cannot open %q: %s; use an existing file under /volume/tmp/ or /volume/data/ of this call", b.path, pathErrText(err)))
	}
	st, e := regularFile(f, b.path)
	if e != nil {
		return nil, e
	}
	return &bodySource{file: f, size: st.Size()}, nil
}

// openOutput creates a file output, or opens an existing regular file and
// empties it. The open never waits (O_NONBLOCK: a FIFO without a reader
// fails at once, one with a reader opens) and nothing is truncated before
// the file is known to be a regular one.
func (c *Call) openOutput(guestPath string) (*os.File, *Error) {
	if c.cfg.Files == nil {
		return nil, errorf(KindBadPath, "file outputs are not available in this call")
	}
	f, err := c.createOutput(guestPath)
	if err != nil {
		var herr *Error
		if errors.As(err, &herr) {
			return nil, herr
		}
		return nil, errorf(KindBadPath, fmt.Sprintf("cannot create %q: %s; use a path under /volume/tmp/ or /volume/data/ of this call, in an existing directory, that is not a directory, a FIFO or a device", guestPath, pathErrText(err)))
	}
	if _, e := regularFile(f, guestPath); e != nil {
		return nil, e
	}
	if err := f.Truncate(0); err != nil {
		f.Close()
		return nil, errorf(KindBadPath, fmt.Sprintf("cannot empty %q: %s", guestPath, pathErrText(err)))
	}
	return f, nil
}

// createOutput opens a file output for writing, creating it if it does
// not exist. A file it creates is a new directory entry, charged to the
// call's budget as the WASI layer charges the guest's own (one of
// MaxEntries, no bytes): O_EXCL tells a creation from an existing file
// without a race, and the entry is reserved before it is made.
func (c *Call) createOutput(guestPath string) (*os.File, error) {
	const flags = os.O_WRONLY | syscall.O_NONBLOCK
	b := c.cfg.Budget
	if b == nil {
		return c.cfg.Files.OpenFile(guestPath, flags|os.O_CREATE, 0o644)
	}
	if !b.ReserveEntry(0) {
		// At the cap an existing file may still be written; only a new one is refused.
		f, err := c.cfg.Files.OpenFile(guestPath, flags, 0)
		if errors.Is(err, fs.ErrNotExist) {
			return nil, errorf(KindWriteBudget, fmt.Sprintf("creating %q would exceed the call's write budget (%d of %d bytes used, %d of at most %d new directory entries); write into an existing file or remove files first", guestPath, b.Used(), b.Limit(), b.Entries(), b.MaxEntries()))
		}
		return f, err
	}
	f, err := c.cfg.Files.OpenFile(guestPath, flags|os.O_CREATE|os.O_EXCL, 0o644)
	if err == nil {
		return f, nil
	}
	b.RefundEntry(0)
	if errors.Is(err, fs.ErrExist) {
		return c.cfg.Files.OpenFile(guestPath, flags, 0)
	}
	return nil, err
}

// regularFile checks an opened volume file on its descriptor (not its path,
// which the guest may change meanwhile); it closes f when refusing it.
func regularFile(f *os.File, guestPath string) (fs.FileInfo, *Error) {
	st, err := f.Stat()
	if err != nil || !st.Mode().IsRegular() {
		f.Close()
		return nil, errorf(KindBadPath, fmt.Sprintf("%q is not a regular file (a directory, FIFO, socket or device); use a regular file under /volume/tmp/ or /volume/data/", guestPath))
	}
	return st, nil
}

func (b *bodySource) present() bool { return b.file != nil || b.data != nil }

func (b *bodySource) reader(ctx context.Context, c *Call) io.ReadCloser {
	var r io.Reader
	if b.file != nil {
		r = io.NewSectionReader(b.file, 0, b.size)
	} else {
		r = bytes.NewReader(b.data)
	}
	return io.NopCloser(&countingReader{ctx: ctx, r: r, n: &c.sent})
}

// countingReader counts body bytes sent and stops reading the body (a
// file, for file bodies) as soon as the request's context ends, whatever
// the transport does with the connection.
type countingReader struct {
	ctx context.Context
	r   io.Reader
	n   *atomic.Int64
}

func (cr *countingReader) Read(p []byte) (int, error) {
	if err := cr.ctx.Err(); err != nil {
		return 0, err
	}
	n, err := cr.r.Read(p)
	cr.n.Add(int64(n))
	return n, err
}

// sentCounter counts a request once its headers are written to a
// connection: a request refused before (by the destination check, DNS, a
// refused dial or a failed TLS handshake) was never sent and is not
// counted.
func sentCounter(ctx context.Context, n *atomic.Int64) context.Context {
	return httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{WroteHeaders: func() { n.Add(1) }})
}

// bodyHeaders go with a body and are dropped when a redirect turns the
// request into a GET without one (as Go's client and the Fetch standard do).
var bodyHeaders = []string{"content-type", "content-encoding", "content-language", "content-location"}

// roundTrips sends the request and follows redirects hop by hop, checking
// every hop against the allowlist; the destination check runs in the dialer.
func (c *Call) roundTrips(ctx context.Context, r *parsedRequest, body *bodySource, redirects *int) (*http.Response, *Error) {
	cur, host, port := r.url, r.host, r.port
	method := r.method
	sendBody := body.present()
	stripBodyHeaders := false
	originScheme, origin := r.url.Scheme, resolveKey(r.host, r.port)
	for hop := 0; ; hop++ {
		ent := c.policy.match(cur.Scheme, host, port)
		if ent == nil {
			return nil, c.policy.notAllowed(cur.Scheme, host, port, hop > 0)
		}
		req, err := http.NewRequestWithContext(sentCounter(ctx, &c.requests), method, cur.String(), nil)
		if err != nil {
			return nil, invalid("the request could not be built: %v", err)
		}
		for _, h := range r.headers {
			if stripBodyHeaders && contains(bodyHeaders, strings.ToLower(h[0])) {
				continue
			}
			req.Header.Add(h[0], h[1])
		}
		if sendBody {
			req.Body = body.reader(ctx, c)
			req.ContentLength = body.size
			req.GetBody = func() (io.ReadCloser, error) { return body.reader(ctx, c), nil }
			if body.size == 0 {
				req.Body = http.NoBody
			}
			if body.contentType != "" && req.Header.Get("Content-Type") == "" {
				req.Header.Set("Content-Type", body.contentType)
			}
		}
		// Credentials only on the origin the guest asked for: never across
		// a redirect to another host, port or scheme.
		if len(ent.creds) > 0 && cur.Scheme == originScheme && resolveKey(host, port) == origin {
			for _, cr := range ent.creds {
				v, ok := cr.Value(ctx)
				if !ok {
					return nil, errorf(KindCredentialUnavailable, fmt.Sprintf("the credential %q for allowlist entry %q is not available for this call; ask the function's owner to configure it", strings.ToLower(cr.Header), ent.raw))
				}
				if !httpguts.ValidHeaderFieldValue(v) {
					return nil, errorf(KindCredentialUnavailable, fmt.Sprintf("the credential %q for allowlist entry %q is not a valid header value", strings.ToLower(cr.Header), ent.raw))
				}
				req.Header.Set(cr.Header, v)
			}
		}
		resp, err := c.roundTrip(req)
		if err != nil {
			return nil, classify(ctx, err, host, port)
		}
		if !r.followRedirects {
			return resp, nil
		}
		loc := resp.Header.Get("Location")
		redirect := false
		switch resp.StatusCode {
		case 301, 302, 303:
			redirect = true
			if method != "GET" && method != "HEAD" {
				method = "GET"
			}
			sendBody, stripBodyHeaders = false, true
		case 307, 308:
			redirect = true
		}
		if !redirect || loc == "" {
			return resp, nil
		}
		resp.Body.Close()
		if hop+1 > c.cfg.Limits.HTTPRedirects {
			return nil, errorf(KindTooManyRedirects, fmt.Sprintf("more than %d redirects, the last from %s; request the final URL directly or set \"follow_redirects\": false", c.cfg.Limits.HTTPRedirects, host))
		}
		next, err := cur.Parse(loc)
		if err != nil {
			return nil, errorf(KindConnection, fmt.Sprintf("%s answered with a redirect to an invalid URL", host))
		}
		if next.User != nil {
			return nil, errorf(KindHostNotAllowed, fmt.Sprintf("%s redirected to a URL with user information; such redirects are not followed", host))
		}
		n, nh, np, e := checkURL(next)
		if e != nil {
			return nil, errorf(KindHostNotAllowed, fmt.Sprintf("%s redirected to a URL that cannot be followed (%s)", host, e.Message))
		}
		cur, host, port = n, nh, np
		*redirects = hop + 1
	}
}

func (p *Policy) notAllowed(scheme string, h normHost, port int, redirect bool) *Error {
	target := h.String()
	if port != defaultPort(scheme) {
		target = fmt.Sprintf("%s:%d", target, port)
	}
	r := Refusal{Kind: KindHostNotAllowed, Entry: target, Redirect: redirect}
	if e := p.suffixShadowed(scheme, h, port); e != nil {
		ps, _ := publicsuffix.PublicSuffix(h.name)
		return errorf(KindHostNotAllowed, fmt.Sprintf("%s is under the public suffix %q, where anyone can register names, so the allowlist entry %q does not reach it; %s", target, ps, e.raw,
			p.remedyOr(r, "ask the function's owner to allow the host itself")))
	}
	if redirect {
		msg := fmt.Sprintf("a redirect led to %s (%s), which is not in this function's network allowlist", target, scheme)
		if s := p.remedyOr(r, ""); s != "" {
			msg += "; " + s
		}
		return errorf(KindHostNotAllowed, msg)
	}
	return errorf(KindHostNotAllowed, fmt.Sprintf("%s is not in this function's network allowlist (%s, port %d); %s", target, scheme, port,
		p.remedyOr(r, "ask the function's owner to allow it")))
}

// readResponse turns the final response into the "ok" document, reading the
// body inline (capped) or streaming it to the output file.
func (c *Call) readResponse(ctx context.Context, r *parsedRequest, resp *http.Response, out *os.File) (*okResponse, *Error) {
	headers := make(map[string]string, len(resp.Header))
	for k, vs := range resp.Header {
		headers[strings.ToLower(k)] = strings.Join(vs, ", ")
	}
	ok := &okResponse{Status: resp.StatusCode, Headers: headers}
	if out == nil {
		limit := c.cfg.Limits.HTTPInline
		data, err := io.ReadAll(io.LimitReader(resp.Body, limit+1))
		c.received.Add(int64(len(data)))
		if err != nil {
			return nil, classify(ctx, err, r.host, r.port)
		}
		if int64(len(data)) > limit {
			return nil, errorf(KindTooLarge, fmt.Sprintf("the response body is over the inline limit of %d bytes; save it to a file with \"output\": {\"type\":\"file\",\"path\":\"/volume/tmp/...\"}", limit))
		}
		if !utf8.Valid(data) {
			return nil, errorf(KindNotText, "the response body is not UTF-8 text; save it to a file with \"output\": {\"type\":\"file\",\"path\":\"/volume/tmp/...\"} to receive bytes")
		}
		ok.Body = inlineBody{Type: "inline", Text: string(data)}
		return ok, nil
	}
	n, e := c.streamToFile(ctx, r, resp.Body, out)
	if e != nil {
		return nil, e
	}
	ok.Body = fileBody{Type: "file", Path: r.outputPath, Bytes: n}
	return ok, nil
}

// streamChunk is the size of one read-charge-write step of a file output.
const streamChunk = 256 << 10

// streamToFile copies the body chunk by chunk, charging the write budget
// before each write, so memory stays flat and the budget is never crossed.
func (c *Call) streamToFile(ctx context.Context, r *parsedRequest, body io.Reader, out *os.File) (int64, *Error) {
	buf := make([]byte, streamChunk)
	var total int64
	for {
		// The transport ends the body when the context does; checking here
		// as well keeps every file write inside the call's deadline.
		if err := ctx.Err(); err != nil {
			return total, classify(ctx, err, r.host, r.port)
		}
		n, rerr := body.Read(buf)
		if n > 0 {
			c.received.Add(int64(n))
			if b := c.cfg.Budget; b != nil && !b.Reserve(int64(n)) {
				return total, errorf(KindWriteBudget, fmt.Sprintf("saving the response to %q would exceed the call's write budget of %d bytes (%d already used); the partial file was emptied", r.outputPath, b.Limit(), b.Used()))
			}
			w, werr := out.Write(buf[:n])
			total += int64(w)
			if b := c.cfg.Budget; b != nil {
				b.Refund(int64(n - w))
			}
			if werr != nil {
				return total, errorf(KindWriteBudget, fmt.Sprintf("the host could not write %q: %s", r.outputPath, pathErrText(werr)))
			}
		}
		if rerr == io.EOF {
			return total, nil
		}
		if rerr != nil {
			return total, classify(ctx, rerr, r.host, r.port)
		}
	}
}

// dialContext resolves the host itself (pinned answers, then the system
// resolver), refuses the connection if any answer is not public, and dials
// exactly the addresses it checked; the Control hook checks once more on
// the socket's own address. Every connection goes through here, so a DNS
// answer that changes between lookups cannot reach a private address.
func (c *Call) dialContext(ctx context.Context, network, address string) (net.Conn, error) {
	hs, ps, err := net.SplitHostPort(address)
	if err != nil {
		return nil, err
	}
	h, err := normalizeHost(hs)
	if err != nil {
		return nil, err
	}
	port, err := strconv.Atoi(ps)
	if err != nil {
		return nil, err
	}
	addrs, err := c.resolve(ctx, h, port)
	if err != nil {
		return nil, err
	}
	for _, a := range addrs {
		if e := c.policy.checkDestination(a); e != nil {
			return nil, e
		}
	}
	var last error
	for _, a := range addrs {
		target := netip.AddrPortFrom(a.Unmap(), uint16(port)).String()
		conn, err := c.dialChecked(ctx, network, target)
		if err == nil {
			return conn, nil
		}
		last = err
		if ctx.Err() != nil {
			break
		}
	}
	return nil, last
}

func (c *Call) dialChecked(ctx context.Context, network, target string) (net.Conn, error) {
	if c.rawDial != nil {
		return c.rawDial(ctx, network, target)
	}
	d := net.Dialer{
		Control: func(_, address string, _ syscall.RawConn) error {
			ap, err := netip.ParseAddrPort(address)
			if err != nil {
				return errorf(KindForbiddenDestination, "the host could not read the address it was about to dial")
			}
			if e := c.policy.checkDestination(ap.Addr()); e != nil {
				return e
			}
			return nil
		},
	}
	return d.DialContext(ctx, network, target)
}

func (c *Call) resolve(ctx context.Context, h normHost, port int) ([]netip.Addr, error) {
	if h.isIP() {
		return []netip.Addr{h.ip}, nil
	}
	if addrs, ok := c.policy.resolve[resolveKey(h, port)]; ok {
		return addrs, nil
	}
	var addrs []netip.Addr
	var err error
	if c.lookup != nil {
		addrs, err = c.lookup(ctx, h.name)
	} else {
		addrs, err = net.DefaultResolver.LookupNetIP(ctx, "ip", h.name)
	}
	if err != nil {
		return nil, err
	}
	if len(addrs) == 0 {
		return nil, &net.DNSError{Err: "no addresses", Name: h.name, IsNotFound: true}
	}
	// A resolver's IPv4 answer may come IPv4-mapped (::ffff:127.0.0.1, from
	// Go's for a name in /etc/hosts): it is the IPv4 address, checked and
	// reported as such. The check sees through the mapping either way.
	for i, a := range addrs {
		addrs[i] = a.Unmap()
	}
	return addrs, nil
}

// classify maps a transport error to a guest-facing error. Messages are
// written here rather than passed through, so nothing of the request (URL
// query, headers) can leak into them.
func classify(ctx context.Context, err error, h normHost, port int) *Error {
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	target := net.JoinHostPort(h.plain(), strconv.Itoa(port))
	var ne net.Error
	if ctx.Err() != nil || errors.Is(err, context.DeadlineExceeded) || (errors.As(err, &ne) && ne.Timeout()) {
		return errorf(KindTimeout, fmt.Sprintf("the request to %s did not finish in time (timeout_ms, or the call's own deadline, passed)", target))
	}
	var dnsErr *net.DNSError
	if errors.As(err, &dnsErr) {
		return errorf(KindConnection, fmt.Sprintf("could not resolve %s: %s", h.plain(), dnsErr.Err))
	}
	var certErr *tls.CertificateVerificationError
	var recErr tls.RecordHeaderError
	var alert tls.AlertError
	var unknownAuth x509.UnknownAuthorityError
	var hostErr x509.HostnameError
	var invalidCert x509.CertificateInvalidError
	if errors.As(err, &certErr) || errors.As(err, &recErr) || errors.As(err, &alert) || errors.As(err, &unknownAuth) || errors.As(err, &hostErr) || errors.As(err, &invalidCert) || strings.Contains(err.Error(), "tls: ") {
		return errorf(KindConnection, fmt.Sprintf("the TLS handshake with %s failed: %s", target, truncate(tlsReason(err))))
	}
	switch {
	case errors.Is(err, syscall.ECONNREFUSED):
		return errorf(KindConnection, fmt.Sprintf("%s refused the connection", target))
	case errors.Is(err, syscall.ECONNRESET), errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF):
		return errorf(KindConnection, fmt.Sprintf("%s closed or reset the connection", target))
	case errors.Is(err, syscall.ENETUNREACH), errors.Is(err, syscall.EHOSTUNREACH):
		return errorf(KindConnection, fmt.Sprintf("%s is unreachable", target))
	}
	return errorf(KindConnection, fmt.Sprintf("the request to %s failed: %s", target, truncate(innermost(err))))
}

func tlsReason(err error) string {
	var certErr *tls.CertificateVerificationError
	if errors.As(err, &certErr) {
		return certErr.Err.Error()
	}
	return innermost(err)
}

// innermost is the deepest error's text: the cause without the wrapping
// that may repeat the URL.
func innermost(err error) string {
	for {
		var u *url.Error
		if errors.As(err, &u) {
			err = u.Err
			continue
		}
		next := errors.Unwrap(err)
		if next == nil {
			return err.Error()
		}
		err = next
	}
}
