// Command misbehave is one ABI 1 guest that breaks the protocol in a chosen
// way, so each crash rule and each discovery rejection of the host contract
// can be tested against a real module. README.md lists every mode and the
// code the host must report for it.
//
// The mode comes from the package asset /package/mode, "MODE" or
// "METHOD:MODE" (the latter applies only to requests of that method); when
// no mode file applies, a tools/call uses its tool name as the mode. Without
// a mode file, discovery succeeds and lists one tool per call mode.
package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"time"
)

type request struct {
	ID     json.RawMessage `json:"id,omitempty"`
	Method string          `json:"method"`
	Params struct {
		Name   string  `json:"name"`
		Cursor *string `json:"cursor"`
	} `json:"params"`
}

// callModes are the behaviours a tools/call (or, through the mode file,
// any request) can be given; each is also listed as a tool.
var callModes = map[string]string{
	"ok":                            "answer normally",
	"notifications":                 "notifications before and after the answer; success",
	"partial_line_exit":             "answer without a newline, then exit 0 at once; success",
	"big_answer":                    "a valid 15 MiB answer line; success",
	"trailing_garbage":              "answer, then at EOF a partial non-JSON line; not_jsonrpc",
	"jsonrpc_error":                 "JSON-RPC error response; jsonrpc_error",
	"result_not_complete":           "resultType input_required; result_not_complete",
	"not_jsonrpc":                   "a plain-text line, then the answer; not_jsonrpc",
	"blank_line":                    "an empty line, then the answer; not_jsonrpc",
	"json_not_jsonrpc":              "a JSON line that is not JSON-RPC, then the answer; not_jsonrpc",
	"wrong_jsonrpc_version":         "answer with jsonrpc 1.0; not_jsonrpc",
	"non_utf8":                      "a line with invalid UTF-8, then the answer; not_jsonrpc",
	"unexpected_id":                 "an answer to an id never sent, then the answer; unexpected_id",
	"duplicate_answer":              "the answer twice; unexpected_id",
	"id_retyped":                    "the answer with the id's JSON type changed; unexpected_id",
	"server_request":                "a sampling/createMessage request, then the answer; server_request",
	"exited_before_response":        "exit 0 without answering; exited_before_response",
	"exited_before_response_code":   "exit 7 without answering; exited_before_response",
	"panic":                         "Go panic before answering (exit 2); exited_before_response",
	"panic_after_answer":            "answer, then Go panic at EOF (exit 2); exit_code",
	"exit_code":                     "answer, then exit 3 at EOF; exit_code",
	"exit_code_now":                 "answer, then exit 3 at once; exit_code",
	"exit_timeout":                  "answer, then busy-loop at EOF; exit_timeout",
	"exit_timeout_sleep":            "answer, then sleep forever at EOF; exit_timeout",
	"exit_timeout_read":             "answer, then keep reading the closed stdin forever; exit_timeout",
	"slow_exit":                     "answer, then exit 0 500 ms after EOF; success",
	"timeout":                       "busy-loop before answering; timeout (or out_of_fuel)",
	"timeout_sleep":                 "sleep forever before answering; timeout",
	"timeout_stdin":                 "keep reading stdin, never answer; timeout",
	"invalid_result":                "a result without content; invalid_result",
	"invalid_result_content_string": "content is a string; invalid_result",
	"invalid_result_null":           "result is null; invalid_result",
	"invalid_result_not_object":     "result is a string; invalid_result",
	"output_too_large":              "one 17 MiB line, then the answer; output_too_large",
	"output_too_large_total":        "65 notification lines of 1 MiB, then the answer; output_too_large",
	"output_too_large_partial":      "17 MiB without a newline, then exit 0; output_too_large",
	"stderr_crash":                  "12 KiB of stderr, answer, exit 3 at EOF; exit_code with a known stderr tail",
	"stderr_no_answer":              "12 KiB of stderr, exit 1 without answering; exited_before_response",
	"oom":                           "allocate until memory runs out; out_of_memory (Go exits 2)",
	"huge_id":                       "an answer whose id is a 15 MiB string of é; unexpected_id with a bounded message",
	"huge_method":                   "a request whose method is a 15 MiB string of é; server_request with a bounded message",
	"huge_error_message":            "a JSON-RPC error (id null) whose message is 15 MiB of é; jsonrpc_error with a bounded message",
}

