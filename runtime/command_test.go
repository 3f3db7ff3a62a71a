package runtime

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/subako/subako-runner/hostmod/subakohttp"
	"github.com/subako/subako-runner/internal/devtools/testguest"
	"github.com/subako/subako-runner/limits"
	"github.com/subako/subako-runner/wasi"
)

// heldReader answers its first Read with "hello\n", blocks its second
// until release is closed and then answers "more\n", and records every
// Read after that.
type heldReader struct {
	release chan struct{}
	waiting chan struct{} // closed when the second Read starts
	mu      sync.Mutex
	reads   int
}

func newHeldReader() *heldReader {
	return &heldReader{release: make(chan struct{}), waiting: make(chan struct{})}
}

func (r *heldReader) Read(p []byte) (int, error) {
	r.mu.Lock()
	r.reads++
	n := r.reads
	r.mu.Unlock()
	switch n {
	case 1:
		return copy(p, "hello\n"), nil
	case 2:
		close(r.waiting)
		<-r.release
		return copy(p, "more\n"), nil
	}
	return 0, io.EOF
}

func (r *heldReader) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.reads
}

// TestStdinCopierStopsWithTheCommand: once stopped (as RunCommand does
// when it returns), the copier never starts another Read of the caller's
// reader, drops what a Read in progress returns, and ends.
func TestStdinCopierStopsWithTheCommand(t *testing.T) {
	r := newHeldReader()
	stdin := wasi.NewStdin()
	stop, done := copyStdin(stdin, r)
	<-r.waiting // the first line was copied; the second Read is waiting
	stop()
	close(r.release)
	<-done
	if n := r.count(); n != 2 {
		t.Fatalf("the reader was read %d times; want 2 (none after stop)", n)
	}
}

// emptyCommand is a module whose _start returns at once without reading
// stdin.
var emptyCommand = []byte{
	0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00,
	0x01, 0x04, 0x01, 0x60, 0x00, 0x00, // type () -> ()
	0x03, 0x02, 0x01, 0x00, // one function of type 0
	0x05, 0x03, 0x01, 0x00, 0x01, // memory, min 1 page
	0x07, 0x13, 0x02, 0x06, '_', 's', 't', 'a', 'r', 't', 0x00, 0x00, 0x06, 'm', 'e', 'm', 'o', 'r', 'y', 0x02, 0x00,
	0x0a, 0x04, 0x01, 0x02, 0x00, 0x0b, // body: end
}

// TestRunCommandLeavesStdinAlone: a command that exits without reading
// stdin returns while the caller's reader is blocked in a Read.
func TestRunCommandLeavesStdinAlone(t *testing.T) {
	rt := newRuntime(t, nil)
	r := newHeldReader()
	defer close(r.release)
	res, err := rt.RunCommand(context.Background(), writeModule(t, emptyCommand), Command{Stdin: r})
	if err != nil || res.Crash != nil || res.ExitCode != 0 {
		t.Fatalf("RunCommand: %+v, %v", res, err)
	}
	// RunCommand returned although the reader never ended; the copier it
	// started is stopped (TestStdinCopierStopsWithTheCommand shows what
	// that guarantees).
	if n := r.count(); n > 2 {
		t.Fatalf("the reader was read %d times, want at most 2", n)
	}
}

// TestRunCommandStatsCountHTTPBytes: a command's stats carry the HTTP
// byte counts as a call's do (RunCommand's own copy of the stats lacked
// them).
func TestRunCommandStatsCountHTTPBytes(t *testing.T) {
	isolations(t, testRunCommandStatsCountHTTPBytes)
}

func testRunCommandStatsCountHTTPBytes(t *testing.T, newRT func(*limits.Limits) *Runtime) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, "hello from loopback")
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
	args, _ := json.Marshal(map[string]any{"request": map[string]any{"url": fmt.Sprintf("http://api.test:%d/hello", port)}})
	line := fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"http","arguments":%s}}`+"\n", args)
	var stdout strings.Builder
	res, err := rt.RunCommand(context.Background(), testguest.Go(t, guests+"httpprobe"), Command{Stdin: strings.NewReader(line), Stdout: &stdout, Network: policy})
	if err != nil || res.Crash != nil {
		t.Fatalf("RunCommand: %+v, %v", res, err)
	}
	if !strings.Contains(stdout.String(), "hello from loopback") {
		t.Fatalf("the request did not reach the server; stdout %s", stdout.String())
	}
	st := res.Stats
	if st.HTTPRequests < 1 || st.HTTPBytesReceived < int64(len("hello from loopback")) {
		t.Fatalf("stats %+v: want the request and the %d body bytes received", st, len("hello from loopback"))
	}
}
