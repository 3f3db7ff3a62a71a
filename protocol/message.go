package protocol

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"unicode/utf8"
)

// Kind says what a stdout line is.
type Kind int

// The kinds of JSON-RPC 2.0 message a module can write.
const (
	// KindInvalid is the zero Kind; Classify never returns it with a nil error.
	KindInvalid Kind = iota
	// KindResponse has an id and a result.
	KindResponse
	// KindErrorResponse has an id (possibly null) and an error object.
	KindErrorResponse
	// KindRequest has a method and an id (a crash: server_request).
	KindRequest
	// KindNotification has a method and no id (ignored, but counted).
	KindNotification
)

// String names the kind for logs and messages.
func (k Kind) String() string {
	switch k {
	case KindResponse:
		return "response"
	case KindErrorResponse:
		return "error response"
	case KindRequest:
		return "request"
	case KindNotification:
		return "notification"
	}
	return "invalid"
}

// Message is one classified stdout line.
type Message struct {
	Kind Kind
	// ID is set for responses and requests; for an error response it may be
	// the null id (IsNull), for a notification it is the zero ID.
	ID ID
	// Method is set for requests and notifications.
	Method string
	// Params is a request's or notification's params as sent (nil when absent).
	Params json.RawMessage
	// Result is a response's result as sent (any JSON value).
	Result json.RawMessage
	// Error is an error response's error object.
	Error *RPCError
}

// RPCError is a JSON-RPC error object.
type RPCError struct {
	Code    int64
	Message string
	// Data is the optional data member as sent (nil when absent).
	Data json.RawMessage
}