// huge is 15 MiB of a two-byte character: under the 16 MiB line cap, and
// any cut that is not on a UTF-8 boundary shows.
func huge() string { return strings.Repeat("é", 15<<20/2) }

// discoveryModes shape server/discover and tools/list; they only come from
// the mode file.
var discoveryModes = map[string]bool{
	"discover_unsupported": true, "discover_no_tools_capability": true, "discover_tools_not_object": true,
	"discover_minimal": true, "invalid_tool_name": true, "invalid_tool_name_empty": true,
	"invalid_tool_name_long": true, "long_tool_names": true, "invalid_tool_no_schema": true,
	"invalid_tool_schema_not_object": true, "invalid_tool_schema_array": true,
	"invalid_tool_schema_remote_ref": true, "invalid_tool_schema_bad": true,
	"invalid_tool_output_schema": true, "invalid_tool_output_remote_ref": true,
	"invalid_tool_description": true, "invalid_tool_title": true, "schema_local_ref": true,
	"schema_draft7": true, "duplicate_tool": true, "duplicate_tool_same_page": true, "no_tools": true,
	"too_many_pages": true, "sixteen_pages": true, "empty_cursor": true, "cursor_echo": true,
	"too_many_tools": true, "max_tools": true, "slow_discovery": true,
}

var (
	stdin    = bufio.NewReader(os.Stdin)
	atEOF    func() // what to do when stdin closes; nil exits 0
	fileMode string
	fileFor  string // the method fileMode is limited to, or "" for all
	quiet    bool   // set once stderr holds a pattern whose tail tests check
)

func main() {
	if b, err := os.ReadFile("/package/mode"); err == nil {
		m := strings.TrimSpace(string(b))
		if i := strings.LastIndex(m, ":"); i >= 0 {
			fileFor, m = m[:i], m[i+1:]
		}
		fileMode = m
		logf("mode file: %q for %q", fileMode, fileFor)
	}
	for {
		line, err := stdin.ReadBytes('\n')
		if len(bytes.TrimSpace(line)) > 0 {
			handle(line)
		}
		if err != nil {
			if err != io.EOF {
				logf("reading stdin: %v", err)
			}
			break
		}
	}
	logf("stdin closed")
	if atEOF != nil {
		atEOF()
	}
	os.Exit(0)
}

func logf(format string, args ...any) {
	if quiet {
		return
	}
	fmt.Fprintf(os.Stderr, "misbehave: "+format+"\n", args...)
}

// writeLine writes b and a newline in one fd_write, so a line is never
// split by the guest.
func writeLine(b []byte) {
	os.Stdout.Write(append(b[:len(b):len(b)], '\n'))
}

func writeJSON(v any) {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	writeLine(b)
}

func respond(id json.RawMessage, result any) {
	writeJSON(map[string]any{"jsonrpc": "2.0", "id": id, "result": result})
}

var serverMeta = map[string]any{
	"io.modelcontextprotocol/serverInfo": map[string]any{"name": "misbehave", "version": "0.1.0"},
}

func complete(m map[string]any) map[string]any {
	m["resultType"] = "complete"
	m["_meta"] = serverMeta
	return m
}

