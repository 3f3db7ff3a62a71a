package protocol

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

func TestEncodeRequestAddsMetaAndKeepsParams(t *testing.T) {
	params := map[string]any{
		"name":      "greet",
		"arguments": json.RawMessage(`{"name":"<Ada & co>"}`),
		"_meta":     map[string]any{"progressToken": "p1", MetaProtocolVersion: "1999-01-01"},
	}
	line, err := EncodeRequest(StringID("call-0192f5c4"), MethodToolsCall, params, ClientInfo{Name: "subako", Version: "0.2.3"})
	if err != nil {
		t.Fatal(err)
	}
	want := `{"jsonrpc":"2.0","id":"call-0192f5c4","method":"tools/call","params":{"_meta":{"io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"subako","version":"0.2.3"},"io.modelcontextprotocol/protocolVersion":"2026-07-28","progressToken":"p1"},"arguments":{"name":"<Ada & co>"},"name":"greet"}}` + "\n"
	if string(line) != want {
		t.Errorf("line =\n%s\nwant\n%s", line, want)
	}
	if bytes.Count(line, []byte("\n")) != 1 {
		t.Error("the line must contain exactly one newline, at the end")
	}
	if m := params["_meta"].(map[string]any); m[MetaProtocolVersion] != "1999-01-01" || len(params) != 3 {
		t.Error("EncodeRequest modified the caller's params")
	}
}

func TestEncodeRequestWithoutParams(t *testing.T) {
	line, err := EncodeRequest(IntID(7), MethodDiscover, nil, ClientInfo{Name: "subako", Version: "dev"})
	if err != nil {
		t.Fatal(err)
	}
	want := `{"jsonrpc":"2.0","id":7,"method":"server/discover","params":{"_meta":{"io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"subako","version":"dev"},"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}` + "\n"
	if string(line) != want {
		t.Errorf("line = %s", line)
	}
}

func TestEncodeRequestRefusesBadInput(t *testing.T) {
	if _, err := EncodeRequest(ID{}, "m", nil, ClientInfo{}); err == nil {
		t.Error("zero id accepted")
	}
	if _, err := EncodeRequest(NullID(), "m", nil, ClientInfo{}); err == nil {
		t.Error("null id accepted")
	}
	if _, err := EncodeRequest(IntID(1), "", nil, ClientInfo{}); err == nil {
		t.Error("empty method accepted")
	}
	if _, err := EncodeRequest(IntID(1), "m", map[string]any{"_meta": "x"}, ClientInfo{}); err == nil {
		t.Error("non-object _meta accepted")
	}
}

func TestToolsListAndCallParams(t *testing.T) {
	empty := ""
	for _, tt := range []struct {
		cursor *string
		want   string
	}{{nil, `{}`}, {&empty, `{"cursor":""}`}} {
		b, _ := json.Marshal(ToolsListParams(tt.cursor))
		if string(b) != tt.want {
			t.Errorf("ToolsListParams = %s, want %s", b, tt.want)
		}
	}
	p, err := ToolsCallParams("greet", nil)
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := json.Marshal(p); string(b) != `{"arguments":{},"name":"greet"}` {
		t.Errorf("ToolsCallParams = %s", b)
	}
	for _, bad := range []string{`[]`, `"x"`, `{`, `null`} {
		if _, err := ToolsCallParams("greet", json.RawMessage(bad)); err == nil {
			t.Errorf("arguments %s accepted", bad)
		}
	}
}

// checkEncodeMatchesJSON fails unless appendRequest writes what
// encoding/json writes for the same request; with fast, it must not leave
// the request to encoding/json either.
func checkEncodeMatchesJSON(t *testing.T, id ID, method string, params map[string]any, client ClientInfo, fast bool) {
	t.Helper()
	var meta map[string]any
	if m, ok := params["_meta"].(map[string]any); ok {
		meta = m
	}
	want, werr := encodeRequestJSON(id, method, params, meta, client)
	got, ok := appendRequest(id, method, params, meta, client)
	if !ok {
		if fast {
			t.Fatalf("appendRequest refused %v %q %v", id, method, params)
		}
		return
	}
	if werr != nil {
		t.Fatalf("appendRequest encoded %v %q %v; encoding/json: %v", id, method, params, werr)
	}
	if string(got) != string(want) {
		t.Fatalf("appendRequest =\n%s\nencoding/json =\n%s", got, want)
	}
}

