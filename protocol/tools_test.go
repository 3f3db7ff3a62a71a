package protocol

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestParseToolsPage(t *testing.T) {
	p, err := ParseToolsPage(json.RawMessage(`{"tools":[{"name":"greet","description":"Greet someone by name.","inputSchema":{"type":"object","properties":{"name":{"type":"string","description":"Who to greet."}},"required":["name"]}}]}`))
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Tools) != 1 || p.Tools[0].Name != "greet" || p.Tools[0].Description != "Greet someone by name." || p.NextCursor != nil {
		t.Fatalf("page = %+v", p)
	}
	p, err = ParseToolsPage(json.RawMessage(`{"tools":[],"nextCursor":""}`))
	if err != nil || p.NextCursor == nil || *p.NextCursor != "" {
		t.Fatalf("an empty nextCursor must be a cursor: %+v %v", p, err)
	}
	p, err = ParseToolsPage(json.RawMessage(`{"tools":[],"nextCursor":null}`))
	if err != nil || p.NextCursor != nil {
		t.Fatalf("a null nextCursor must end the list: %+v %v", p, err)
	}
	p, err = ParseToolsPage(json.RawMessage(`{"tools":[1,"x",{"name":5}]}`))
	if err != nil || len(p.Tools) != 3 {
		t.Fatalf("malformed tools must be kept for ValidateTools: %+v %v", p, err)
	}
	for _, bad := range []string{`[]`, `{}`, `{"tools":{}}`, `{"tools":null}`, `{"tools":[],"nextCursor":3}`} {
		if _, err := ParseToolsPage(json.RawMessage(bad)); code(err) != CodeInvalidResult {
			t.Errorf("ParseToolsPage(%s) = %v, want invalid_result", bad, err)
		}
	}
}

func TestToolMarshalReproducesWhatTheModuleSent(t *testing.T) {
	raw := `{"name":"t","inputSchema":{"type":"object"},"annotations":{"readOnlyHint":true},"icons":[{"src":"data:x"}],"_meta":{"k":1},"x-extra":[1,2]}`
	p, err := ParseToolsPage(json.RawMessage(`{"tools":[` + raw + `]}`))
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(p.Tools[0])
	if err != nil || string(b) != raw {
		t.Fatalf("Marshal = %s, %v\nwant %s", b, err, raw)
	}
	tl := p.Tools[0]
	if string(tl.Annotations) != `{"readOnlyHint":true}` || string(tl.Icons) != `[{"src":"data:x"}]` || string(tl.Meta) != `{"k":1}` || !tl.Has("x-extra") || tl.Has("title") {
		t.Errorf("fields: %+v", tl)
	}
}

// tools builds a page of tools from JSON snippets and parses it.
func tools(t *testing.T, items ...string) []Tool {
	t.Helper()
	p, err := ParseToolsPage(json.RawMessage(`{"tools":[` + strings.Join(items, ",") + `]}`))
	if err != nil {
		t.Fatal(err)
	}
	return p.Tools
}

const okSchema = `{"type":"object"}`

func tool(name, rest string) string {
	if rest != "" {
		rest = "," + rest
	}
	return fmt.Sprintf(`{"name":%q,"inputSchema":%s%s}`, name, okSchema, rest)
}