func handle(line []byte) {
	var req request
	if err := json.Unmarshal(line, &req); err != nil {
		logf("unparsable line ignored: %v", err)
		return
	}
	if len(req.ID) == 0 || string(req.ID) == "null" {
		return // notification
	}
	mode := ""
	if fileMode != "" && (fileFor == "" || fileFor == req.Method) {
		mode = fileMode
	}
	if discoveryModes[mode] && req.Method == "tools/call" {
		mode = ""
	}
	if mode == "" && req.Method == "tools/call" {
		mode = req.Params.Name
	}
	logf("%s id=%s mode=%q", req.Method, req.ID, mode)
	if discoveryModes[mode] {
		if mode == "slow_discovery" {
			time.Sleep(12 * time.Second)
			mode = ""
		}
		respond(req.ID, normalResult(req, mode))
		return
	}
	misbehave(req, mode)
}

// normalResult is the well-formed answer to req, shaped by a discovery mode.
func normalResult(req request, mode string) any {
	switch req.Method {
	case "server/discover":
		return discoverResult(mode)
	case "tools/list":
		return listResult(req, mode)
	case "tools/call":
		if _, ok := callModes[req.Params.Name]; !ok {
			return complete(map[string]any{"content": []any{text("unknown tool " + req.Params.Name)}, "isError": true})
		}
		return complete(map[string]any{"content": []any{text("ok: " + req.Params.Name)}})
	}
	return complete(map[string]any{})
}

func text(s string) map[string]any { return map[string]any{"type": "text", "text": s} }

func discoverResult(mode string) any {
	res := complete(map[string]any{
		"ttlMs":             0,
		"cacheScope":        "public",
		"supportedVersions": []string{"2026-07-28"},
		"capabilities":      map[string]any{"tools": map[string]any{}},
	})
	switch mode {
	case "discover_unsupported":
		res["supportedVersions"] = []string{"2025-06-18", "2025-11-25"}
	case "discover_no_tools_capability":
		res["capabilities"] = map[string]any{"logging": map[string]any{}}
	case "discover_tools_not_object":
		res["capabilities"] = map[string]any{"tools": true}
	case "discover_minimal":
		return map[string]any{"supportedVersions": []string{"2026-07-28"}, "capabilities": map[string]any{"tools": map[string]any{}}}
	}
	return res
}

var objectSchema = map[string]any{"type": "object"}

func tool(name string) map[string]any {
	return map[string]any{"name": name, "description": "Tool " + name + ".", "inputSchema": objectSchema}
}

func page(tools []any, next *string) map[string]any {
	res := complete(map[string]any{"ttlMs": 0, "cacheScope": "public", "tools": tools})
	if next != nil {
		res["nextCursor"] = *next
	}
	return res
}

func ptr(s string) *string { return &s }

// cursorPage reads "page-N" cursors; no cursor is page 1.
func cursorPage(c *string) int {
	n := 1
	if c != nil {
		fmt.Sscanf(*c, "page-%d", &n)
	}
	return n
}

