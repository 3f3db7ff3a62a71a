package protocol

import "encoding/json"

// ContentBlock is one entry of a CallToolResult's content.
type ContentBlock struct {
	// Type is the block's "type" member.
	Type string
	// Raw is the block as sent.
	Raw json.RawMessage

	members map[string]json.RawMessage
}

// str returns a string member of the block.
func (b ContentBlock) str(name string) (string, bool) {
	return jsonString(b.members[name])
}

// CallToolResult is a tools/call result.
type CallToolResult struct {
	Content []ContentBlock
	// StructuredContent is any JSON value, passed on unchanged; nil when absent.
	StructuredContent json.RawMessage
	// IsError marks a tool error: the model reads it, it is not a crash.
	IsError bool
	// Meta is the _meta member as sent; nil when absent.
	Meta json.RawMessage
	// Raw is the whole result as sent.
	Raw json.RawMessage
}

// ParseCallToolResult reads a tools/call result: an object whose "content"
// is an array of objects, each with a string "type"; "isError", when present,
// a boolean (null counts as false). Anything else is
// *Error{CodeInvalidResult}. Unknown block types are kept (BuildView turns
// them into notes); unknown members are ignored.
func ParseCallToolResult(result json.RawMessage) (CallToolResult, error) {
	members, err := objectMembers(result)
	if err != nil {
		return CallToolResult{}, errorf(CodeInvalidResult, "the tools/call result is %s; it must be a CallToolResult object with a \"content\" array", describeJSON(result))
	}
	r := CallToolResult{Raw: result, StructuredContent: members["structuredContent"], Meta: members["_meta"]}
	raw, ok := members["content"]
	if !ok {
		return CallToolResult{}, errorf(CodeInvalidResult, "the tools/call result has no \"content\"; a CallToolResult needs a content array (it may be empty)")
	}
	var items []json.RawMessage
	if firstByte(raw) != '[' || json.Unmarshal(raw, &items) != nil {
		return CallToolResult{}, errorf(CodeInvalidResult, "the tools/call result has \"content\" that is %s; it must be an array of content blocks", describeJSON(raw))
	}
	r.Content = make([]ContentBlock, len(items))
	for i, it := range items {
		m, err := objectMembers(it)
		if err != nil {
			return CallToolResult{}, errorf(CodeInvalidResult, "content block #%d is %s; each content block must be an object with a \"type\"", i+1, describeJSON(it))
		}
		t, ok := jsonString(m["type"])
		if !ok {
			if _, has := m["type"]; !has {
				return CallToolResult{}, errorf(CodeInvalidResult, "content block #%d has no \"type\"; use \"text\", \"image\", \"resource_link\", …", i+1)
			}
			return CallToolResult{}, errorf(CodeInvalidResult, "content block #%d has \"type\":%s; it must be a string", i+1, quoteRaw(m["type"]))
		}
		r.Content[i] = ContentBlock{Type: t, Raw: it, members: m}
	}
	if v, ok := members["isError"]; ok && !isNull(v) {
		switch string(trimSpace(v)) {
		case "true":
			r.IsError = true
		case "false":
		default:
			return CallToolResult{}, errorf(CodeInvalidResult, "the tools/call result has \"isError\":%s; it must be true or false", quoteRaw(v))
		}
	}
	return r, nil
}

func trimSpace(b []byte) []byte {
	for len(b) > 0 && (b[0] == ' ' || b[0] == '\t' || b[0] == '\r' || b[0] == '\n') {
		b = b[1:]
	}
	for len(b) > 0 && (b[len(b)-1] == ' ' || b[len(b)-1] == '\t' || b[len(b)-1] == '\r' || b[len(b)-1] == '\n') {
		b = b[:len(b)-1]
	}
	return b
}
