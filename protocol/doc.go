// Package protocol is the JSON-RPC 2.0 and MCP 2026-07-28 layer of
// subako-runner: everything the host says to a module and reads back from
// it, without running anything. It is pure Go and never imports wazero.
//
// The pieces, in the order a session uses them:
//
//   - EncodeRequest writes one request line with the _meta every ABI 1
//     request carries (protocol revision, client info, client capabilities).
//     RandomIntID and RandomStringID make unpredictable ids.
//   - LineSplitter is the io.Writer behind the module's stdout: it cuts lines
//     and enforces the per-line and per-run caps (output_too_large) without
//     ever buffering more than one line's cap.
//   - Classify turns one line into a Message (response, error response,
//     request, notification) or a not_jsonrpc error. ID compares ids by
//     exact JSON value, so the runtime can match responses with ID.Key.
//   - CheckComplete applies the resultType rule to every result;
//     ParseDiscover, ParseToolsPage and ParseCallToolResult read the three
//     results ABI 1 knows.
//   - ValidateTools applies the tool-list rules of discovery and compiles the
//     tools' JSON Schemas (never loading a remote $ref) into a ToolSet.
//   - BuildView turns a CallToolResult into the model view, resolving
//     volume:/// links through a VolumeResolver the runtime provides.
//
// Every failure a module can cause is an *Error carrying a stable code of the
// host contract (the Code* constants) and a sentence for the package author.
// Parsers of module output never panic on any input (they are fuzzed).
package protocol
