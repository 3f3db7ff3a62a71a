package protocol

// The decoding code as it was before the scanner (scan.go), kept so that the
// fuzz targets can check that the scanner changed nothing: same results, same
// errors, same messages.

import (
	"bytes"
	"encoding/json"
	"strconv"
	"unicode/utf8"
)

type legacyContentBlock struct {
	Type    string
	Raw     json.RawMessage
	members map[string]json.RawMessage
}

type legacyCallToolResult struct {
	Content           []legacyContentBlock
	StructuredContent json.RawMessage
	IsError           bool
	Meta              json.RawMessage
	Raw               json.RawMessage
}

func legacyJSONString(raw json.RawMessage) (string, bool) {
	if firstByte(raw) != '"' {
		return "", false
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return "", false
	}
	return s, true
}

func legacyObjectMembers(raw json.RawMessage) (map[string]json.RawMessage, error) {
	var m map[string]json.RawMessage
	if firstByte(raw) != '{' {
		return nil, notObjectError{}
	}
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, err
	}
	return m, nil
}

func legacyCheckComplete(result json.RawMessage) error {
	if firstByte(result) != '{' {
		return nil
	}
	var members map[string]json.RawMessage
	if err := json.Unmarshal(result, &members); err != nil {
		return nil
	}
	rt, ok := members["resultType"]
	if !ok {
		return nil
	}
	if s, ok := legacyJSONString(rt); ok && s == "complete" {
		return nil
	}
	return errorf(CodeResultNotComplete, "the result has \"resultType\":%s; a stateless server must answer with a complete result (omit resultType or set it to \"complete\")", quoteRaw(rt))
}

func legacyClassify(line []byte) (Message, error) {
	if len(bytes.TrimSpace(line)) == 0 {
		if len(line) == 0 {
			return Message{}, errorf(CodeNotJSONRPC, "the module wrote a blank line to stdout; stdout is only for JSON-RPC messages (write logs to stderr)")
		}
		return Message{}, errorf(CodeNotJSONRPC, "the module wrote a line of only whitespace to stdout; stdout is only for JSON-RPC messages (write logs to stderr)")
	}
	if !utf8.Valid(line) {
		at := invalidUTF8At(line)
		return Message{}, errorf(CodeNotJSONRPC, "a stdout line is not valid UTF-8 (bad byte at offset %d); JSON-RPC messages are UTF-8 JSON", at)
	}
	var members map[string]json.RawMessage
	if err := json.Unmarshal(line, &members); err != nil {
		return Message{}, notJSONError(line, err)
	}
	if members == nil {
		return Message{}, errorf(CodeNotJSONRPC, "a stdout line is JSON null, not a JSON-RPC message")
	}
	ver, ok := members["jsonrpc"]
	if !ok {
		return Message{}, errorf(CodeNotJSONRPC, "a stdout line has no \"jsonrpc\" member; every message needs \"jsonrpc\":\"2.0\" (line starts %s)", snippet(line))
	}
	if v, ok := legacyJSONString(ver); !ok || v != "2.0" {
		return Message{}, errorf(CodeNotJSONRPC, "a stdout line has \"jsonrpc\":%s; it must be the string \"2.0\"", quoteRaw(ver))
	}
	method, hasMethod := members["method"]
	rawID, hasID := members["id"]
	result, hasResult := members["result"]
	rpcErr, hasError := members["error"]

	if hasMethod {
		m, ok := legacyJSONString(method)
		if !ok {
			return Message{}, errorf(CodeNotJSONRPC, "a message has \"method\":%s; the method must be a string", quoteRaw(method))
		}
		if hasResult || hasError {
			return Message{}, errorf(CodeNotJSONRPC, "a message has both \"method\" and \"%s\"; it must be either a request/notification or a response", pick(hasResult, "result", "error"))
		}
		msg := Message{Kind: KindNotification, Method: m}
		if p, ok := members["params"]; ok && !isNull(p) {
			if c := firstByte(p); c != '{' && c != '[' {
				return Message{}, errorf(CodeNotJSONRPC, "message %s has params %s; params must be an object or an array", quoteShort(m, 80), quoteRaw(p))
			}
			msg.Params = p
		}
		if hasID {
			id, err := parseID(rawID)
			if err != nil {
				return Message{}, errorf(CodeNotJSONRPC, "request %s: %v", quoteShort(m, 80), err)
			}
			msg.Kind, msg.ID = KindRequest, id
		}
		return msg, nil
	}

	switch {
	case hasResult && hasError:
		return Message{}, errorf(CodeNotJSONRPC, "a response has both \"result\" and \"error\"; it must have exactly one")
	case !hasResult && !hasError:
		if hasID {
			return Message{}, errorf(CodeNotJSONRPC, "a message with id %s has neither \"result\" nor \"error\" nor \"method\"", quoteRaw(rawID))
		}
		return Message{}, errorf(CodeNotJSONRPC, "a message has none of \"method\", \"result\" and \"error\" (line starts %s)", snippet(line))
	case !hasID:
		return Message{}, errorf(CodeNotJSONRPC, "a response has no \"id\"; copy the request's id into the response")
	}
	id, err := parseID(rawID)
	if err != nil {
		return Message{}, errorf(CodeNotJSONRPC, "a response's %v", err)
	}
	if hasResult {
		if id.IsNull() {
			return Message{}, errorf(CodeNotJSONRPC, "a result response has id null; copy the request's id into the response")
		}
		return Message{Kind: KindResponse, ID: id, Result: result}, nil
	}
	e, perr := legacyParseRPCError(rpcErr)
	if perr != nil {
		return Message{}, perr
	}
	return Message{Kind: KindErrorResponse, ID: id, Error: e}, nil
}