func TestValidateToolsAcceptsGoodLists(t *testing.T) {
	tests := []struct {
		name  string
		items []string
	}{
		{"seed example", []string{`{"name":"greet","description":"Greet someone by name.","inputSchema":{"type":"object","properties":{"name":{"type":"string","description":"Who to greet."}},"required":["name"]}}`}},
		{"all name characters", []string{tool("Az09_.-", "")}},
		{"128-character name", []string{tool(strings.Repeat("a", 128), "")}},
		{"case-sensitive names", []string{tool("a", ""), tool("A", "")}},
		{"output schema", []string{tool("t", `"outputSchema":{"type":"object","properties":{"n":{"type":"integer"}}}`)}},
		{"non-object output schema", []string{tool("t", `"outputSchema":{"type":"array"}`)}},
		{"boolean output schema", []string{tool("t", `"outputSchema":true`)}},
		{"null optional members", []string{tool("t", `"title":null,"description":null,"outputSchema":null,"annotations":null`)}},
		{"local refs", []string{`{"name":"t","inputSchema":{"type":"object","$defs":{"n":{"type":"string"}},"properties":{"a":{"$ref":"#/$defs/n"}}}}`}},
		{"draft-07", []string{`{"name":"t","inputSchema":{"$schema":"http://json-schema.org/draft-07/schema#","type":"object","definitions":{"n":{"type":"string"}},"properties":{"a":{"$ref":"#/definitions/n"}}}}`}},
		{"$id with local ref", []string{`{"name":"t","inputSchema":{"$id":"https://example.com/s.json","type":"object","$defs":{"n":{"type":"string"}},"properties":{"a":{"$ref":"#/$defs/n"}}}}`}},
		{"same $id in two tools", []string{`{"name":"a","inputSchema":{"$id":"https://example.com/s.json","type":"object"}}`, `{"name":"b","inputSchema":{"$id":"https://example.com/s.json","type":"object"}}`}},
		{"ECMAScript lookahead pattern", []string{`{"name":"t","inputSchema":{"type":"object","properties":{"email":{"type":"string","pattern":"^(?!\\.)[^@]+@[^@]+$"}}}}`}},
		{"ECMAScript unicode escape", []string{`{"name":"t","inputSchema":{"type":"object","properties":{"s":{"type":"string","pattern":"^\\u00e9+$"}}}}`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			set, errs := ValidateTools(tools(t, tt.items...), 1024)
			if len(errs) > 0 {
				t.Fatalf("errors: %v", errs)
			}
			if set.Len() != len(tt.items) {
				t.Errorf("Len = %d", set.Len())
			}
			for _, tl := range set.Tools() {
				if c, ok := set.Lookup(tl.Name); !ok || c.Tool.Name != tl.Name {
					t.Errorf("Lookup(%q) failed", tl.Name)
				}
			}
		})
	}
}

