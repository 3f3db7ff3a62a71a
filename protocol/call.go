package protocol

import "encoding/json"

// ContentBlock is one entry of a CallToolResult's content.
type ContentBlock struct {
	// Type is the block's "type" member.
	Type string
	// Raw is the block as sent.
	Raw json.RawMessage

	members memberList
}

// str returns a string member of the block.
func (b ContentBlock) str(name string) (string, bool) {
	return jsonString(b.members.value(name))
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
	var buf [8]member
	members, err := objectMembers(result, buf[:0])
	if err != nil {
		return CallToolResult{}, errorf(CodeInvalidResult, "the tools/call result is %s; it must be a CallToolResult object with a \"content\" array", describeJSON(result))
	}
	r := CallToolResult{Raw: result, StructuredContent: members.value("structuredContent"), Meta: members.value("_meta")}
	raw, ok := members.get("content")
	if !ok {
		return CallToolResult{}, errorf(CodeInvalidResult, "the tools/call result has no \"content\"; a CallToolResult needs a content array (it may be empty)")
	}
	var itemBuf [4]json.RawMessage
	items, ok := arrayItems(raw, itemBuf[:0])
	if !ok {
		return CallToolResult{}, errorf(CodeInvalidResult, "the tools/call result has \"content\" that is %s; it must be an array of content blocks", describeJSON(raw))
	}
	r.Content = make([]ContentBlock, len(items))
	// The blocks' members share one backing array: a block keeps a capped
	// slice of it, so a later append that moves the array leaves it intact.
	var all memberList
	for i, it := range items {
		start := len(all)
		all, err = objectMembers(it, all)
		if err != nil {
			return CallToolResult{}, errorf(CodeInvalidResult, "content block #%d is %s; each content block must be an object with a \"type\"", i+1, describeJSON(it))
		}
		m := all[start:len(all):len(all)]
		rawType, has := m.get("type")
		t, ok := jsonString(rawType)
		if !ok {
			if !has {
				return CallToolResult{}, errorf(CodeInvalidResult, "content block #%d has no \"type\"; use \"text\", \"image\", \"resource_link\", …", i+1)
			}
			return CallToolResult{}, errorf(CodeInvalidResult, "content block #%d has \"type\":%s; it must be a string", i+1, quoteRaw(rawType))
		}
		r.Content[i] = ContentBlock{Type: t, Raw: it, members: m}
	}
	if v, ok := members.get("isError"); ok && !isNull(v) {
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

// arrayItems appends the elements of the JSON array raw to buf; ok is false
// when raw is not an array (or not JSON).
func arrayItems(raw json.RawMessage, buf []json.RawMessage) ([]json.RawMessage, bool) {
	if firstByte(raw) != '[' {
		return nil, false
	}
	if items, ok := scanArray(raw, buf); ok {
		return items, true
	}
	var items []json.RawMessage
	if json.Unmarshal(raw, &items) != nil {
		return nil, false
	}
	return items, true
}
