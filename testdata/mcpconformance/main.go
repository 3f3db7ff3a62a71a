// Command mcpconformance is the tools-only ABI 1 package that
// `subako-runner mcp --http` serves to the official MCP conformance suite
// (@modelcontextprotocol/conformance, server scenarios): one tool for each
// tool scenario a stateless tools-only server can serve, answering exactly
// what the scenario asks, listed in the order below (the runner keeps it).
//
// It is a raw-protocol guest (encoding/json and bufio only), like
// testdata/guests/greet: a stateless MCP 2026-07-28 server on stdio, one
// compact JSON message a line, notifications ignored, exit 0 at EOF.
package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
)

const protocolVersion = "2026-07-28"

var serverMeta = map[string]any{
	"io.modelcontextprotocol/serverInfo": map[string]any{"name": "mcpconformance", "version": "1.0.0"},
}

// tinyPNG is a valid 1x1 red PNG, base64.
const tinyPNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg=="

// tinyWAV is an 8-bit mono WAV of four samples, base64.
const tinyWAV = "UklGRigAAABXQVZFZm10IBAAAAABAAEAQB8AAEAfAAABAAgAZGF0YQQAAACAgICA"

// cacheTTL is what tools/list and server/discover say their results may be
// cached for: the runner passes it on to session clients.
const cacheTTL = 3600000

type request struct {
	ID     json.RawMessage `json:"id,omitempty"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params,omitempty"`
}

type rpcError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
}

type response struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Result  any             `json:"result,omitempty"`
	Error   *rpcError       `json:"error,omitempty"`
}

func main() {
	in := bufio.NewReader(os.Stdin)
	out := bufio.NewWriter(os.Stdout)
	for {
		line, err := in.ReadBytes('\n')
		if len(bytes.TrimSpace(line)) > 0 {
			if resp := handle(line); resp != nil {
				b, _ := json.Marshal(resp)
				out.Write(b)
				out.WriteByte('\n')
				out.Flush()
			}
		}
		if err == io.EOF {
			os.Exit(0)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "mcpconformance: reading stdin:", err)
			os.Exit(1)
		}
	}
}

func handle(line []byte) *response {
	var req request
	if err := json.Unmarshal(line, &req); err != nil {
		fmt.Fprintln(os.Stderr, "mcpconformance: ignoring unparsable line:", err)
		return nil
	}
	if len(req.ID) == 0 || string(req.ID) == "null" {
		return nil
	}
	resp := &response{JSONRPC: "2.0", ID: req.ID}
	switch req.Method {
	case "server/discover":
		resp.Result = map[string]any{
			"resultType": "complete", "_meta": serverMeta, "ttlMs": cacheTTL, "cacheScope": "public",
			"supportedVersions": []string{protocolVersion},
			"capabilities":      map[string]any{"tools": map[string]any{}},
		}
	case "tools/list":
		resp.Result = map[string]any{
			"resultType": "complete", "_meta": serverMeta, "ttlMs": cacheTTL, "cacheScope": "public",
			"tools": tools(),
		}
	case "tools/call":
		var p struct {
			Name string `json:"name"`
		}
		if err := json.Unmarshal(req.Params, &p); err != nil {
			resp.Error = &rpcError{Code: -32602, Message: "invalid params: " + err.Error()}
			return resp
		}
		result, ok := call(p.Name)
		if !ok {
			resp.Error = &rpcError{Code: -32602, Message: "unknown tool: " + p.Name}
			return resp
		}
		result["resultType"] = "complete"
		result["_meta"] = serverMeta
		resp.Result = result
	default:
		resp.Error = &rpcError{Code: -32601, Message: "method not found: " + req.Method}
	}
	return resp
}

func noArgs() map[string]any { return map[string]any{"type": "object", "properties": map[string]any{}} }

// tools is in the order the scenarios come in the suite's list, which is
// not the order of their names: tools/list must keep it.
func tools() []any {
	return []any{
		map[string]any{"name": "test_simple_text", "description": "Returns one text block.", "inputSchema": noArgs()},
		map[string]any{"name": "test_image_content", "description": "Returns a 1x1 PNG image.", "inputSchema": noArgs()},
		map[string]any{"name": "test_audio_content", "description": "Returns a short WAV.", "inputSchema": noArgs()},
		map[string]any{"name": "test_embedded_resource", "description": "Returns an embedded text resource.", "inputSchema": noArgs()},
		map[string]any{"name": "test_multiple_content_types", "description": "Returns text, image and resource blocks.", "inputSchema": noArgs()},
		map[string]any{"name": "test_error_handling", "description": "Always fails as a tool error (isError).", "inputSchema": noArgs()},
		map[string]any{
			"name":        "json_schema_2020_12_tool",
			"description": "Tool with JSON Schema 2020-12 features",
			"inputSchema": map[string]any{
				"$schema": "https://json-schema.org/draft/2020-12/schema",
				"type":    "object",
				"$defs": map[string]any{
					"address": map[string]any{
						"type": "object",
						"properties": map[string]any{
							"street": map[string]any{"type": "string"},
							"city":   map[string]any{"type": "string"},
						},
					},
				},
				"properties": map[string]any{
					"name":    map[string]any{"type": "string"},
					"address": map[string]any{"$ref": "#/$defs/address"},
				},
				"additionalProperties": false,
			},
		},
	}
}

func text(s string) map[string]any { return map[string]any{"type": "text", "text": s} }

func image() map[string]any {
	return map[string]any{"type": "image", "data": tinyPNG, "mimeType": "image/png"}
}

func resource(uri, s string) map[string]any {
	return map[string]any{"type": "resource", "resource": map[string]any{"uri": uri, "mimeType": "text/plain", "text": s}}
}

func call(name string) (map[string]any, bool) {
	content := func(blocks ...any) map[string]any { return map[string]any{"content": blocks} }
	switch name {
	case "test_simple_text":
		return content(text("This is a simple text response for testing.")), true
	case "test_image_content":
		return content(image()), true
	case "test_audio_content":
		return content(map[string]any{"type": "audio", "data": tinyWAV, "mimeType": "audio/wav"}), true
	case "test_embedded_resource":
		return content(resource("test://embedded-resource", "This is an embedded resource content.")), true
	case "test_multiple_content_types":
		return content(text("Multiple content types test:"), image(),
			resource("test://mixed-content-resource", `{"test":"data","value":123}`)), true
	case "test_error_handling":
		r := content(text("This tool intentionally returns an error for testing"))
		r["isError"] = true
		return r, true
	case "json_schema_2020_12_tool":
		return content(text("ok")), true
	}
	return nil, false
}
