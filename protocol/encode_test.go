package protocol

import (
	"bytes"
	"encoding/json"
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
