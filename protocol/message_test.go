package protocol

import (
	"errors"
	"strings"
	"testing"
)

func TestClassifyKinds(t *testing.T) {
	tests := []struct {
		name, line string
		kind       Kind
		id         string // JSON text of the expected id ("" = zero)
		method     string
	}{
		{"response", `{"jsonrpc":"2.0","id":"discover-1","result":{"supportedVersions":["2026-07-28"]}}`, KindResponse, `"discover-1"`, ""},
		{"response with number id", `{"jsonrpc":"2.0","id":7,"result":{}}`, KindResponse, `7`, ""},
		{"response with null result", `{"jsonrpc":"2.0","id":7,"result":null}`, KindResponse, `7`, ""},
		{"response with big id", `{"jsonrpc":"2.0","id":12345678901234567890123,"result":{}}`, KindResponse, `12345678901234567890123`, ""},
		{"error response", `{"jsonrpc":"2.0","id":1,"error":{"code":-32602,"message":"unknown tool"}}`, KindErrorResponse, `1`, ""},
		{"error response with null id", `{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"parse error","data":{"x":1}}}`, KindErrorResponse, `null`, ""},
		{"request", `{"jsonrpc":"2.0","id":"s1","method":"sampling/createMessage","params":{}}`, KindRequest, `"s1"`, "sampling/createMessage"},
		{"request with null id", `{"jsonrpc":"2.0","id":null,"method":"roots/list"}`, KindRequest, `null`, "roots/list"},
		{"notification", `{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"hi"}}`, KindNotification, "", "notifications/message"},
		{"notification with null params", `{"jsonrpc":"2.0","method":"notifications/message","params":null}`, KindNotification, "", "notifications/message"},
		{"CRLF line end", "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\r", KindResponse, `1`, ""},
		{"surrounding spaces", ` {"jsonrpc":"2.0","id":1,"result":{}} `, KindResponse, `1`, ""},
		{"unknown extra member", `{"jsonrpc":"2.0","id":1,"result":{},"x-trace":"abc"}`, KindResponse, `1`, ""},
		{"escaped version", `{"jsonrpc":"\u0032.0","id":1,"result":{}}`, KindResponse, `1`, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, err := Classify([]byte(tt.line))
			if err != nil {
				t.Fatalf("Classify: %v", err)
			}
			if m.Kind != tt.kind {
				t.Errorf("kind = %v, want %v", m.Kind, tt.kind)
			}
			if tt.id == "" {
				if !m.ID.IsZero() {
					t.Errorf("id = %v, want none", m.ID)
				}
			} else if m.ID.Key() != mustID(t, tt.id).Key() {
				t.Errorf("id = %v, want %s", m.ID, tt.id)
			}
			if m.Method != tt.method {
				t.Errorf("method = %q, want %q", m.Method, tt.method)
			}
		})
	}
}

func TestClassifyKeepsErrorObject(t *testing.T) {
	m, err := Classify([]byte(`{"jsonrpc":"2.0","id":1,"error":{"code":-32602,"message":"Unknown tool: x","data":[1,2]}}`))
	if err != nil {
		t.Fatal(err)
	}
	if m.Error == nil || m.Error.Code != -32602 || m.Error.Message != "Unknown tool: x" || string(m.Error.Data) != "[1,2]" {
		t.Fatalf("error = %+v", m.Error)
	}
	e := ErrJSONRPC(m.Error)
	if e.Code != CodeJSONRPCError || !strings.Contains(e.Message, "-32602") || !strings.Contains(e.Message, "isError") {
		t.Errorf("ErrJSONRPC = %v", e)
	}
}

func TestClassifyResultDoesNotAliasLine(t *testing.T) {
	line := []byte(`{"jsonrpc":"2.0","id":"a","result":{"k":"v"}}`)
	m, err := Classify(line)
	if err != nil {
		t.Fatal(err)
	}
	for i := range line {
		line[i] = 'x'
	}
	if string(m.Result) != `{"k":"v"}` || m.ID.String() != `"a"` {
		t.Fatalf("message changed with the line: %s %v", m.Result, m.ID)
	}
}

