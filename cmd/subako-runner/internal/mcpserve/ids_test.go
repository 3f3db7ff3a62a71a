package mcpserve

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/subako/subako-runner/limits"
	"github.com/subako/subako-runner/runtime"
)

// idSpellings are ids a JSON-RPC client may send, each of which the SDK
// alone changes: numbers past int64 or float64's exact range, numbers that
// are integers in another spelling, fractions, a string with a lone
// surrogate escape (decoded to U+FFFD) and one with an escape that is not
// needed.
var idSpellings = []string{
	`12345678901234567890`, `9007199254740993`, `1.0`, `-0`, `-1.5e-7`, `1e0`, `0.5`, `-7`, `1`,
	`"\ud800"`, `"\u0041"`, `"1"`, `"x y"`, `""`,
}

// answerIDs reads the raw id of every JSON-RPC answer in out: one message
// per line, or SSE events ("data: " lines).
func answerIDs(t *testing.T, out string) []string {
	t.Helper()
	var ids []string
	for _, line := range strings.Split(out, "\n") {
		line = strings.TrimPrefix(strings.TrimSpace(line), "data: ")
		if !strings.HasPrefix(line, "{") {
			continue
		}
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("answer %q: %v", line, err)
		}
		if m.Method == "" {
			ids = append(ids, string(m.ID))
		}
	}
	return ids
}

const statelessMeta = `"params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}`