func listResult(req request, mode string) any {
	c := req.Params.Cursor
	one := func(t map[string]any) any { return page([]any{t}, nil) }
	switch mode {
	case "discover_minimal":
		return map[string]any{"tools": []any{tool("minimal")}}
	case "invalid_tool_name":
		return one(tool("bad name!"))
	case "invalid_tool_name_empty":
		return one(tool(""))
	case "invalid_tool_name_long":
		return one(tool(strings.Repeat("a", 129)))
	case "long_tool_names":
		return page([]any{tool(strings.Repeat("b", 65)), tool(strings.Repeat("c", 128))}, nil)
	case "invalid_tool_no_schema":
		t := tool("no_schema")
		delete(t, "inputSchema")
		return one(t)
	case "invalid_tool_schema_not_object":
		t := tool("string_schema")
		t["inputSchema"] = map[string]any{"type": "string"}
		return one(t)
	case "invalid_tool_schema_array":
		t := tool("array_schema")
		t["inputSchema"] = []any{}
		return one(t)
	case "invalid_tool_schema_remote_ref":
		t := tool("remote_ref")
		t["inputSchema"] = map[string]any{"type": "object", "properties": map[string]any{"x": map[string]any{"$ref": "https://example.com/s.json"}}}
		return one(t)
	case "invalid_tool_schema_bad":
		t := tool("bad_schema")
		t["inputSchema"] = map[string]any{"type": "object", "properties": map[string]any{"x": map[string]any{"type": 12}}}
		return one(t)
	case "invalid_tool_output_schema":
		t := tool("bad_output")
		t["outputSchema"] = map[string]any{"type": "object", "properties": map[string]any{"n": map[string]any{"minimum": "zero"}}}
		return one(t)
	case "invalid_tool_output_remote_ref":
		t := tool("remote_output")
		t["outputSchema"] = map[string]any{"$ref": "https://example.com/out.json"}
		return one(t)
	case "invalid_tool_description":
		t := tool("num_description")
		t["description"] = 42
		return one(t)
	case "invalid_tool_title":
		t := tool("obj_title")
		t["title"] = map[string]any{}
		return one(t)
	case "schema_local_ref":
		t := tool("local_ref")
		t["inputSchema"] = map[string]any{
			"type":       "object",
			"$defs":      map[string]any{"n": map[string]any{"type": "integer", "minimum": 0}},
			"properties": map[string]any{"count": map[string]any{"$ref": "#/$defs/n"}},
		}
		return one(t)
	case "schema_draft7":
		t := tool("draft7")
		t["inputSchema"] = map[string]any{
			"$schema":     "http://json-schema.org/draft-07/schema#",
			"type":        "object",
			"definitions": map[string]any{"n": map[string]any{"type": "integer"}},
			"properties":  map[string]any{"count": map[string]any{"$ref": "#/definitions/n"}},
		}
		return one(t)
	case "duplicate_tool":
		if c == nil {
			return page([]any{tool("a"), tool("b")}, ptr("page-2"))
		}
		return page([]any{tool("c"), tool("a")}, nil)
	case "duplicate_tool_same_page":
		return page([]any{tool("a"), tool("a")}, nil)
	case "no_tools":
		return page([]any{}, nil)
	case "too_many_pages":
		n := cursorPage(c)
		return page([]any{tool(fmt.Sprintf("page_%d", n))}, ptr(fmt.Sprintf("page-%d", n+1)))
	case "sixteen_pages":
		n := cursorPage(c)
		var next *string
		if n < 16 {
			next = ptr(fmt.Sprintf("page-%d", n+1))
		}
		return page([]any{tool(fmt.Sprintf("page_%d", n))}, next)
	case "empty_cursor":
		if c == nil {
			return page([]any{tool("first")}, ptr(""))
		}
		if *c == "" {
			return page([]any{tool("second")}, nil)
		}
		return page([]any{tool("unexpected_cursor")}, nil)
	case "cursor_echo":
		const odd = "opaque/ü ✓\"\\\u2028=="
		if c == nil {
			return page([]any{tool("first")}, ptr(odd))
		}
		if *c == odd {
			return page([]any{tool("second")}, nil)
		}
		return page([]any{tool("cursor_mangled")}, nil)
	case "too_many_tools", "max_tools":
		total := 1024
		if mode == "too_many_tools" {
			total = 1025
		}
		from, to, next := 0, 512, ptr("page-2")
		if c != nil {
			from, to, next = 512, total, nil
		}
		var ts []any
		for i := from; i < to; i++ {
			ts = append(ts, tool(fmt.Sprintf("t%04d", i)))
		}
		return page(ts, next)
	}
	var ts []any
	for _, name := range sortedModes() {
		t := tool(name)
		t["description"] = callModes[name]
		ts = append(ts, t)
	}
	return page(ts, nil)
}

