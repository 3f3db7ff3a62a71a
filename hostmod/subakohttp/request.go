package subakohttp

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/url"
	"sort"
	"strings"
	"time"
	"unicode/utf8"

	"golang.org/x/net/http/httpguts"

	"github.com/subako/subako-runner/fsmount"
	"github.com/subako/subako-runner/internal/text"
)

// defaultTimeout is timeout_ms when the guest leaves it out.
const defaultTimeout = 30 * time.Second

// parsedRequest is a request document after every syntactic check.
type parsedRequest struct {
	method          string
	url             *url.URL // absolute, host normalized, no userinfo, no fragment
	host            normHost
	port            int
	headers         [][2]string // in a stable order
	body            *requestBody
	outputPath      string // "" for inline
	followRedirects bool
	timeout         time.Duration
}

type requestBody struct {
	kind        string // json, text, base64, file
	data        []byte // json, text, base64
	path        string // file
	contentType string // a default, used when the guest set none
}

var requestFields = []string{"method", "url", "headers", "body", "output", "follow_redirects", "timeout_ms"}

func tooLargeRequest(n, max int64) *Error {
	return errorf(KindTooLarge, fmt.Sprintf("the request is %d bytes, over the limit of %d; send a large body from a file with \"body\": {\"type\":\"file\",\"path\":\"/volume/tmp/...\"}", n, max))
}

func invalid(format string, args ...any) *Error {
	return errorf(KindInvalidRequest, fmt.Sprintf(format, args...))
}

// parseRequest checks a request document against docs/abi.md §8. The
// policy is needed for the credential headers its entries inject.
func parseRequest(doc []byte, maxSize int64, p *Policy) (*parsedRequest, *Error) {
	if int64(len(doc)) > maxSize {
		return nil, tooLargeRequest(int64(len(doc)), maxSize)
	}
	if !utf8.Valid(doc) {
		return nil, invalid("the request is not valid UTF-8 JSON")
	}
	var fields map[string]json.RawMessage
	if err := strictUnmarshal(doc, &fields); err != nil {
		return nil, invalid("the request is not a JSON object: %v", err)
	}
	if fields == nil {
		return nil, invalid("the request is not a JSON object")
	}
	var unknown []string
	for k := range fields {
		if !contains(requestFields, k) {
			unknown = append(unknown, fmt.Sprintf("%q", k))
		}
	}
	if len(unknown) > 0 {
		sort.Strings(unknown)
		return nil, invalid("unknown field %s; a request has only the fields %s", strings.Join(unknown, ", "), strings.Join(requestFields, ", "))
	}
	r := &parsedRequest{method: "GET", followRedirects: true, timeout: defaultTimeout}

	if raw, ok := fields["method"]; ok {
		var m string
		if err := json.Unmarshal(raw, &m); err != nil {
			return nil, invalid("\"method\" must be a string")
		}
		switch m {
		case "GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS":
			r.method = m
		default:
			return nil, invalid("method %q is not supported; use one of GET, HEAD, POST, PUT, PATCH, DELETE, OPTIONS (uppercase)", truncate(m))
		}
	}

	raw, ok := fields["url"]
	if !ok {
		return nil, invalid("\"url\" is missing; give an absolute https:// or http:// URL")
	}
	var rawURL string
	if err := json.Unmarshal(raw, &rawURL); err != nil {
		return nil, invalid("\"url\" must be a string")
	}
	u, h, port, e := parseURL(rawURL)
	if e != nil {
		return nil, e
	}
	r.url, r.host, r.port = u, h, port

	if raw, ok := fields["headers"]; ok {
		var hm map[string]json.RawMessage
		if err := strictUnmarshal(raw, &hm); err != nil || hm == nil {
			return nil, invalid("\"headers\" must be an object of strings")
		}
		names := make([]string, 0, len(hm))
		for k := range hm {
			names = append(names, k)
		}
		sort.Strings(names)
		for _, name := range names {
			var v string
			if err := json.Unmarshal(hm[name], &v); err != nil || bytes.Equal(bytes.TrimSpace(hm[name]), []byte("null")) {
				return nil, invalid("header %q must have a string value", truncate(name))
			}
			if !httpguts.ValidHeaderFieldName(name) {
				return nil, invalid("%q is not a valid header name", truncate(name))
			}
			if !httpguts.ValidHeaderFieldValue(v) {
				return nil, invalid("the value of header %q contains characters not allowed in headers (such as line breaks)", name)
			}
			folded := foldHeader(name)
			shown := fmt.Sprintf("%q", truncate(folded))
			if folded != strings.ToLower(name) {
				shown = fmt.Sprintf("%q (which servers may read as %q)", truncate(name), truncate(folded))
			}
			if p.credentialHeader(folded) {
				return nil, errorf(KindCredentialHeader, fmt.Sprintf("the module may not set the %s header: credentials are injected by the host from the function's allowlist; remove it from the request", shown))
			}
			if framingHeader(folded) {
				return nil, invalid("the %s header is managed by the host; remove it from the request", shown)
			}
			r.headers = append(r.headers, [2]string{name, v})
		}
	}

	if raw, ok := fields["body"]; ok {
		b, e := parseBody(raw)
		if e != nil {
			return nil, e
		}
		r.body = b
	}

	if raw, ok := fields["output"]; ok {
		var o map[string]json.RawMessage
		if err := strictUnmarshal(raw, &o); err != nil || o == nil {
			return nil, invalid("\"output\" must be {\"type\":\"inline\"} or {\"type\":\"file\",\"path\":\"/volume/tmp/...\"}")
		}
		typ, e := typeField(o, "output")
		if e != nil {
			return nil, e
		}
		switch typ {
		case "inline":
			if e := onlyFields(o, "output", "type"); e != nil {
				return nil, e
			}
		case "file":
			if e := onlyFields(o, "output", "type", "path"); e != nil {
				return nil, e
			}
			p, e := pathField(o, "output")
			if e != nil {
				return nil, e
			}
			r.outputPath = p
		default:
			return nil, invalid("output type %q is not supported; use \"inline\" or \"file\"", truncate(typ))
		}
	}

	if raw, ok := fields["follow_redirects"]; ok {
		if err := json.Unmarshal(raw, &r.followRedirects); err != nil || bytes.Equal(bytes.TrimSpace(raw), []byte("null")) {
			return nil, invalid("\"follow_redirects\" must be true or false")
		}
	}

	if raw, ok := fields["timeout_ms"]; ok {
		var ms json.Number
		d := json.NewDecoder(bytes.NewReader(raw))
		d.UseNumber()
		if t := bytes.TrimSpace(raw); len(t) == 0 || t[0] == '"' || d.Decode(&ms) != nil {
			return nil, invalid("\"timeout_ms\" must be a positive whole number of milliseconds")
		}
		n, err := ms.Int64()
		if err != nil || n <= 0 {
			return nil, invalid("\"timeout_ms\" must be a positive whole number of milliseconds")
		}
		const maxMS = int64(24 * time.Hour / time.Millisecond)
		if n > maxMS {
			n = maxMS // the call's own deadline is far shorter anyway
		}
		r.timeout = time.Duration(n) * time.Millisecond
	}
	return r, nil
}