func legacyParseRPCError(raw json.RawMessage) (*RPCError, *Error) {
	var members map[string]json.RawMessage
	if err := json.Unmarshal(raw, &members); err != nil || members == nil {
		return nil, errorf(CodeNotJSONRPC, "an error response has \"error\":%s; it must be an object with code and message", quoteRaw(raw))
	}
	code, ok := members["code"]
	if !ok {
		return nil, errorf(CodeNotJSONRPC, "an error response's error object has no \"code\"")
	}
	n, err := strconv.ParseInt(string(bytes.TrimSpace(code)), 10, 64)
	if err != nil {
		return nil, errorf(CodeNotJSONRPC, "an error response has \"code\":%s; it must be an integer", quoteRaw(code))
	}
	e := &RPCError{Code: n}
	m, ok := members["message"]
	if !ok {
		return nil, errorf(CodeNotJSONRPC, "an error response's error object (code %d) has no \"message\"", n)
	}
	if e.Message, ok = legacyJSONString(m); !ok {
		return nil, errorf(CodeNotJSONRPC, "an error response has \"message\":%s; it must be a string", quoteRaw(m))
	}
	if d, ok := members["data"]; ok {
		e.Data = d
	}
	return e, nil
}

func legacyParseCallToolResult(result json.RawMessage) (legacyCallToolResult, error) {
	members, err := legacyObjectMembers(result)
	if err != nil {
		return legacyCallToolResult{}, errorf(CodeInvalidResult, "the tools/call result is %s; it must be a CallToolResult object with a \"content\" array", describeJSON(result))
	}
	r := legacyCallToolResult{Raw: result, StructuredContent: members["structuredContent"], Meta: members["_meta"]}
	raw, ok := members["content"]
	if !ok {
		return legacyCallToolResult{}, errorf(CodeInvalidResult, "the tools/call result has no \"content\"; a CallToolResult needs a content array (it may be empty)")
	}
	var items []json.RawMessage
	if firstByte(raw) != '[' || json.Unmarshal(raw, &items) != nil {
		return legacyCallToolResult{}, errorf(CodeInvalidResult, "the tools/call result has \"content\" that is %s; it must be an array of content blocks", describeJSON(raw))
	}
	r.Content = make([]legacyContentBlock, len(items))
	for i, it := range items {
		m, err := legacyObjectMembers(it)
		if err != nil {
			return legacyCallToolResult{}, errorf(CodeInvalidResult, "content block #%d is %s; each content block must be an object with a \"type\"", i+1, describeJSON(it))
		}
		t, ok := legacyJSONString(m["type"])
		if !ok {
			if _, has := m["type"]; !has {
				return legacyCallToolResult{}, errorf(CodeInvalidResult, "content block #%d has no \"type\"; use \"text\", \"image\", \"resource_link\", …", i+1)
			}
			return legacyCallToolResult{}, errorf(CodeInvalidResult, "content block #%d has \"type\":%s; it must be a string", i+1, quoteRaw(m["type"]))
		}
		r.Content[i] = legacyContentBlock{Type: t, Raw: it, members: m}
	}
	if v, ok := members["isError"]; ok && !isNull(v) {
		switch string(trimSpace(v)) {
		case "true":
			r.IsError = true
		case "false":
		default:
			return legacyCallToolResult{}, errorf(CodeInvalidResult, "the tools/call result has \"isError\":%s; it must be true or false", quoteRaw(v))
		}
	}
	return r, nil
}