// TestIDsExactOnEveryTransport: every request is answered under its id
// spelled byte for byte as sent, over stdio, over stateless HTTP and in an
// HTTP session alike (over HTTP 12345678901234567890 came back as
// -9223372036854775808, 9007199254740993 as …992, 1.0 as 1, -0 as 0,
// -1.5e-7 as 0 and a lone surrogate as U+FFFD).
func TestIDsExactOnEveryTransport(t *testing.T) {
	f := newFixture(t)
	srv := New(f.load(t, testdata+"packages/cgreet"), Options{Logger: f.log})
	t.Cleanup(func() { srv.Close(context.Background()) })
	ts := httptest.NewServer(srv.Handler())
	t.Cleanup(ts.Close)
	want := slices.Sorted(slices.Values(idSpellings))
	t.Run("stdio", func(t *testing.T) {
		var in strings.Builder
		for _, id := range idSpellings {
			fmt.Fprintf(&in, `{"jsonrpc":"2.0","id":%s,"method":"tools/list",%s}`+"\n", id, statelessMeta)
		}
		var out bytes.Buffer
		if err := srv.ServeStdio(context.Background(), strings.NewReader(in.String()), &out); err != nil {
			t.Fatal(err)
		}
		if got := slices.Sorted(slices.Values(answerIDs(t, out.String()))); !slices.Equal(got, want) {
			t.Errorf("ids\n got %v\nwant %v", got, want)
		}
	})
	t.Run("stateless HTTP", func(t *testing.T) {
		var got []string
		for _, id := range idSpellings {
			_, body := rawPost(t, ts.URL, "", "2026-07-28", fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"method":"tools/list",%s}`, id, statelessMeta))
			got = append(got, answerIDs(t, body)...)
		}
		if slices.Sort(got); !slices.Equal(got, want) {
			t.Errorf("ids\n got %v\nwant %v", got, want)
		}
	})
	t.Run("HTTP session", func(t *testing.T) {
		var got []string
		for _, id := range idSpellings {
			resp, body := rawPost(t, ts.URL, "", "", strings.Replace(initializeBody, `"id":1`, `"id":`+id, 1))
			got = append(got, answerIDs(t, body)...)
			session := resp.Header.Get("Mcp-Session-Id")
			if session == "" {
				t.Fatalf("initialize with id %s: %d %s", id, resp.StatusCode, body)
			}
			rawPost(t, ts.URL, session, "2025-11-25", `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
			_, body = rawPost(t, ts.URL, session, "2025-11-25", fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"method":"tools/list"}`, id))
			got = append(got, answerIDs(t, body)...)
		}
		twice := slices.Sorted(slices.Values(append(slices.Clone(want), want...)))
		if slices.Sort(got); !slices.Equal(got, twice) {
			t.Errorf("ids (initialize and tools/list)\n got %v\nwant %v", got, twice)
		}
	})
}

// TestCancelOfAnUnknownIDIsIgnored: a notifications/cancelled naming an
// id the client never sent reaches no request (on stdio, requestId 0 was
// read as the layer's own id of the first request and cancelled it, whose
// answer then came back as {"code":0,"message":"context canceled"}), and
// every error answer carries a JSON-RPC code, never 0.
func TestCancelOfAnUnknownIDIsIgnored(t *testing.T) {
	f := newFixture(t)
	lim := limits.Default()
	lim.CallTimeout = time.Second // the call ends as a timeout crash, long after the cancels
	srv := New(f.load(t, misbehavePackage(t)), Options{Logger: f.log, Call: runtime.CallRequest{Limits: &lim}})
	t.Cleanup(func() { srv.Close(context.Background()) })
	var in strings.Builder
	fmt.Fprintf(&in, `{"jsonrpc":"2.0","id":"a","method":"tools/call","params":{"name":"timeout_sleep","arguments":{},%s}`+"\n", statelessMeta[len(`"params":{`):])
	for _, unknown := range []string{`0`, `1`, `"0"`, `"b"`, `-1`, `null`, `{}`} {
		fmt.Fprintf(&in, `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":%s}}`+"\n", unknown)
	}
	var out bytes.Buffer
	if err := srv.ServeStdio(context.Background(), strings.NewReader(in.String()), &out); err != nil {
		t.Fatal(err)
	}
	var answer struct {
		ID     json.RawMessage `json:"id"`
		Result *struct {
			IsError bool `json:"isError"`
		} `json:"result"`
		Error *struct {
			Code int `json:"code"`
		} `json:"error"`
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 1 || json.Unmarshal([]byte(lines[0]), &answer) != nil {
		t.Fatalf("want one answer, got:\n%s", out.String())
	}
	if string(answer.ID) != `"a"` || answer.Result == nil || !answer.Result.IsError {
		t.Errorf("the call was not answered with its timeout result: %s", lines[0])
	}
}

// TestErrorCodesAreJSONRPCs: an error the SDK would send with code 0 (a
// call refused while the server shuts down) carries -32603.
func TestErrorCodesAreJSONRPCs(t *testing.T) {
	f := newFixture(t)
	srv := New(f.load(t, testdata+"packages/cgreet"), Options{Logger: f.log})
	srv.Close(context.Background())
	var out bytes.Buffer
	in := `{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"greet","arguments":{"name":"Ada"},` + statelessMeta[len(`"params":{`):] + "}\n"
	if err := srv.ServeStdio(context.Background(), strings.NewReader(in), &out); err != nil {
		t.Fatal(err)
	}
	var answer struct {
		Error *struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if json.Unmarshal(out.Bytes(), &answer) != nil || answer.Error == nil {
		t.Fatalf("want an error answer, got %s", out.String())
	}
	if answer.Error.Code != -32603 {
		t.Errorf("code %d (%s), want -32603", answer.Error.Code, answer.Error.Message)
	}
}

// TestCancelFloodStoresNothing: notifications/cancelled with 1 MiB ids
// that name no request in flight are dropped, over HTTP and stdio alike
// (400 of them grew one HTTP session from 51 MB to 2.65 GB, held until the
// session's end); a cancel of a request in flight is held only while the
// request is.
func TestCancelFloodStoresNothing(t *testing.T) {
	f := newFixture(t)
	lim := limits.Default()
	lim.CallTimeout = time.Hour
	srv := New(f.load(t, misbehavePackage(t)), Options{Logger: f.log, Call: runtime.CallRequest{Limits: &lim}})
	t.Cleanup(func() { srv.Close(context.Background()) })
	table := &sessionTable{srv: srv, max: 4, byID: map[string]*sessionUse{}}
	ts := httptest.NewServer(srv.handler(table))
	t.Cleanup(ts.Close)
	session := initialized(t, ts.URL)
	ids := table.byID[session].ids
	big := `"` + strings.Repeat("x", 1<<20) + `"`
	for range 16 {
		resp, _ := rawPost(t, ts.URL, session, "2025-11-25", `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":`+big+`}}`)
		if resp.StatusCode != 202 {
			t.Fatalf("cancel: %d", resp.StatusCode)
		}
	}
	if n := ids.inFlightCount(); n != 0 {
		t.Errorf("after cancels of ids never sent the session holds %d entries", n)
	}
	// A request in flight is held, and freed once it ends (here, cancelled).
	answered := make(chan string, 1)
	go func() {
		_, b := rawPost(t, ts.URL, session, "2025-11-25", `{"jsonrpc":"2.0","id":`+big+`,"method":"tools/call","params":{"name":"timeout_sleep","arguments":{}}}`)
		answered <- b
	}()
	waitFor(t, "the call to start", func() bool {
		return f.logs.FilterMessage("module stderr").FilterField(zap.String("tool", "timeout_sleep")).Len() > 0
	})
	if n := ids.inFlightCount(); n != 2 {
		t.Errorf("a request in flight: %d entries, want 2", n)
	}
	rawPost(t, ts.URL, session, "2025-11-25", `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":`+big+`}}`)
	select {
	case b := <-answered:
		if strings.Contains(b, `"error"`) || strings.Contains(b, `"result"`) {
			t.Errorf("the cancelled request was answered: %s", b[:min(len(b), 200)])
		}
	case <-time.After(time.Minute):
		t.Fatal("the cancelled call's stream never ended")
	}
	waitFor(t, "the entry to be freed", func() bool { return ids.inFlightCount() == 0 })
}

// TestIDPathBounds: requests whose POST ended before their answer are kept
// for a late cancel, at most maxOrphans of them and maxOrphanBytes of their
// ids; a cancelled one is freed with its POST, and a cancel of an id not in
// flight stores nothing.
func TestIDPathBounds(t *testing.T) {
	p := newIDPath()
	for i := range 3 * maxOrphans {
		p.release(p.request(json.RawMessage(fmt.Sprint(i))))
	}
	if n := len(p.byOurs); n != maxOrphans {
		t.Errorf("%d requests held after their POSTs ended, want %d", n, maxOrphans)
	}
	if _, _, ok := p.cancel(json.RawMessage(fmt.Sprint(3*maxOrphans - 1))); !ok {
		t.Error("the last request released cannot be cancelled")
	}
	if _, _, ok := p.cancel(json.RawMessage("0")); ok {
		t.Error("the first request released is still held")
	}
	big := func(c byte) json.RawMessage {
		return json.RawMessage(`"` + strings.Repeat(string(c), maxOrphanBytes/3) + `"`)
	}
	for c := range byte(8) {
		p.release(p.request(big('a' + c)))
	}
	held := 0
	for _, call := range p.byOurs {
		held += len(call.theirs)
	}
	if held > maxOrphanBytes {
		t.Errorf("%d bytes of ids held, over %d", held, maxOrphanBytes)
	}
	q := newIDPath()
	ours := q.request(json.RawMessage(`"c"`))
	if _, newly, ok := q.cancel(json.RawMessage(`"c"`)); !ok || !newly {
		t.Error("a request in flight could not be cancelled")
	}
	q.release(ours)
	if _, _, ok := q.cancel(json.RawMessage(`"never"`)); ok || q.inFlightCount() != 0 {
		t.Errorf("after a cancelled request's POST ended and a cancel of an unknown id, %d entries", q.inFlightCount())
	}
}
