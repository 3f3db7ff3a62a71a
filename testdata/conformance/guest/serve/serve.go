// Package serve is conformguest's server, shared by the main package and
// the sockets variant (which differs only in its imports).
package serve

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"time"
)

var (
	faults = map[string]string{}
	out    = bufio.NewWriter(os.Stdout)
	keep   [][]byte
)

// tinyPNG is a valid 1x1 PNG.
var tinyPNG, _ = base64.StdEncoding.DecodeString("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==")

func has(f string) bool { _, ok := faults[f]; return ok }

func intFault(f string) int {
	n, _ := strconv.Atoi(faults[f])
	return n
}

func logf(format string, a ...any) {
	if !has("silent") {
		fmt.Fprintf(os.Stderr, "conformguest: "+format+"\n", a...)
	}
}

// Main serves stdin until end of input and exits.
func Main() {
	if b, err := os.ReadFile("/package/faults"); err == nil {
		for _, w := range strings.Fields(string(b)) {
			k, v, _ := strings.Cut(w, "=")
			faults[k] = v
		}
	}
	in := bufio.NewReader(os.Stdin)
	requests, calls := 0, 0
	for {
		line, err := in.ReadBytes('\n')
		if len(bytes.TrimSpace(line)) > 0 {
			r, c := handle(line)
			requests += r
			calls += c
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			logf("reading stdin: %v", err)
			os.Exit(1)
		}
	}
	if requests == 0 && has("eof_hang") {
		for {
			time.Sleep(time.Hour)
		}
	}
	if calls > 0 && has("slow_exit_after_call") {
		time.Sleep(1500 * time.Millisecond)
	}
	os.Exit(0)
}

type request struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params struct {
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
	} `json:"params"`
}

func write(v any) {
	b, _ := json.Marshal(v)
	out.Write(b)
	out.WriteByte('\n')
	out.Flush()
}

