package subakohttp

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"

	"golang.org/x/net/http/httpguts"
	"golang.org/x/net/publicsuffix"
)

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