func TestClassifyRejectsNonJSONRPC(t *testing.T) {
	tests := []struct {
		name, line, mention string
	}{
		{"empty line", ``, "blank line"},
		{"whitespace line", " \t\r", "only whitespace"},
		{"not utf-8", "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":\"\xff\"}", "UTF-8"},
		{"log text", `Server started on stdio`, "not JSON"},
		{"truncated", `{"jsonrpc":"2.0","id":1,"result":{`, "not JSON"},
		{"two messages on a line", `{"jsonrpc":"2.0","id":1,"result":{}}{"jsonrpc":"2.0","id":2,"result":{}}`, "not JSON"},
		{"batch", `[{"jsonrpc":"2.0","id":1,"result":{}}]`, "batch"},
		{"string", `"hello"`, "JSON string"},
		{"number", `42`, "JSON number"},
		{"boolean", `true`, "JSON boolean"},
		{"null", `null`, "null"},
		{"no jsonrpc", `{"id":1,"result":{}}`, `no "jsonrpc"`},
		{"jsonrpc 1.0", `{"jsonrpc":"1.0","id":1,"result":{}}`, `"jsonrpc":"1.0"`},
		{"jsonrpc number", `{"jsonrpc":2.0,"id":1,"result":{}}`, `"jsonrpc":2.0`},
		{"wrong case member", `{"JSONRPC":"2.0","id":1,"result":{}}`, `no "jsonrpc"`},
		{"wrong case result", `{"jsonrpc":"2.0","id":1,"Result":{}}`, "neither"},
		{"both result and error", `{"jsonrpc":"2.0","id":1,"result":{},"error":{"code":1,"message":"x"}}`, "both"},
		{"neither result nor error", `{"jsonrpc":"2.0","id":1}`, "neither"},
		{"empty object", `{"jsonrpc":"2.0"}`, "none of"},
		{"response without id", `{"jsonrpc":"2.0","result":{}}`, `no "id"`},
		{"result with null id", `{"jsonrpc":"2.0","id":null,"result":{}}`, "id null"},
		{"object id", `{"jsonrpc":"2.0","id":{"a":1},"result":{}}`, "object"},
		{"array id", `{"jsonrpc":"2.0","id":[1],"result":{}}`, "array"},
		{"bool id", `{"jsonrpc":"2.0","id":true,"result":{}}`, "boolean"},
		{"method and result", `{"jsonrpc":"2.0","id":1,"method":"x","result":{}}`, "both"},
		{"method not string", `{"jsonrpc":"2.0","method":5}`, "must be a string"},
		{"params scalar", `{"jsonrpc":"2.0","method":"x","params":"p"}`, "params"},
		{"request bad id", `{"jsonrpc":"2.0","method":"x","id":false}`, "boolean"},
		{"error not object", `{"jsonrpc":"2.0","id":1,"error":"boom"}`, "object"},
		{"error without code", `{"jsonrpc":"2.0","id":1,"error":{"message":"x"}}`, `no "code"`},
		{"error fractional code", `{"jsonrpc":"2.0","id":1,"error":{"code":1.5,"message":"x"}}`, "integer"},
		{"error string code", `{"jsonrpc":"2.0","id":1,"error":{"code":"-1","message":"x"}}`, "integer"},
		{"error without message", `{"jsonrpc":"2.0","id":1,"error":{"code":1}}`, `no "message"`},
		{"error number message", `{"jsonrpc":"2.0","id":1,"error":{"code":1,"message":2}}`, "string"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, err := Classify([]byte(tt.line))
			var pe *Error
			if !errors.As(err, &pe) {
				t.Fatalf("Classify = %+v, %v; want *Error", m, err)
			}
			if pe.Code != CodeNotJSONRPC {
				t.Errorf("code = %q", pe.Code)
			}
			if !strings.Contains(pe.Message, tt.mention) {
				t.Errorf("message %q does not mention %q", pe.Message, tt.mention)
			}
		})
	}
}

func TestClassifyMessageIsBounded(t *testing.T) {
	line := []byte(strings.Repeat("x", 1<<20))
	_, err := Classify(line)
	if err == nil || len(err.Error()) > 1000 {
		t.Fatalf("error length %d", len(err.Error()))
	}
}

func FuzzClassify(f *testing.F) {
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":1,"result":{}}`,
		`{"jsonrpc":"2.0","id":"x","error":{"code":-1,"message":"m","data":null}}`,
		`{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info"}}`,
		`{"jsonrpc":"2.0","id":1e400,"method":"m"}`,
		`[1]`, ``, "\xff", `{"jsonrpc":"2.0","id":-0.0e-0,"result":null}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		m, err := Classify(line)
		if err != nil {
			var pe *Error
			if !errors.As(err, &pe) || pe.Code != CodeNotJSONRPC || pe.Message == "" {
				t.Fatalf("error %v is not a not_jsonrpc *Error", err)
			}
			return
		}
		switch m.Kind {
		case KindResponse:
			if m.ID.IsZero() || m.ID.IsNull() || m.Result == nil {
				t.Fatalf("bad response %+v", m)
			}
		case KindErrorResponse:
			if m.ID.IsZero() || m.Error == nil {
				t.Fatalf("bad error response %+v", m)
			}
		case KindRequest:
			if m.ID.IsZero() {
				t.Fatalf("request without id %+v", m)
			}
		case KindNotification:
			if !m.ID.IsZero() {
				t.Fatalf("notification with id %+v", m)
			}
		default:
			t.Fatalf("kind %v without error", m.Kind)
		}
		if !m.ID.IsZero() {
			b, err := m.ID.MarshalJSON()
			if err != nil {
				t.Fatal(err)
			}
			if mustID(t, string(b)).Key() != m.ID.Key() {
				t.Fatalf("id %v does not round-trip", m.ID)
			}
		}
	})
}

func TestCrashErrorsNameTheID(t *testing.T) {
	id := StringID("call-1")
	if e := ErrUnexpectedIDFor(id, "", false); e.Code != CodeUnexpectedID || !strings.Contains(e.Message, `"call-1"`) || !strings.Contains(e.Message, "never sent") {
		t.Errorf("%v", e)
	}
	if e := ErrUnexpectedIDFor(id, "", true); !strings.Contains(e.Message, "second time") {
		t.Errorf("%v", e)
	}
	if e := ErrServerRequest("sampling/createMessage", IntID(3)); e.Code != CodeServerRequest || !strings.Contains(e.Message, "sampling/createMessage") {
		t.Errorf("%v", e)
	}
	long, _ := NumberID(strings.Repeat("9", 100000))
	if e := ErrUnexpectedIDFor(long, StringID("call-1").Key(), false); len(e.Message) > 500 {
		t.Errorf("message is %d bytes", len(e.Message))
	}
	if e := ErrTooManyPages(16); e.Code != CodeTooManyPages || !strings.Contains(e.Message, "16") {
		t.Errorf("%v", e)
	}
}

func BenchmarkClassifyLargeResult(b *testing.B) {
	line := []byte(`{"jsonrpc":"2.0","id":"call-1","result":{"content":[{"type":"text","text":"` + strings.Repeat("x", 1<<20) + `"}]}}`)
	b.SetBytes(int64(len(line)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Classify(line); err != nil {
			b.Fatal(err)
		}
	}
}