func TestValidateToolsRejections(t *testing.T) {
	dir := t.TempDir()
	local := filepath.Join(dir, "defs.json")
	if err := os.WriteFile(local, []byte(`{"type":"string"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name     string
		items    []string
		max      int
		code     string
		mentions []string
	}{
		{"no tools", nil, 1024, CodeNoTools, []string{"at least one"}},
		{"too many tools", []string{tool("a", ""), tool("b", ""), tool("c", "")}, 2, CodeInvalidTool, []string{"3 tools", "at most 2"}},
		{"duplicate", []string{tool("a", ""), tool("b", ""), tool("a", "")}, 1024, CodeDuplicateTool, []string{`"a"`, "tool #1", "tool #3"}},
		{"tool not an object", []string{`"greet"`}, 1024, CodeInvalidTool, []string{"tool #1", "a string"}},
		{"no name", []string{`{"inputSchema":{"type":"object"}}`}, 1024, CodeInvalidTool, []string{"no name"}},
		{"name not string", []string{`{"name":5,"inputSchema":{"type":"object"}}`}, 1024, CodeInvalidTool, []string{"a number"}},
		{"empty name", []string{tool("", "")}, 1024, CodeInvalidTool, []string{"empty"}},
		{"129-character name", []string{tool(strings.Repeat("a", 129), "")}, 1024, CodeInvalidTool, []string{"129"}},
		{"space in name", []string{tool("get weather", "")}, 1024, CodeInvalidTool, []string{"' '"}},
		{"slash in name", []string{tool("a/b", "")}, 1024, CodeInvalidTool, []string{"'/'"}},
		{"non-ASCII name", []string{tool("café", "")}, 1024, CodeInvalidTool, []string{"'é'"}},
		{"no inputSchema", []string{`{"name":"t"}`}, 1024, CodeInvalidTool, []string{`("t")`, "no inputSchema"}},
		{"inputSchema null", []string{`{"name":"t","inputSchema":null}`}, 1024, CodeInvalidTool, []string{"no inputSchema"}},
		{"inputSchema true", []string{`{"name":"t","inputSchema":true}`}, 1024, CodeInvalidTool, []string{"a boolean"}},
		{"inputSchema without type", []string{`{"name":"t","inputSchema":{"properties":{}}}`}, 1024, CodeInvalidTool, []string{`no "type"`}},
		{"inputSchema type string", []string{`{"name":"t","inputSchema":{"type":"string"}}`}, 1024, CodeInvalidTool, []string{`"type":"string"`}},
		{"inputSchema type list", []string{`{"name":"t","inputSchema":{"type":["object","null"]}}`}, 1024, CodeInvalidTool, []string{`must be "object"`}},
		{"invalid schema keyword value", []string{`{"name":"t","inputSchema":{"type":"object","properties":{"a":{"minLength":-1}}}}`}, 1024, CodeInvalidTool, []string{"inputSchema does not compile"}},
		{"invalid regex", []string{`{"name":"t","inputSchema":{"type":"object","properties":{"a":{"type":"string","pattern":"["}}}}`}, 1024, CodeInvalidTool, []string{"does not compile"}},
		{"remote ref", []string{`{"name":"t","inputSchema":{"type":"object","properties":{"a":{"$ref":"https://schemas.example.com/a.json"}}}}`}, 1024, CodeInvalidTool, []string{"https://schemas.example.com/a.json", "$defs"}},
		{"relative ref", []string{`{"name":"t","inputSchema":{"type":"object","properties":{"a":{"$ref":"defs.json#/x"}}}}`}, 1024, CodeInvalidTool, []string{`"defs.json"`}},
		{"file ref to a real file", []string{`{"name":"t","inputSchema":{"type":"object","properties":{"a":{"$ref":"file://` + local + `"}}}}`}, 1024, CodeInvalidTool, []string{local}},
		{"missing local ref", []string{`{"name":"t","inputSchema":{"type":"object","properties":{"a":{"$ref":"#/$defs/nope"}}}}`}, 1024, CodeInvalidTool, []string{"nope"}},
		{"unknown $schema", []string{`{"name":"t","inputSchema":{"$schema":"https://example.com/my-meta","type":"object"}}`}, 1024, CodeInvalidTool, []string{"not a supported draft"}},
		{"output schema remote ref", []string{tool("t", `"outputSchema":{"$ref":"http://example.com/o.json"}`)}, 1024, CodeInvalidTool, []string{"outputSchema", "http://example.com/o.json"}},
		{"output schema not a schema", []string{tool("t", `"outputSchema":"object"`)}, 1024, CodeInvalidTool, []string{"outputSchema does not compile"}},
		{"title not string", []string{tool("t", `"title":1`)}, 1024, CodeInvalidTool, []string{"title is a number"}},
		{"description not string", []string{tool("t", `"description":["x"]`)}, 1024, CodeInvalidTool, []string{"description is an array"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var ts []Tool
			if tt.items != nil {
				ts = tools(t, tt.items...)
			}
			set, errs := ValidateTools(ts, tt.max)
			if set != nil || len(errs) == 0 {
				t.Fatalf("accepted: %v", set)
			}
			found := false
			for _, e := range errs {
				if e.Code != tt.code {
					continue
				}
				ok := true
				for _, m := range tt.mentions {
					ok = ok && strings.Contains(e.Message, m)
				}
				found = found || ok
			}
			if !found {
				t.Errorf("no %s error mentioning %q in %v", tt.code, tt.mentions, errs)
			}
		})
	}
}

func TestValidateToolsReportsEveryProblem(t *testing.T) {
	_, errs := ValidateTools(tools(t, `{"name":"a b"}`, tool("ok", ""), `{"name":"c","inputSchema":{"type":"string"},"title":3}`, tool("ok", "")), 1024)
	if len(errs) != 5 { // a b: name + no schema; c: type + title; ok: duplicate
		t.Errorf("got %d errors, want 5: %v", len(errs), errs)
	}
	for _, e := range errs {
		if !strings.Contains(e.Message, "tool #") {
			t.Errorf("error does not name its tool: %v", e)
		}
	}
}

func TestValidateToolsBoundsTheReport(t *testing.T) {
	items := make([]string, 5000)
	for i := range items {
		items[i] = `{"name":"bad name"}`
	}
	_, errs := ValidateTools(tools(t, items...), 0)
	if len(errs) != maxReported+1 {
		t.Errorf("got %d errors, want %d", len(errs), maxReported+1)
	}
}

func TestValidateToolsWarnings(t *testing.T) {
	set, errs := ValidateTools(tools(t,
		tool(strings.Repeat("n", 65), `"description":"d"`),
		`{"name":"t","description":"d","inputSchema":{"type":"object","properties":{"a":{"type":"string","pattern":"^(?=a)a$"}}}}`,
		tool("nodesc", ""),
	), 0)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	w := fmt.Sprint(set.Warnings())
	for _, m := range []string{"65 characters", "ECMAScript", "no description"} {
		if !strings.Contains(w, m) {
			t.Errorf("warnings %s do not mention %q", w, m)
		}
	}
}

func TestCompiledToolValidates(t *testing.T) {
	set, errs := ValidateTools(tools(t, `{"name":"t","inputSchema":{"type":"object","properties":{"n":{"type":"integer"}},"required":["n"]},"outputSchema":{"type":"object","properties":{"big":{"const":12345678901234567890123}},"required":["big"]}}`, tool("plain", "")), 0)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	c, _ := set.Lookup("t")
	if !c.HasOutputSchema() {
		t.Error("HasOutputSchema = false")
	}
	if err := c.ValidateInput(json.RawMessage(`{"n":3}`)); err != nil {
		t.Error(err)
	}
	if err := c.ValidateInput(json.RawMessage(`{"n":"3"}`)); err == nil {
		t.Error("string n accepted")
	}
	if err := c.ValidateOutput(json.RawMessage(`{"big":12345678901234567890123}`)); err != nil {
		t.Errorf("exact big number rejected: %v", err)
	}
	if err := c.ValidateOutput(json.RawMessage(`{"big":12345678901234567890124}`)); err == nil {
		t.Error("a different big number passed (precision lost)")
	}
	if err := c.ValidateOutput(json.RawMessage(`{`)); err == nil {
		t.Error("invalid JSON passed")
	}
	p, _ := set.Lookup("plain")
	if err := p.ValidateOutput(json.RawMessage(`[1,2]`)); err != nil {
		t.Errorf("no outputSchema, yet %v", err)
	}
	if _, ok := set.Lookup("T"); ok {
		t.Error("Lookup is not case-sensitive")
	}
}

func TestValidateToolsAcceptsGoBuiltTools(t *testing.T) {
	set, errs := ValidateTools([]Tool{{Name: "go", InputSchema: json.RawMessage(okSchema)}}, 0)
	if len(errs) > 0 || set.Len() != 1 {
		t.Fatalf("%v %v", set, errs)
	}
}

func FuzzToolsPage(f *testing.F) {
	f.Add([]byte(`{"tools":[{"name":"greet","inputSchema":{"type":"object","properties":{"name":{"type":"string"}}}}]}`))
	f.Add([]byte(`{"tools":[{"name":"a","inputSchema":{"type":"object","$ref":"#/$defs/x","$defs":{"x":{}}}},{"name":"a"}],"nextCursor":""}`))
	f.Add([]byte(`{"tools":[{"name":"t","inputSchema":{"type":"object","properties":{"p":{"pattern":"(?!x)\\1\\u{1F600}"}}},"outputSchema":{"$ref":"x.json"}}]}`))
	f.Add([]byte(`{"tools":[1,null,{"name":null}]}`))
	f.Fuzz(func(t *testing.T, result []byte) {
		if len(result) > 1<<16 || !json.Valid(result) {
			return
		}
		p, err := ParseToolsPage(result)
		if err != nil {
			if code(err) != CodeInvalidResult {
				t.Fatalf("ParseToolsPage: %v", err)
			}
			return
		}
		set, errs := ValidateTools(p.Tools, 64)
		if (set == nil) == (len(errs) == 0) {
			t.Fatalf("set %v with errors %v", set, errs)
		}
		for _, e := range errs {
			switch e.Code {
			case CodeInvalidTool, CodeDuplicateTool, CodeNoTools:
			default:
				t.Fatalf("unexpected code %q", e.Code)
			}
		}
		if set != nil {
			for _, tl := range set.Tools() {
				if _, ok := set.Lookup(tl.Name); !ok {
					t.Fatalf("tool %q not found", tl.Name)
				}
				if b, err := json.Marshal(tl); err != nil || !json.Valid(b) {
					t.Fatalf("marshal %q: %v", tl.Name, err)
				}
			}
		}
	})
}

func BenchmarkValidateTools(b *testing.B) {
	items := make([]string, 100)
	for i := range items {
		items[i] = fmt.Sprintf(`{"name":"tool%d","description":"d","inputSchema":{"type":"object","properties":{"a":{"type":"string","pattern":"^[a-z]+$"},"b":{"type":"integer","minimum":0}},"required":["a"]},"outputSchema":{"type":"object"}}`, i)
	}
	p, err := ParseToolsPage(json.RawMessage(`{"tools":[` + strings.Join(items, ",") + `]}`))
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, errs := ValidateTools(p.Tools, 0); len(errs) > 0 {
			b.Fatal(errs)
		}
	}
}