// handle answers one line and reports whether it was a request and a call.
func handle(line []byte) (int, int) {
	var req request
	if err := json.Unmarshal(line, &req); err != nil {
		logf("unparsable line: %v", err)
		return 0, 0
	}
	isCall := req.Method == "tools/call"
	if len(req.ID) == 0 || string(req.ID) == "null" || (isCall && has("falsy_ids") && (string(req.ID) == "0" || string(req.ID) == `""`)) {
		if has("answer_notifications") {
			write(map[string]any{"jsonrpc": "2.0", "id": nil, "error": map[string]any{"code": -32600, "message": "Invalid Request: no id"}})
		}
		return 0, 0
	}
	logf("%s id=%s", req.Method, req.ID)
	id := req.ID
	if isCall {
		id = callID(id)
		if has("stdout_print") {
			out.WriteString("handling tools/call " + req.Params.Name + "\n")
			out.Flush()
		}
		if has("log_notifications") {
			write(map[string]any{"jsonrpc": "2.0", "method": "notifications/message", "params": map[string]any{"level": "info", "data": "calling " + req.Params.Name}})
		}
		if has("exit_on_call") {
			logf("giving up")
			os.Exit(1)
		}
		if n := intFault("memory"); n > 0 {
			for i := 0; i < n; i++ {
				b := make([]byte, 1<<20)
				for j := 0; j < len(b); j += 4096 {
					b[j] = 1
				}
				keep = append(keep, b)
			}
		}
	}
	var result any
	switch req.Method {
	case "server/discover":
		if ms := intFault("slow_discover"); ms > 0 {
			time.Sleep(time.Duration(ms) * time.Millisecond)
		}
		result = discover()
	case "tools/list":
		result = complete(map[string]any{"ttlMs": 0, "cacheScope": "public", "tools": tools()})
	case "tools/call":
		res, rpcErr := call(req.Params.Name, req.Params.Arguments)
		if rpcErr != "" {
			write(map[string]any{"jsonrpc": "2.0", "id": id, "error": map[string]any{"code": -32602, "message": rpcErr}})
			return 1, 1
		}
		result = complete(res)
	default:
		write(map[string]any{"jsonrpc": "2.0", "id": id, "error": map[string]any{"code": -32601, "message": "method not found"}})
		return 1, 0
	}
	write(map[string]any{"jsonrpc": "2.0", "id": id, "result": result})
	return 1, b2i(isCall)
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// callID applies the id faults of tools/call answers.
func callID(id json.RawMessage) json.RawMessage {
	s := string(id)
	switch {
	case has("retype_call_ids") && strings.HasPrefix(s, `"`):
		return json.RawMessage(`"x-` + s[1:])
	case has("retype_call_ids"):
		return json.RawMessage(strconv.Quote(s))
	case has("float_ids") && !strings.HasPrefix(s, `"`):
		f, _ := strconv.ParseFloat(s, 64)
		b, _ := json.Marshal(f)
		return b
	}
	return id
}

var meta = map[string]any{"io.modelcontextprotocol/serverInfo": map[string]any{"name": "conformguest", "version": "0.1.0"}}

func complete(m map[string]any) map[string]any {
	if !has("minimal_discover") {
		m["resultType"] = "complete"
		m["_meta"] = meta
	}
	return m
}

func discover() any {
	if has("minimal_discover") {
		return map[string]any{"supportedVersions": []string{"2026-07-28"}, "capabilities": map[string]any{"tools": map[string]any{}}}
	}
	return complete(map[string]any{"ttlMs": 0, "cacheScope": "public", "supportedVersions": []string{"2026-07-28"}, "capabilities": map[string]any{"tools": map[string]any{}}})
}

func tools() []any {
	echo := map[string]any{
		"name":         "echo",
		"description":  "Return the text unchanged.",
		"inputSchema":  map[string]any{"type": "object", "properties": map[string]any{"text": map[string]any{"type": "string", "minLength": 1}}, "required": []string{"text"}, "additionalProperties": false},
		"outputSchema": map[string]any{"type": "object", "properties": map[string]any{"text": map[string]any{"type": "string"}}, "required": []string{"text"}},
	}
	if has("no_description") {
		delete(echo, "description")
	}
	if has("js_pattern") {
		// Zod's e-mail pattern style: a lookahead RE2 cannot compile.
		echo["inputSchema"].(map[string]any)["properties"].(map[string]any)["mail"] = map[string]any{"type": "string", "pattern": "^(?!\\.)[^@]+@[^@]+$"}
	}
	if has("nondeterministic") {
		echo["description"] = fmt.Sprintf("Return the text unchanged (build %d).", rand.Int64())
	}
	list := []any{echo, map[string]any{
		"name":        "picture",
		"description": "Return a picture inline and as a file under /volume/tmp.",
		"inputSchema": map[string]any{"type": "object", "properties": map[string]any{}, "additionalProperties": false},
	}}
	if has("long_name") {
		list = append(list, map[string]any{"name": strings.Repeat("l", 65), "description": "A tool with a long name.", "inputSchema": map[string]any{"type": "object"}})
	}
	return list
}

func text(s string) map[string]any { return map[string]any{"type": "text", "text": s} }

func toolError(msg string) map[string]any {
	return map[string]any{"content": []any{text(msg)}, "isError": true}
}

// call returns the result, or the message of a JSON-RPC error.
func call(name string, raw json.RawMessage) (map[string]any, string) {
	var args map[string]any
	if err := json.Unmarshal(raw, &args); err != nil || args == nil {
		args = map[string]any{}
	}
	bad := func(msg string) (map[string]any, string) {
		if has("rpc_error_on_bad_args") {
			return nil, "invalid params: " + msg
		}
		if has("accept_bad_args") {
			return map[string]any{"content": []any{text("done")}}, ""
		}
		return toolError(msg), ""
	}
	switch name {
	case "echo":
		t, ok := args["text"].(string)
		if !ok || t == "" || len(args) != 1 {
			return bad("text must be a non-empty string and the only argument")
		}
		if ms := intFault("sleep_echo"); ms > 0 {
			time.Sleep(time.Duration(ms) * time.Millisecond)
		}
		res := map[string]any{"content": []any{text(t)}, "structuredContent": map[string]any{"text": t}}
		if has("bad_structured") {
			res["structuredContent"] = map[string]any{"text": len(t)}
		}
		if has("no_structured") {
			delete(res, "structuredContent")
		}
		return res, ""
	case "picture":
		if len(args) != 0 {
			return bad("picture takes no arguments")
		}
		data := base64.StdEncoding.EncodeToString(tinyPNG)
		if has("broken_image") {
			data = "!!not base64!!"
		}
		link := "volume:///tmp/dot.png"
		if err := os.WriteFile("/volume/tmp/dot.png", tinyPNG, 0o644); err != nil {
			logf("writing dot.png: %v", err)
		}
		if has("broken_image") {
			link = "volume:///tmp/missing.png"
		}
		return map[string]any{"content": []any{
			text("A dot."),
			map[string]any{"type": "image", "mimeType": "image/png", "data": data},
			map[string]any{"type": "resource_link", "uri": link, "name": "dot.png", "mimeType": "image/png"},
		}}, ""
	case strings.Repeat("l", 65):
		if has("long_name") {
			return map[string]any{"content": []any{text("ok")}}, ""
		}
	}
	if has("unknown_tool_rpc_error") {
		return nil, "unknown tool: " + name
	}
	return toolError("unknown tool: " + name), ""
}
