package subakohttp

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"syscall"
	"unicode/utf8"
)

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