// parseURL checks a request URL (or a redirect target, which is resolved
// before it gets here).
func parseURL(raw string) (*url.URL, normHost, int, *Error) {
	u, err := url.Parse(raw)
	if err != nil {
		return nil, normHost{}, 0, invalid("%q is not a valid URL: %v", truncate(raw), unwrapURLErr(err))
	}
	return checkURL(u)
}

func checkURL(u *url.URL) (*url.URL, normHost, int, *Error) {
	scheme := strings.ToLower(u.Scheme)
	if scheme != "http" && scheme != "https" {
		return nil, normHost{}, 0, invalid("the URL must be absolute and start with https:// or http://")
	}
	if u.Opaque != "" || u.Host == "" {
		return nil, normHost{}, 0, invalid("the URL has no host; write it as https://host/path")
	}
	if u.User != nil {
		return nil, normHost{}, 0, invalid("the URL contains user information (user:password@); remove it and ask for a credential in the function's allowlist instead")
	}
	h, err := normalizeHost(u.Hostname())
	if err != nil {
		return nil, normHost{}, 0, invalid("bad host in URL: %v", err)
	}
	if strings.HasPrefix(u.Host, "[") != (h.isIP() && h.ip.Is6()) {
		return nil, normHost{}, 0, invalid("bad host in URL: IPv6 addresses go in brackets, nothing else does")
	}
	port := defaultPort(scheme)
	if ps := u.Port(); ps != "" {
		port, err = parsePort(ps)
		if err != nil {
			return nil, normHost{}, 0, invalid("bad port in URL: %v", err)
		}
	}
	q, ok := encodeQuery(u.RawQuery)
	if !ok {
		return nil, normHost{}, 0, invalid("the URL's query contains a control character (such as a tab or a line break); percent-encode it")
	}
	out := *u
	out.Scheme = scheme
	out.RawQuery = q
	out.Fragment, out.RawFragment = "", ""
	out.Host = h.String()
	if port != defaultPort(scheme) {
		out.Host = fmt.Sprintf("%s:%d", h.String(), port)
	}
	return &out, h, port, nil
}

// encodeQuery percent-encodes the bytes of a raw query that may not stand
// in a request line — space, '"', '<', '>' and non-ASCII bytes, as browsers
// encode them (WHATWG URL's query percent-encode set; '#' cannot occur in
// a query, and the apostrophe is left as written) — so a space can never
// end the request target early ("GET /?x http://other/ HTTP/1.1").
// Everything else, '%' escapes included, is sent as the guest wrote it. ok
// is false for control characters, which url.Parse already refuses; the
// check stands here too because redirect targets arrive through it.
func encodeQuery(raw string) (string, bool) {
	const hex = "0123456789ABCDEF"
	var b strings.Builder
	for i := 0; i < len(raw); i++ {
		c := raw[i]
		switch {
		case c < 0x20 || c == 0x7f:
			return "", false
		case c == ' ' || c == '"' || c == '<' || c == '>' || c >= 0x80:
			if b.Len() == 0 {
				b.Grow(len(raw) + 16)
				b.WriteString(raw[:i])
			}
			b.WriteByte('%')
			b.WriteByte(hex[c>>4])
			b.WriteByte(hex[c&15])
		default:
			if b.Len() > 0 {
				b.WriteByte(c)
			}
		}
	}
	if b.Len() == 0 {
		return raw, true
	}
	return b.String(), true
}

