package runtime

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/subako/subako-runner/hostmod/subakohttp"
	"github.com/subako/subako-runner/internal/devtools/testguest"
	"github.com/subako/subako-runner/limits"
)

// httpCall calls the httpprobe guest's http tool with one subako_http
// request and returns the decoded response document.
func httpCall(t *testing.T, pkg *Package, policy *subakohttp.Policy, lim *limits.Limits, data string, request string) (*Result, map[string]any) {
	t.Helper()
	args := fmt.Sprintf(`{"request":%s}`, request)
	res := call(t, pkg, CallRequest{Tool: "http", Arguments: json.RawMessage(args), Network: policy, Limits: lim, Data: data})
	if res.Outcome == OutcomeCrashed {
		t.Fatalf("crashed: %+v", res.Crash)
	}
	var doc map[string]any
	if err := json.Unmarshal(res.Parsed.StructuredContent, &doc); err != nil {
		t.Fatalf("structuredContent %s: %v", res.Parsed.StructuredContent, err)
	}
	return res, doc
}

func errorKind(doc map[string]any) string {
	e, _ := doc["error"].(map[string]any)
	k, _ := e["kind"].(string)
	return k
}

func TestSubakoHTTPThroughACall(t *testing.T) {
	isolations(t, testSubakoHTTPThroughACall)
}

func testSubakoHTTPThroughACall(t *testing.T, newRT func(*limits.Limits) *Runtime) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/hello":
			w.Header().Set("X-Reply", "yes")
			fmt.Fprint(w, "hello from loopback")
		case "/big":
			w.Write([]byte(strings.Repeat("x", 300<<10)))
		}
	}))
	defer srv.Close()
	port := srv.Listener.Addr().(*net.TCPAddr).Port
	policy, err := subakohttp.NewPolicy(subakohttp.PolicyConfig{
		Allow:        []string{fmt.Sprintf("api.test:%d", port)},
		Resolve:      map[string][]string{fmt.Sprintf("api.test:%d", port): {"127.0.0.1"}},
		AllowPrivate: []string{"127.0.0.1/32"},
	})
	if err != nil {
		t.Fatal(err)
	}
	rt := newRT(nil)
	pkg := load(t, rt, makePackage(t, testguest.Go(t, guests+"httpprobe"), nil))

	// Discovery has no network: the guest's probe was answered host_not_allowed.
	tool, _ := pkg.Tool("http")
	if !strings.Contains(tool.Tool.Description, "host_not_allowed") {
		t.Errorf("discovery request was not refused: %q", tool.Tool.Description)
	}

	base := fmt.Sprintf("http://api.test:%d", port)
	res, doc := httpCall(t, pkg, policy, nil, "", fmt.Sprintf(`{"url":%q}`, base+"/hello"))
	ok, _ := doc["ok"].(map[string]any)
	if ok == nil || ok["status"] != float64(200) || !strings.Contains(fmt.Sprint(ok["body"]), "hello from loopback") {
		t.Fatalf("inline GET: %v", doc)
	}
	if res.Stats.HTTPRequests != 1 {
		t.Errorf("stats count %d HTTP requests, want 1", res.Stats.HTTPRequests)
	}

	// A body over the inline cap must go to a file, charged to the budget.
	data := t.TempDir()
	_, doc = httpCall(t, pkg, policy, nil, data, fmt.Sprintf(`{"url":%q}`, base+"/big"))
	if errorKind(doc) != "too_large" {
		t.Fatalf("inline 300 KiB: %v", doc)
	}
	res, doc = httpCall(t, pkg, policy, nil, data, fmt.Sprintf(`{"url":%q,"output":{"type":"file","path":"/volume/data/big.bin"}}`, base+"/big"))
	if doc["ok"] == nil {
		t.Fatalf("file output: %v", doc)
	}
	if b, err := os.ReadFile(filepath.Join(data, "big.bin")); err != nil || len(b) != 300<<10 {
		t.Fatalf("file output on the host: %d bytes, %v", len(b), err)
	}
	// The body only: the new file's entry has its own cap.
	if want := int64(300 << 10); res.Stats.BytesWritten != want {
		t.Errorf("bytesWritten %d, want %d", res.Stats.BytesWritten, want)
	}

	// The write budget is shared with the WASI layer's: a budget smaller
	// than the body refuses the file.
	small := limits.Default()
	small.WriteBudget = 100 << 10
	_, doc = httpCall(t, pkg, policy, &small, data, fmt.Sprintf(`{"url":%q,"output":{"type":"file","path":"/volume/data/big2.bin"}}`, base+"/big"))
	if errorKind(doc) != "write_budget" {
		t.Fatalf("over budget: %v", doc)
	}

	// Without a policy every request is refused; loopback by IP is a
	// forbidden destination even when the IP is allowlisted.
	_, doc = httpCall(t, pkg, nil, nil, "", fmt.Sprintf(`{"url":%q}`, base+"/hello"))
	if errorKind(doc) != "host_not_allowed" {
		t.Fatalf("no policy: %v", doc)
	}
	strict, err := subakohttp.NewPolicy(subakohttp.PolicyConfig{Allow: []string{fmt.Sprintf("127.0.0.1:%d", port)}})
	if err != nil {
		t.Fatal(err)
	}
	_, doc = httpCall(t, pkg, strict, nil, "", fmt.Sprintf(`{"url":"http://127.0.0.1:%d/hello"}`, port))
	if errorKind(doc) != "forbidden_destination" {
		t.Fatalf("loopback without override: %v", doc)
	}
	// A bad path for a file output.
	_, doc = httpCall(t, pkg, policy, nil, "", fmt.Sprintf(`{"url":%q,"output":{"type":"file","path":"/package/x"}}`, base+"/hello"))
	if errorKind(doc) != "bad_path" {
		t.Fatalf("bad path: %v", doc)
	}
}
