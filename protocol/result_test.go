package protocol

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

func code(err error) string {
	var pe *Error
	if errors.As(err, &pe) {
		return pe.Code
	}
	if err != nil {
		return "non-protocol error: " + err.Error()
	}
	return ""
}

func TestCheckComplete(t *testing.T) {
	tests := []struct {
		result string
		want   string
	}{
		{`{"content":[]}`, ""},
		{`{"resultType":"complete","content":[]}`, ""},
		{`{"resultType":"incomplete"}`, CodeResultNotComplete},
		{`{"resultType":"task"}`, CodeResultNotComplete},
		{`{"resultType":null}`, CodeResultNotComplete},
		{`{"resultType":"Complete"}`, CodeResultNotComplete},
		{`{"resultType":1}`, CodeResultNotComplete},
		{`{"ResultType":"task"}`, ""}, // member names are case-sensitive
		{`[1]`, ""},
		{`null`, ""},
	}
	for _, tt := range tests {
		if got := code(CheckComplete(json.RawMessage(tt.result))); got != tt.want {
			t.Errorf("CheckComplete(%s) = %q, want %q", tt.result, got, tt.want)
		}
	}
}

func TestParseDiscover(t *testing.T) {
	tests := []struct {
		name, result, want, mention string
	}{
		{"seed example", `{"supportedVersions":["2026-07-28"],"capabilities":{"tools":{}}}`, "", ""},
		{"several versions", `{"supportedVersions":["2025-06-18","2026-07-28"],"capabilities":{"tools":{"listChanged":false},"logging":{}},"serverInfo":{"name":"x","version":"1"},"resultType":"complete","ttlMs":0,"cacheScope":"global"}`, "", ""},
		{"old version only", `{"supportedVersions":["2025-06-18"],"capabilities":{"tools":{}}}`, CodeDiscoverUnsupported, "2025-06-18"},
		{"no versions", `{"capabilities":{"tools":{}}}`, CodeDiscoverUnsupported, "no supportedVersions"},
		{"versions not array", `{"supportedVersions":"2026-07-28","capabilities":{"tools":{}}}`, CodeDiscoverUnsupported, "array of strings"},
		{"versions with a number", `{"supportedVersions":["2026-07-28",1],"capabilities":{"tools":{}}}`, CodeDiscoverUnsupported, "array of strings"},
		{"no capabilities", `{"supportedVersions":["2026-07-28"]}`, CodeDiscoverUnsupported, "no capabilities"},
		{"capabilities not object", `{"supportedVersions":["2026-07-28"],"capabilities":[]}`, CodeDiscoverUnsupported, "must be an object"},
		{"no tools capability", `{"supportedVersions":["2026-07-28"],"capabilities":{"prompts":{}}}`, CodeDiscoverUnsupported, "tools capability"},
		{"tools capability true", `{"supportedVersions":["2026-07-28"],"capabilities":{"tools":true}}`, CodeDiscoverUnsupported, "capabilities.tools"},
		{"result not object", `[]`, CodeDiscoverUnsupported, "an array"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseDiscover(json.RawMessage(tt.result))
			if got := code(err); got != tt.want {
				t.Fatalf("err = %v, want code %q", err, tt.want)
			}
			if err != nil && !strings.Contains(err.Error(), tt.mention) {
				t.Errorf("message %q does not mention %q", err, tt.mention)
			}
		})
	}
}

func TestParseDiscoverKeepsTheOptionalMembers(t *testing.T) {
	tests := []struct {
		name, result                                        string
		resultType, ttlMs, cacheScope, serverInfo, capsWant string
	}{
		{"ttlMs only", `{"supportedVersions":["2026-07-28"],"capabilities":{"tools":{}},"serverInfo":{"name":"s","version":"1"},"ttlMs":1000}`,
			"", "1000", "", `{"name":"s","version":"1"}`, `{"tools":{}}`},
		{"all, serverInfo in _meta", `{"supportedVersions":["2026-07-28"],"capabilities":{"tools":{}},"resultType":"complete","ttlMs":0,"cacheScope":"public","_meta":{"io.modelcontextprotocol/serverInfo":{"name":"m"}}}`,
			`"complete"`, "0", `"public"`, `{"name":"m"}`, `{"tools":{}}`},
		{"serverInfo wins over _meta", `{"supportedVersions":["2026-07-28"],"capabilities":{"tools":{}},"serverInfo":{"name":"top"},"_meta":{"io.modelcontextprotocol/serverInfo":{"name":"m"}}}`,
			"", "", "", `{"name":"top"}`, `{"tools":{}}`},
		{"no serverInfo, _meta not an object", `{"supportedVersions":["2026-07-28"],"capabilities":{"tools":{}},"_meta":[1]}`,
			"", "", "", "", `{"tools":{}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, err := ParseDiscover(json.RawMessage(tt.result))
			if err != nil {
				t.Fatal(err)
			}
			for _, f := range []struct {
				what      string
				got, want string
				nilWanted bool
			}{
				{"resultType", string(d.ResultType), tt.resultType, d.ResultType == nil},
				{"ttlMs", string(d.TTLMs), tt.ttlMs, d.TTLMs == nil},
				{"cacheScope", string(d.CacheScope), tt.cacheScope, d.CacheScope == nil},
				{"serverInfo", string(d.ServerInfo), tt.serverInfo, d.ServerInfo == nil},
				{"capabilities", string(d.Capabilities), tt.capsWant, d.Capabilities == nil},
			} {
				if f.got != f.want || (f.want == "") != f.nilWanted {
					t.Errorf("%s = %q (nil %v), want %q", f.what, f.got, f.nilWanted, f.want)
				}
			}
		})
	}
}
