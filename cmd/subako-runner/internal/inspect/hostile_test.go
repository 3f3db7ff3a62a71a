package inspect

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/subako/subako-runner/internal/devtools/testguest"
)

// hostilePackage is testdata/inspecthostile: its tool drop writes
// evil.html, evil.js, evil.svg and png.html (PNG magic bytes, then HTML) to
// /volume/tmp and links each one.
func hostilePackage(t testing.TB) string {
	return testguest.Package(t, testguest.Go(t, "../../../../testdata/inspecthostile"), "inspecthostile", nil)
}

// TestFilesAreNeverActiveContent: whatever a module names its files and
// whatever bytes it writes, a file of the view is served so that no browser
// runs it on the page's origin: an attachment of no executable type, or,
// for an image whose magic bytes say so, that image type; always nosniff and
// a sandbox CSP (an opaque origin with no scripts, even if rendered).
func TestFilesAreNeverActiveContent(t *testing.T) {
	srv, hs := newServer(t, hostilePackage(t))
	var e callEntry
	do(t, hs, srv.Token(), "POST", "/api/call", map[string]any{"tool": "drop"}, &e)
	files := map[string]int{}
	for _, v := range e.View {
		if v.File != nil {
			files[v.Path] = *v.File
		}
	}
	for _, tc := range []struct {
		path        string
		contentType string // "" means application/octet-stream, as an attachment
	}{
		{"/volume/tmp/evil.html", ""},
		{"/volume/tmp/evil.js", ""},
		{"/volume/tmp/evil.svg", ""},
		{"/volume/tmp/png.html", "image/png"},
	} {
		t.Run(tc.path, func(t *testing.T) {
			n, ok := files[tc.path]
			if !ok {
				t.Fatalf("the view offers no %s: %+v", tc.path, e.View)
			}
			req, _ := http.NewRequest("GET", hs.URL+"/api/calls/"+itoa(e.ID)+"/files/"+itoa(n), nil)
			req.Header.Set(tokenHeader, srv.Token())
			resp, err := hs.Client().Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK || len(body) == 0 {
				t.Fatalf("status %d, %d bytes", resp.StatusCode, len(body))
			}
			h := resp.Header
			if h.Get("X-Content-Type-Options") != "nosniff" {
				t.Errorf("X-Content-Type-Options %q", h.Get("X-Content-Type-Options"))
			}
			if csp := h.Get("Content-Security-Policy"); !strings.HasPrefix(csp, "sandbox") || strings.Contains(csp, "allow-scripts") {
				t.Errorf("Content-Security-Policy %q, want a sandbox without scripts", csp)
			}
			ct, disp := h.Get("Content-Type"), h.Get("Content-Disposition")
			if tc.contentType == "" {
				if ct != "application/octet-stream" || !strings.HasPrefix(disp, "attachment") {
					t.Errorf("Content-Type %q, Content-Disposition %q: want an octet-stream attachment", ct, disp)
				}
			} else if ct != tc.contentType {
				t.Errorf("Content-Type %q, want %q (from the magic bytes)", ct, tc.contentType)
			}
		})
	}
}