func sortedModes() []string {
	names := make([]string, 0, len(callModes))
	for n := range callModes {
		names = append(names, n)
	}
	// Insertion sort keeps this dependency-free and the list tiny.
	for i := 1; i < len(names); i++ {
		for j := i; j > 0 && names[j] < names[j-1]; j-- {
			names[j], names[j-1] = names[j-1], names[j]
		}
	}
	return names
}

func notification(data string) []byte {
	b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "method": "notifications/message",
		"params": map[string]any{"level": "info", "logger": "misbehave", "data": data}})
	return b
}

// writeHugeLine writes a notification of about n bytes in 1 MiB chunks,
// ending it with a newline when newline is set.
func writeHugeLine(n int, newline bool) {
	os.Stdout.Write([]byte(`{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"`))
	chunk := bytes.Repeat([]byte("x"), 1<<20)
	for left := n; left > 0; left -= len(chunk) {
		if left < len(chunk) {
			chunk = chunk[:left]
		}
		os.Stdout.Write(chunk)
	}
	if newline {
		os.Stdout.Write([]byte("\"}}\n"))
	}
}

// StderrPattern is 12,233 bytes: a head, then 1,400 three-byte "€" so that
// the last 4,096 bytes begin in the middle of a character, then a marker.
// Cut forward to a UTF-8 boundary, the tail is 1,358 "€" followed by
// "\nSTDERR-TAIL-MARKER\n" (4,094 bytes).
func stderrPattern() []byte {
	var b bytes.Buffer
	b.WriteString("STDERR-HEAD\n")
	b.WriteString(strings.Repeat("h", 8000))
	b.WriteString("\n")
	b.WriteString(strings.Repeat("€", 1400))
	b.WriteString("\nSTDERR-TAIL-MARKER\n")
	return b.Bytes()
}

func busyLoop() {
	x := 0
	for {
		x++
	}
}

func sleepForever() {
	for {
		time.Sleep(time.Hour)
	}
}

var keep [][]byte

