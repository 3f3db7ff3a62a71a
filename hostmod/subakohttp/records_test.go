package subakohttp

import (
	"io"
	"net/http"
	"strings"
	"testing"
)

// TestRecordsDescribeEachRequest: every request the guest makes leaves a
// record for tracing — where to, how it ended, sizes, redirects — and
// nothing of the path, query, headers or body.
func TestRecordsDescribeEachRequest(t *testing.T) {
	s := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/hop" {
			http.Redirect(w, r, "/final?secret=1", http.StatusFound)
			return
		}
		io.Copy(io.Discard, r.Body) // the body is read before the answer: all of it is sent
		w.Write([]byte("hello"))
	})
	c := newTestCall(t, callOpts{policy: PolicyConfig{Allow: []string{s.hostport("127.0.0.1")}, AllowPrivate: loopback()}})
	base := "http://" + s.hostport("127.0.0.1")
	wantOK(t, do(t, c, `{"method":"POST","url":"`+base+`/echo?token=x","body":{"type":"text","text":"abc"}}`))
	wantOK(t, do(t, c, `{"url":"`+base+`/hop?token=x"}`))
	wantKind(t, do(t, c, `{"url":"http://elsewhere.example/"}`), KindHostNotAllowed)
	wantKind(t, do(t, c, `not json`), KindInvalidRequest)

	recs, dropped := c.Records()
	if len(recs) != 4 || dropped != 0 {
		t.Fatalf("%d records, %d dropped; want 4, 0", len(recs), dropped)
	}
	if r := recs[0]; r.Method != "POST" || r.Scheme != "http" || r.Host != "127.0.0.1" || r.Port != s.port ||
		r.Status != 200 || r.ErrorKind != "" || r.Redirects != 0 || r.BytesSent != 3 || r.BytesReceived != 5 ||
		r.Start.IsZero() || r.Duration <= 0 {
		t.Fatalf("record of the POST: %+v", r)
	}
	if r := recs[1]; r.Method != "GET" || r.Status != 200 || r.Redirects != 1 || r.BytesSent != 0 || r.BytesReceived != 5 {
		t.Fatalf("record of the redirected GET: %+v", r)
	}
	if r := recs[2]; r.Host != "elsewhere.example" || r.Port != 80 || r.ErrorKind != KindHostNotAllowed || r.Status != 0 {
		t.Fatalf("record of the refused request: %+v", r)
	}
	if r := recs[3]; r.Method != "" || r.Host != "" || r.ErrorKind != KindInvalidRequest {
		t.Fatalf("record of the unparsable request: %+v", r)
	}
	for _, r := range recs {
		if s := strings.ToLower(r.Host + r.Scheme + r.Method); strings.Contains(s, "token") || strings.Contains(s, "secret") || strings.Contains(s, "/") {
			t.Fatalf("a record holds part of a URL's path or query: %+v", r)
		}
	}
}

// TestRecordsAreBounded: a guest looping over requests makes the host keep
// at most maxRecords of them, and count the rest.
func TestRecordsAreBounded(t *testing.T) {
	c := newTestCall(t, callOpts{})
	for range maxRecords + 10 {
		do(t, c, `{}`)
	}
	recs, dropped := c.Records()
	if len(recs) != maxRecords || dropped != 10 {
		t.Fatalf("%d records, %d dropped; want %d, 10", len(recs), dropped, maxRecords)
	}
}