func TestEncodeRequestMatchesEncodingJSON(t *testing.T) {
	ids := []ID{IntID(1), IntID(-7), IntID(maxSafeInt), StringID(""), StringID("call-1"), StringID("<a&b>"), StringID("\u2028\u2029"), StringID("\x00\x1f\"\\\x7f"), StringID("\xff"), mustID(t, "1e400"), mustID(t, "-0.5E-3")}
	methods := []string{MethodToolsCall, MethodToolsList, MethodDiscover, "a<b>&c", "é\u2028\t\n\r\b\f", "\xed\xa0\x80"}
	args := []string{`{}`, `{"name":"Ada"}`, `{"html":"<script>&amp;</script>","ls":"\u2028 \u2029"}`, "{\"raw\":\"<>&\u2028\"}", " {\n\t\"a\" : [ 1 , 2 ] ,\r\n\"b\":\" spaced \\\" string \"} ", `{"n":-0,"e":1E+5,"s":"\ud800","u":"\u0000"}`, `{"deep":` + strings.Repeat("[", 70) + strings.Repeat("]", 70) + `}`}
	client := ClientInfo{Name: "subako <&>", Version: "0.2.3\u2028"}
	for _, id := range ids {
		for _, m := range methods {
			for _, a := range args {
				params, err := ToolsCallParams("greet<&>\u2029", json.RawMessage(a))
				if err != nil {
					t.Fatal(err)
				}
				checkEncodeMatchesJSON(t, id, m, params, client, !strings.Contains(a, "deep"))
			}
		}
	}
	empty := ""
	for _, params := range []map[string]any{
		nil, {}, ToolsListParams(nil), ToolsListParams(&empty), ToolsListParams(&methods[3]),
		{"_meta": map[string]any{"progressToken": "p<1>", MetaClientInfo: "replaced", "z": nil, "b": true, "f": false, "n": map[string]any(nil)}},
		{"_meta": map[string]any(nil), "x": json.RawMessage(nil), "y": struct{}{}, "c": ClientInfo{"n", "v"}},
		{"nested": map[string]any{"b": map[string]any{"a": "x"}, "a": []int{1}}}, // []int: encoding/json only
		{"num": 1.5}, {"raw": json.RawMessage(`{`)}, {"raw": json.RawMessage{}},
		{"é": "1", "e": "2", "E": "3", "_": "4", "~": "5", "": "6", "\xff": "7"},
	} {
		checkEncodeMatchesJSON(t, IntID(3), "m", params, client, false)
		line, err := EncodeRequest(IntID(3), "m", params, client)
		want, werr := encodeRequestJSON(IntID(3), "m", params, metaOf(params), client)
		if string(line) != string(want) || (err == nil) != (werr == nil) || err != nil && err.Error() != werr.Error() {
			t.Errorf("EncodeRequest(%v) = %s, %v; want %s, %v", params, line, err, want, werr)
		}
	}
}

func metaOf(params map[string]any) map[string]any {
	m, _ := params["_meta"].(map[string]any)
	return m
}

func FuzzEncodeRequestMatchesEncodingJSON(f *testing.F) {
	f.Add("call-1", int64(0), "tools/call", "greet", []byte(`{"name":"Ada"}`), "progressToken", "p")
	f.Add("", int64(4503599627370497), "a<b>", "\u2028", []byte(" {\"a\" : \"<&>\"} "), "", "\xff")
	f.Fuzz(func(t *testing.T, sid string, nid int64, method, name string, args []byte, metaKey, metaVal string) {
		id := IntID(nid)
		if sid != "" {
			id = StringID(sid)
		}
		if method == "" {
			return
		}
		params, err := ToolsCallParams(name, args)
		if err != nil {
			return
		}
		fast := nesting(args) < maxScanDepth
		checkEncodeMatchesJSON(t, id, method, params, ClientInfo{Name: metaKey, Version: metaVal}, fast)
		params["_meta"] = map[string]any{metaKey: metaVal}
		checkEncodeMatchesJSON(t, id, method, params, ClientInfo{Name: metaVal, Version: metaKey}, fast)
	})
}