func misbehave(req request, mode string) {
	answer := func() { respond(req.ID, normalResult(req, "")) }
	switch mode {
	case "ok", "":
		answer()
	case "notifications":
		writeLine(notification("before the answer"))
		writeJSON(map[string]any{"jsonrpc": "2.0", "method": "notifications/progress", "params": map[string]any{"progressToken": "t", "progress": 1, "total": 2}})
		answer()
		writeLine(notification("after the answer"))
	case "partial_line_exit":
		b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": req.ID, "result": normalResult(req, "")})
		os.Stdout.Write(b)
		os.Exit(0)
	case "big_answer":
		respond(req.ID, complete(map[string]any{"content": []any{text(strings.Repeat("y", 15<<20))}}))
	case "trailing_garbage":
		answer()
		atEOF = func() { os.Stdout.Write([]byte(`{"jsonrpc":`)) }
	case "jsonrpc_error":
		writeJSON(map[string]any{"jsonrpc": "2.0", "id": req.ID, "error": map[string]any{"code": -32603, "message": "misbehave: internal error on purpose"}})
	case "result_not_complete":
		respond(req.ID, map[string]any{
			"resultType":    "input_required",
			"requestState":  "step=1",
			"inputRequests": map[string]any{"who": map[string]any{"method": "elicitation/create", "params": map[string]any{"message": "Who?", "requestedSchema": map[string]any{"type": "object"}}}},
		})
	case "not_jsonrpc":
		writeLine([]byte("this line is not JSON-RPC"))
		answer()
	case "blank_line":
		writeLine(nil)
		answer()
	case "json_not_jsonrpc":
		writeLine([]byte(`{"hello":"world"}`))
		answer()
	case "wrong_jsonrpc_version":
		writeJSON(map[string]any{"jsonrpc": "1.0", "id": req.ID, "result": normalResult(req, "")})
	case "non_utf8":
		writeLine([]byte("{\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\",\"params\":{\"data\":\"\xff\xfe\"}}"))
		answer()
	case "unexpected_id":
		respond(json.RawMessage(`"never-requested"`), normalResult(req, ""))
		answer()
	case "duplicate_answer":
		answer()
		answer()
	case "huge_id":
		id, _ := json.Marshal(huge())
		respond(id, normalResult(req, ""))
	case "huge_method":
		writeJSON(map[string]any{"jsonrpc": "2.0", "id": "x", "method": huge()})
	case "huge_error_message":
		writeJSON(map[string]any{"jsonrpc": "2.0", "id": nil, "error": map[string]any{"code": -32603, "message": huge()}})
	case "id_retyped":
		id := string(req.ID)
		var alt string
		switch {
		case strings.HasPrefix(id, `"`):
			var s string
			json.Unmarshal(req.ID, &s)
			if json.Valid([]byte(s)) && len(s) > 0 && (s[0] == '-' || (s[0] >= '0' && s[0] <= '9')) {
				alt = s
			} else {
				alt = `"` + "retyped-" + strings.Trim(id, `"`) + `"`
			}
		default:
			alt = `"` + id + `"`
		}
		respond(json.RawMessage(alt), normalResult(req, ""))
	case "server_request":
		writeJSON(map[string]any{"jsonrpc": "2.0", "id": "x", "method": "sampling/createMessage", "params": map[string]any{
			"messages": []any{map[string]any{"role": "user", "content": text("hi")}}, "maxTokens": 10}})
		answer()
	case "exited_before_response":
		os.Exit(0)
	case "exited_before_response_code":
		os.Exit(7)
	case "panic":
		var m map[string]int
		m["boom"] = 1 // assignment to a nil map: a Go panic, exit code 2
	case "panic_after_answer":
		answer()
		atEOF = func() { panic("misbehave: panic after the answer") }
	case "exit_code":
		answer()
		atEOF = func() { os.Exit(3) }
	case "exit_code_now":
		answer()
		os.Exit(3)
	case "exit_timeout":
		answer()
		atEOF = busyLoop
	case "exit_timeout_sleep":
		answer()
		atEOF = sleepForever
	case "exit_timeout_read":
		answer()
		atEOF = func() {
			buf := make([]byte, 64)
			for {
				os.Stdin.Read(buf)
			}
		}
	case "slow_exit":
		answer()
		atEOF = func() { time.Sleep(500 * time.Millisecond) }
	case "timeout":
		busyLoop()
	case "timeout_sleep":
		sleepForever()
	case "timeout_stdin":
		io.Copy(io.Discard, stdin)
		logf("stdin closed while waiting; exiting without an answer")
		os.Exit(0)
	case "invalid_result":
		respond(req.ID, map[string]any{"message": "no content here"})
	case "invalid_result_content_string":
		respond(req.ID, map[string]any{"content": "hello"})
	case "invalid_result_null":
		writeLine([]byte(`{"jsonrpc":"2.0","id":` + string(req.ID) + `,"result":null}`))
	case "invalid_result_not_object":
		respond(req.ID, "just a string")
	case "output_too_large":
		writeHugeLine(17<<20, true)
		answer()
	case "output_too_large_total":
		for i := 0; i < 65; i++ {
			writeHugeLine(1<<20, true)
		}
		answer()
	case "output_too_large_partial":
		writeHugeLine(17<<20, false)
		os.Exit(0)
	case "stderr_crash":
		os.Stderr.Write(stderrPattern())
		quiet = true
		answer()
		atEOF = func() { os.Exit(3) }
	case "stderr_no_answer":
		os.Stderr.Write(stderrPattern())
		os.Exit(1)
	case "oom":
		for {
			b := make([]byte, 16<<20)
			for i := 0; i < len(b); i += 4096 {
				b[i] = 1
			}
			keep = append(keep, b)
		}
	default:
		writeJSON(map[string]any{"jsonrpc": "2.0", "id": req.ID, "error": map[string]any{"code": -32602, "message": "unknown mode or tool: " + mode}})
	}
}
