//go:build wasip1

// Command httpprobe is an ABI 1 guest that imports subako_http, so the host
// module and its discovery rule can be tested from a real guest.
//
// During discovery its tools/list sends one request (GET
// https://example.com/) and puts the host's answer into the description of
// the tool "http": the host must answer host_not_allowed there.
//
// Tools:
//   - http {request}: sends request (any JSON value, passed through as is)
//     and returns the held response as text and as structuredContent.
//   - http_raw {body}: sends the string body byte for byte (for requests that
//     are not valid JSON or not UTF-8 as the host sees them).
//   - abi_misuse {}: calls the functions wrongly and reports each return
//     value: read_response with nothing held (-2), request with a range
//     outside memory (-1), read_response with a wrong length (-3), then the
//     right length.
package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"unsafe"
)

//go:wasmimport subako_http request
func hostRequest(ptr unsafe.Pointer, n int32) int32

//go:wasmimport subako_http read_response
func hostReadResponse(ptr unsafe.Pointer, n int32) int32

// send performs one request and returns the response bytes, or the negative
// code of a misuse.
func send(req []byte) ([]byte, int32) {
	var p unsafe.Pointer
	if len(req) > 0 {
		p = unsafe.Pointer(&req[0])
	}
	n := hostRequest(p, int32(len(req)))
	if n <= 0 {
		return nil, n
	}
	buf := make([]byte, n)
	if r := hostReadResponse(unsafe.Pointer(&buf[0]), n); r != n {
		return nil, r
	}
	return buf, n
}

var serverMeta = map[string]any{
	"io.modelcontextprotocol/serverInfo": map[string]any{"name": "httpprobe", "version": "0.1.0"},
}

func main() {
	in := bufio.NewReader(os.Stdin)
	for {
		line, err := in.ReadBytes('\n')
		if len(bytes.TrimSpace(line)) > 0 {
			handle(line)
		}
		if err == io.EOF {
			os.Exit(0)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "httpprobe:", err)
			os.Exit(1)
		}
	}
}

func respond(id json.RawMessage, result map[string]any) {
	result["resultType"] = "complete"
	result["_meta"] = serverMeta
	b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "result": result})
	os.Stdout.Write(append(b, '\n'))
}

func text(s string) map[string]any { return map[string]any{"type": "text", "text": s} }

func handle(line []byte) {
	var req struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
		Params struct {
			Name      string `json:"name"`
			Arguments struct {
				Request json.RawMessage `json:"request"`
				Body    string          `json:"body"`
			} `json:"arguments"`
		} `json:"params"`
	}
	if json.Unmarshal(line, &req) != nil || len(req.ID) == 0 || string(req.ID) == "null" {
		return
	}
	fmt.Fprintf(os.Stderr, "httpprobe: %s %s\n", req.Method, req.Params.Name)
	switch req.Method {
	case "server/discover":
		respond(req.ID, map[string]any{"ttlMs": 0, "cacheScope": "public",
			"supportedVersions": []string{"2026-07-28"}, "capabilities": map[string]any{"tools": map[string]any{}}})
	case "tools/list":
		resp, code := send([]byte(`{"method":"GET","url":"https://example.com/"}`))
		probe := string(resp)
		if resp == nil {
			probe = fmt.Sprintf("return code %d", code)
		}
		obj := map[string]any{"type": "object"}
		respond(req.ID, map[string]any{"ttlMs": 0, "cacheScope": "public", "tools": []any{
			map[string]any{"name": "http", "description": "Send an HTTP request through subako_http. Discovery probe answered: " + probe,
				"inputSchema": map[string]any{"type": "object", "properties": map[string]any{"request": map[string]any{}}, "required": []string{"request"}}},
			map[string]any{"name": "http_raw", "description": "Send a raw request string.",
				"inputSchema": map[string]any{"type": "object", "properties": map[string]any{"body": map[string]any{"type": "string"}}, "required": []string{"body"}}},
			map[string]any{"name": "abi_misuse", "description": "Call subako_http wrongly and report the return codes.", "inputSchema": obj},
		}})
	case "tools/call":
		switch req.Params.Name {
		case "http", "http_raw":
			body := []byte(req.Params.Arguments.Request)
			if req.Params.Name == "http_raw" {
				body = []byte(req.Params.Arguments.Body)
			}
			resp, code := send(body)
			if resp == nil {
				respond(req.ID, map[string]any{"content": []any{text(fmt.Sprintf("subako_http returned %d", code))}, "isError": true})
				return
			}
			var sc any
			json.Unmarshal(resp, &sc)
			respond(req.ID, map[string]any{"content": []any{text(string(resp))}, "structuredContent": sc})
		case "abi_misuse":
			var one [1]byte
			r := map[string]any{}
			r["read_nothing_held"] = hostReadResponse(unsafe.Pointer(&one[0]), 1)
			// 1 GiB past a 4-byte buffer cannot be inside the module's memory.
			r["request_out_of_range"] = hostRequest(unsafe.Pointer(&one[0]), 1<<30)
			n := hostRequest(unsafe.Pointer(unsafe.StringData(`{"url":"https://example.com/"}`)), int32(len(`{"url":"https://example.com/"}`)))
			r["request_length"] = n
			if n > 0 {
				buf := make([]byte, n+1)
				r["read_wrong_length"] = hostReadResponse(unsafe.Pointer(&buf[0]), n+1)
				r["read_right_length"] = hostReadResponse(unsafe.Pointer(&buf[0]), n)
				r["response"] = string(buf[:n])
				r["read_after_release"] = hostReadResponse(unsafe.Pointer(&buf[0]), n)
			}
			b, _ := json.Marshal(r)
			respond(req.ID, map[string]any{"content": []any{text(string(b))}, "structuredContent": r})
		default:
			b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": req.ID, "error": map[string]any{"code": -32602, "message": "unknown tool " + req.Params.Name}})
			os.Stdout.Write(append(b, '\n'))
		}
	default:
		b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": req.ID, "error": map[string]any{"code": -32601, "message": "method not found"}})
		os.Stdout.Write(append(b, '\n'))
	}
}