func unwrapURLErr(err error) error {
	if ue, ok := err.(*url.Error); ok {
		return ue.Err
	}
	return err
}

func parseBody(raw json.RawMessage) (*requestBody, *Error) {
	var o map[string]json.RawMessage
	if err := strictUnmarshal(raw, &o); err != nil || o == nil {
		return nil, invalid("\"body\" must be an object with a \"type\" of json, text, base64 or file")
	}
	typ, e := typeField(o, "body")
	if e != nil {
		return nil, e
	}
	b := &requestBody{kind: typ}
	switch typ {
	case "json":
		if e := onlyFields(o, "body", "type", "json"); e != nil {
			return nil, e
		}
		j, ok := o["json"]
		if !ok {
			return nil, invalid("a json body needs the field \"json\" with the value to send")
		}
		var buf bytes.Buffer
		if err := json.Compact(&buf, j); err != nil {
			return nil, invalid("the json body is not valid JSON")
		}
		b.data, b.contentType = buf.Bytes(), "application/json"
	case "text":
		if e := onlyFields(o, "body", "type", "text"); e != nil {
			return nil, e
		}
		var s string
		if err := json.Unmarshal(o["text"], &s); err != nil || o["text"] == nil || bytes.Equal(bytes.TrimSpace(o["text"]), []byte("null")) {
			return nil, invalid("a text body needs the field \"text\" with a string")
		}
		b.data, b.contentType = []byte(s), "text/plain; charset=utf-8"
	case "base64":
		if e := onlyFields(o, "body", "type", "data"); e != nil {
			return nil, e
		}
		var s string
		if err := json.Unmarshal(o["data"], &s); err != nil || o["data"] == nil || bytes.Equal(bytes.TrimSpace(o["data"]), []byte("null")) {
			return nil, invalid("a base64 body needs the field \"data\" with a base64 string")
		}
		data, err := base64.StdEncoding.DecodeString(s)
		if err != nil {
			return nil, invalid("the base64 body's \"data\" is not standard base64 (RFC 4648 with padding): %v", err)
		}
		b.data = data
	case "file":
		if e := onlyFields(o, "body", "type", "path"); e != nil {
			return nil, e
		}
		p, e := pathField(o, "body")
		if e != nil {
			return nil, e
		}
		b.path = p
	default:
		return nil, invalid("body type %q is not supported; use json, text, base64 or file", truncate(typ))
	}
	return b, nil
}

func typeField(o map[string]json.RawMessage, what string) (string, *Error) {
	var t string
	if err := json.Unmarshal(o["type"], &t); err != nil || o["type"] == nil {
		return "", invalid("%q needs a string field \"type\"", what)
	}
	return t, nil
}

func onlyFields(o map[string]json.RawMessage, what string, allowed ...string) *Error {
	var extra []string
	for k := range o {
		if !contains(allowed, k) {
			extra = append(extra, fmt.Sprintf("%q", k))
		}
	}
	if len(extra) > 0 {
		sort.Strings(extra)
		return invalid("unknown field %s in %q; it takes only %s", strings.Join(extra, ", "), what, strings.Join(allowed, ", "))
	}
	return nil
}

// pathField reads a file path and checks it lexically: absolute, clean,
// under /volume/tmp or /volume/data. The Files seam does the confinement
// proper (symlinks).
func pathField(o map[string]json.RawMessage, what string) (string, *Error) {
	var p string
	if err := json.Unmarshal(o["path"], &p); err != nil || o["path"] == nil {
		return "", invalid("%q of type file needs a string field \"path\"", what)
	}
	if e := checkVolumePath(p); e != nil {
		return "", e
	}
	return p, nil
}

func checkVolumePath(p string) *Error {
	if err := fsmount.CheckVolumePath(p); err != nil {
		return errorf(KindBadPath, fmt.Sprintf("path %s; use an absolute path under /volume/tmp/ or /volume/data/", err))
	}
	return nil
}

// strictUnmarshal decodes one JSON value and refuses trailing data.
func strictUnmarshal(data []byte, v any) error {
	d := json.NewDecoder(bytes.NewReader(data))
	if err := d.Decode(v); err != nil {
		return err
	}
	if d.More() {
		return fmt.Errorf("unexpected data after the JSON value")
	}
	if _, err := d.Token(); err == nil {
		return fmt.Errorf("unexpected data after the JSON value")
	}
	return nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// truncate keeps guest-supplied text in messages short: 200 bytes, cut
// as every bounded quote is (internal/text).
func truncate(s string) string {
	return text.Bound(s, 200)
}
