package protocol

import (
	"bytes"
	"encoding/json"
	"errors"
)

// Tool is one entry of a tools/list page, kept as the module sent it. The
// typed fields are filled when the member has the expected JSON type; what
// a member of the wrong type means is ValidateTools' job, so ParseToolsPage
// never fails because of one tool.
type Tool struct {
	Name        string
	Title       string
	Description string
	// InputSchema, OutputSchema, Annotations, Icons and Meta (_meta) are the
	// members as sent; nil when absent.
	InputSchema  json.RawMessage
	OutputSchema json.RawMessage
	Annotations  json.RawMessage
	Icons        json.RawMessage
	Meta         json.RawMessage
	// Raw is the tool exactly as sent (what MarshalJSON prints).
	Raw json.RawMessage

	members memberList // nil when Raw is not an object
}

// ToolsPage is one tools/list result.
type ToolsPage struct {
	Tools []Tool
	// NextCursor is the cursor for the next page, or nil on the last page.
	// An empty string is a cursor, not the end.
	NextCursor *string
}

// ParseToolsPage reads a tools/list result: an object with a "tools" array
// and an optional string "nextCursor" (null is read as absent). A result of
// any other shape is *Error{CodeInvalidResult}. Each tool is kept raw, even
// one that is not an object, so ValidateTools can report every problem.
func ParseToolsPage(result json.RawMessage) (ToolsPage, error) {
	var buf [8]member
	members, err := objectMembers(result, buf[:0])
	if err != nil {
		return ToolsPage{}, errorf(CodeInvalidResult, "the tools/list result is %s; it must be an object with a \"tools\" array", describeJSON(result))
	}
	raw, ok := members.get("tools")
	if !ok {
		return ToolsPage{}, errorf(CodeInvalidResult, "the tools/list result has no \"tools\" array")
	}
	var items []json.RawMessage
	if firstByte(raw) != '[' || json.Unmarshal(raw, &items) != nil {
		return ToolsPage{}, errorf(CodeInvalidResult, "the tools/list result has \"tools\" %s; it must be an array of tools", describeJSON(raw))
	}
	var page ToolsPage
	if c, ok := members.get("nextCursor"); ok && !isNull(c) {
		s, ok := jsonString(c)
		if !ok {
			return ToolsPage{}, errorf(CodeInvalidResult, "the tools/list result has \"nextCursor\":%s; a cursor must be a string", quoteRaw(c))
		}
		page.NextCursor = &s
	}
	page.Tools = make([]Tool, len(items))
	for i, it := range items {
		page.Tools[i] = newTool(it)
	}
	return page, nil
}

// ParseTool reads one tool from its JSON; like ParseToolsPage it keeps what
// it cannot type for ValidateTools to report.
func ParseTool(raw json.RawMessage) Tool { return newTool(raw) }

func newTool(raw json.RawMessage) Tool {
	t := Tool{Raw: raw}
	m, err := objectMembers(raw, nil)
	if err != nil {
		return t
	}
	if m == nil {
		m = memberList{} // an empty object: members, but none
	}
	t.members = m
	t.Name, _ = jsonString(m.value("name"))
	t.Title, _ = jsonString(m.value("title"))
	t.Description, _ = jsonString(m.value("description"))
	t.InputSchema = m.value("inputSchema")
	t.OutputSchema = m.value("outputSchema")
	t.Annotations = m.value("annotations")
	t.Icons = m.value("icons")
	t.Meta = m.value("_meta")
	return t
}

// Has reports whether the tool's JSON object has the member name (even when
// its value is null), for the warnings of check.
func (t Tool) Has(name string) bool {
	return t.members.has(name)
}

// MarshalJSON reproduces the tool as the module sent it. A Tool built in Go
// (no Raw) is rendered from its fields.
func (t Tool) MarshalJSON() ([]byte, error) {
	if len(t.Raw) > 0 {
		var b bytes.Buffer
		if err := json.Compact(&b, t.Raw); err != nil {
			return nil, err
		}
		return b.Bytes(), nil
	}
	if t.Name == "" {
		return nil, errors.New("protocol: marshalling a tool without a name")
	}
	out := struct {
		Name         string          `json:"name"`
		Title        string          `json:"title,omitempty"`
		Description  string          `json:"description,omitempty"`
		InputSchema  json.RawMessage `json:"inputSchema,omitempty"`
		OutputSchema json.RawMessage `json:"outputSchema,omitempty"`
		Annotations  json.RawMessage `json:"annotations,omitempty"`
		Icons        json.RawMessage `json:"icons,omitempty"`
		Meta         json.RawMessage `json:"_meta,omitempty"`
	}{t.Name, t.Title, t.Description, t.InputSchema, t.OutputSchema, t.Annotations, t.Icons, t.Meta}
	return json.Marshal(out)
}
