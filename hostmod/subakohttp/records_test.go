package subakohttp

import (
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
		w.Write([]byte("hello"))
	})
	c := newTestCall(t, callOpts{policy: PolicyConfig{Allow: []string{s.hostport("127.0.0.1")}, AllowPrivate: loopback()}})
	base := "http://" + s.hostport("127.0.0.1")
	wantOK(t, do(t, c, `{"method":"POST","url":"`+base+`/hop?token=x","body":{"type":"text","text":"abc"}}`))
	wantKind(t, do(t, c, `{"url":"http://elsewhere.example/"}`), KindHostNotAllowed)
	wantKind(t, do(t, c, `not json`), KindInvalidRequest)

	recs, dropped := c.Records()
	if len(recs) != 3 || dropped != 0 {
		t.Fatalf("%d records, %d dropped; want 3, 0", len(recs), dropped)
	}
	ok := recs[0]
	if ok.Method != "POST" || ok.Scheme != "http" || ok.Host != "127.0.0.1" || ok.Port != s.port ||
		ok.Status != 200 || ok.ErrorKind != "" || ok.Redirects != 1 || ok.BytesSent != 3 || ok.BytesReceived != 5 ||
		ok.Start.IsZero() || ok.Duration <= 0 {
		t.Fatalf("record of the ok request: %+v", ok)
	}
	if r := recs[1]; r.Host != "elsewhere.example" || r.Port != 80 || r.ErrorKind != KindHostNotAllowed || r.Status != 0 {
		t.Fatalf("record of the refused request: %+v", r)
	}
	if r := recs[2]; r.Method != "" || r.Host != "" || r.ErrorKind != KindInvalidRequest {
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
