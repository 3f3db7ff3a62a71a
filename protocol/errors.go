package protocol

import (
	"fmt"

	"github.com/subako/subako-runner/internal/text"
)

// Stable codes carried by *Error. They are the reason codes of the host
// contract (§4 rejections, §6 crashes) and are part of the public contract:
// scripts match on them, so they never change spelling.
const (
	CodeNotJSONRPC          = "not_jsonrpc"
	CodeUnexpectedID        = "unexpected_id"
	CodeServerRequest       = "server_request"
	CodeJSONRPCError        = "jsonrpc_error"
	CodeResultNotComplete   = "result_not_complete"
	CodeInvalidResult       = "invalid_result"
	CodeOutputTooLarge      = "output_too_large"
	CodeDiscoverUnsupported = "discover_unsupported"
	CodeInvalidTool         = "invalid_tool"
	CodeDuplicateTool       = "duplicate_tool"
	CodeNoTools             = "no_tools"
	CodeTooManyPages        = "too_many_pages"
)

// Error is a protocol failure with a stable Code and a Message written for a
// package author: it says what the module did and, where it can, what to
// change. Callers inspect it with errors.As.
type Error struct {
	// Code is one of the Code* constants.
	Code string
	// Message is a complete sentence without the code.
	Message string
	// Tool names the tool a tool-list problem is about, when there is one.
	Tool string
}

// Error renders "code: message" so a wrapped error still shows the code.
func (e *Error) Error() string { return e.Code + ": " + e.Message }

func errorf(code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// ErrServerRequest is the crash for a request sent by the module.
func ErrServerRequest(method string, id ID) *Error {
	return errorf(CodeServerRequest, "the module sent a request (method %s, id %s); a stateless MCP server must not send requests to the host", quoteShort(method, 80), shortID(id))
}

// ErrJSONRPC is the crash for an error response.
func ErrJSONRPC(e *RPCError) *Error {
	if e == nil {
		return errorf(CodeJSONRPCError, "the module answered with a JSON-RPC error")
	}
	msg := fmt.Sprintf("the module answered with JSON-RPC error %d: %s", e.Code, quoteShort(e.Message, 512))
	if e.Code == -32602 || e.Code == -32601 {
		msg += " (a failure the model should read belongs in a result with isError: true)"
	}
	return &Error{Code: CodeJSONRPCError, Message: msg}
}

// ErrTooManyPages is the rejection for a tools/list page number max (the
// last one allowed) that still carries a nextCursor.
func ErrTooManyPages(max int) *Error {
	return errorf(CodeTooManyPages, "tools/list page %d still has a nextCursor; at most %d pages are read, so return all tools in fewer pages", max, max)
}

// quoteShort quotes s for a message, cutting it at n bytes (on a rune
// boundary) so a hostile module cannot make a report arbitrarily long.
func quoteShort(s string, n int) string {
	if len(s) <= n {
		return fmt.Sprintf("%q", s)
	}
	return fmt.Sprintf("%q… (%d bytes)", text.Truncate(s, n), len(s))
}

// shortID renders an id for a message, cut so a hostile id cannot bloat it.
func shortID(id ID) string {
	return text.Bound(id.String(), 80)
}