// Classify parses one stdout line (without its "\n") as a JSON-RPC 2.0
// message. Anything else is an *Error with CodeNotJSONRPC whose message names
// what is wrong.
//
// Strict where JSON-RPC 2.0 is: "jsonrpc" must be exactly "2.0"; member names
// are case-sensitive; a response has exactly one of result and error and an
// id member; an id is a string or a number (null only in an error response);
// error.code is an integer and error.message a string; a request's params is
// an object or array; batches (arrays) are not messages.
//
// Tolerant where servers differ harmlessly: whitespace around the JSON
// (including a "\r" left by CRLF line ends); unknown extra members; params:
// null on a request or notification (treated as absent); a duplicated member
// name (the last one wins, as in most parsers). A request with "id": null is
// still a request, as JSON-RPC says.
//
// The returned Message does not alias line.
func Classify(line []byte) (Message, error) {
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
	var buf [8]member
	members, ok := scanObject(line, buf[:0])
	if !ok {
		var m map[string]json.RawMessage
		if err := json.Unmarshal(line, &m); err != nil {
			return Message{}, notJSONError(line, err)
		}
		if m == nil {
			return Message{}, errorf(CodeNotJSONRPC, "a stdout line is JSON null, not a JSON-RPC message")
		}
		members = membersOf(m)
	}
	ver, ok := members.get("jsonrpc")
	if !ok {
		return Message{}, errorf(CodeNotJSONRPC, "a stdout line has no \"jsonrpc\" member; every message needs \"jsonrpc\":\"2.0\" (line starts %s)", snippet(line))
	}
	if !jsonStringIs(ver, "2.0") {
		return Message{}, errorf(CodeNotJSONRPC, "a stdout line has \"jsonrpc\":%s; it must be the string \"2.0\"", quoteRaw(ver))
	}
	method, hasMethod := members.get("method")
	rawID, hasID := members.get("id")
	result, hasResult := members.get("result")
	rpcErr, hasError := members.get("error")

	if hasMethod {
		m, ok := jsonString(method)
		if !ok {
			return Message{}, errorf(CodeNotJSONRPC, "a message has \"method\":%s; the method must be a string", quoteRaw(method))
		}
		if hasResult || hasError {
			return Message{}, errorf(CodeNotJSONRPC, "a message has both \"method\" and \"%s\"; it must be either a request/notification or a response", pick(hasResult, "result", "error"))
		}
		msg := Message{Kind: KindNotification, Method: m}
		if p, ok := members.get("params"); ok && !isNull(p) {
			if c := firstByte(p); c != '{' && c != '[' {
				return Message{}, errorf(CodeNotJSONRPC, "message %s has params %s; params must be an object or an array", quoteShort(m, 80), quoteRaw(p))
			}
			msg.Params = clone(p)
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
		return Message{Kind: KindResponse, ID: id, Result: clone(result)}, nil
	}
	e, perr := parseRPCError(rpcErr)
	if perr != nil {
		return Message{}, perr
	}
	return Message{Kind: KindErrorResponse, ID: id, Error: e}, nil
}

func parseRPCError(raw json.RawMessage) (*RPCError, *Error) {
	var buf [8]member
	members, err := objectMembers(raw, buf[:0])
	if err != nil {
		return nil, errorf(CodeNotJSONRPC, "an error response has \"error\":%s; it must be an object with code and message", quoteRaw(raw))
	}
	code, ok := members.get("code")
	if !ok {
		return nil, errorf(CodeNotJSONRPC, "an error response's error object has no \"code\"")
	}
	n, err := strconv.ParseInt(string(bytes.TrimSpace(code)), 10, 64)
	if err != nil {
		return nil, errorf(CodeNotJSONRPC, "an error response has \"code\":%s; it must be an integer", quoteRaw(code))
	}
	e := &RPCError{Code: n}
	m, ok := members.get("message")
	if !ok {
		return nil, errorf(CodeNotJSONRPC, "an error response's error object (code %d) has no \"message\"", n)
	}
	if e.Message, ok = jsonString(m); !ok {
		return nil, errorf(CodeNotJSONRPC, "an error response has \"message\":%s; it must be a string", quoteRaw(m))
	}
	if d, ok := members.get("data"); ok {
		e.Data = clone(d)
	}
	return e, nil
}

func notJSONError(line []byte, err error) *Error {
	switch c := firstByte(line); c {
	case '[':
		if json.Valid(line) {
			return errorf(CodeNotJSONRPC, "a stdout line is a JSON array (a batch); send one JSON-RPC message object per line")
		}
	case '"', 't', 'f', '-', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9':
		if json.Valid(line) {
			return errorf(CodeNotJSONRPC, "a stdout line is a JSON %s, not a JSON-RPC message object: %s", jsonType(c), snippet(line))
		}
	}
	msg := err.Error()
	if se, ok := err.(*json.SyntaxError); ok {
		msg = fmt.Sprintf("%s at byte %d", se.Error(), se.Offset)
	}
	return errorf(CodeNotJSONRPC, "a stdout line is not JSON (%s): %s; stdout is only for JSON-RPC messages (write logs to stderr)", msg, snippet(line))
}

func jsonType(c byte) string {
	switch c {
	case '"':
		return "string"
	case 't', 'f':
		return "boolean"
	}
	return "number"
}

func invalidUTF8At(b []byte) int {
	for i := 0; i < len(b); {
		r, n := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && n == 1 {
			return i
		}
		i += n
	}
	return -1
}

// snippet quotes the first bytes of a line for a message.
func snippet(line []byte) string {
	line = bytes.TrimSpace(line)
	if len(line) <= 80 {
		return fmt.Sprintf("%q", line)
	}
	cut := 80
	for cut > 0 && line[cut]&0xC0 == 0x80 {
		cut--
	}
	return fmt.Sprintf("%q… (%d bytes)", line[:cut], len(line))
}

func quoteRaw(raw json.RawMessage) string {
	s := string(bytes.TrimSpace(raw))
	if len(s) > 80 {
		return quoteShort(s, 80)
	}
	return s
}

func firstByte(b []byte) byte {
	b = bytes.TrimLeft(b, " \t\r\n")
	if len(b) == 0 {
		return 0
	}
	return b[0]
}

func isNull(b []byte) bool { return string(bytes.TrimSpace(b)) == "null" }

func pick(c bool, a, b string) string {
	if c {
		return a
	}
	return b
}

// jsonString decodes raw as a JSON string; ok is false for any other value.
func jsonString(raw json.RawMessage) (string, bool) {
	if firstByte(raw) != '"' {
		return "", false
	}
	if p, ok := plainString(raw); ok {
		return string(p), true
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return "", false
	}
	return s, true
}

// jsonStringIs reports whether raw is a JSON string that decodes to want,
// without allocating when it has no escapes.
func jsonStringIs(raw json.RawMessage, want string) bool {
	if p, ok := plainString(raw); ok {
		return string(p) == want
	}
	s, ok := jsonString(raw)
	return ok && s == want
}

// clone copies a raw value so a Message does not alias the line it came from.
func clone(raw json.RawMessage) json.RawMessage {
	return append(json.RawMessage(nil), raw...)
}
