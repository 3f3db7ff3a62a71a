// Command greet is the example ABI 1 package: a stateless MCP 2026-07-28
// server over stdio written against the raw protocol with encoding/json and
// bufio only, so it shows a guest author everything an SDK would hide.
//
// Tools:
//   - greet {name}: text {"message":"Hello, <name>!"} plus structuredContent;
//     an empty or missing name is a tool error (isError).
//   - media {}: one block of every kind the host's model view handles
//     (text, PNG image, volume:/// resource_link to a PNG it writes under
//     /volume/tmp, a volume link to a text file, a non-volume link, audio).
//   - media_edge {}: content blocks the host must turn into notes or refuse
//     (bad magic, bad base64, unsupported image type, escaping and missing
//     volume links, embedded resource, unknown block type).
//   - echo_args {...}: returns its arguments as structuredContent.
//   - read_file {path}, write_file {path, text}: file access, so mounts and
//     their read-only/confinement rules can be exercised from a real guest.
//
// The greeting word comes from /package/assets/greeting.txt when the package
// has that asset (so the /package mount is exercised), else "Hello".
package main

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
)

const protocolVersion = "2026-07-28"

var serverMeta = map[string]any{
	"io.modelcontextprotocol/serverInfo": map[string]any{"name": "greet", "version": "0.1.0"},
}

type request struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id,omitempty"`
	Method  string          `json:"method"`
	Params  json.RawMessage `json:"params,omitempty"`
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

// tinyPNG is a valid 1x1 red PNG.
var tinyPNG = mustB64("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==")

// tinyWAV is a valid 8-bit mono WAV header with four samples.
var tinyWAV = []byte("RIFF\x28\x00\x00\x00WAVEfmt \x10\x00\x00\x00\x01\x00\x01\x00\x40\x1f\x00\x00\x40\x1f\x00\x00\x01\x00\x08\x00data\x04\x00\x00\x00\x80\x80\x80\x80")

func mustB64(s string) []byte {
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		panic(err)
	}
	return b
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
			fmt.Fprintln(os.Stderr, "greet: reading stdin:", err)
			os.Exit(1)
		}
	}
}

func handle(line []byte) *response {
	var req request
	if err := json.Unmarshal(line, &req); err != nil {
		fmt.Fprintln(os.Stderr, "greet: ignoring unparsable line:", err)
		return nil
	}
	if len(req.ID) == 0 || string(req.ID) == "null" {
		return nil // a notification: ignored
	}
	fmt.Fprintf(os.Stderr, "greet: %s id=%s\n", req.Method, req.ID)
	resp := &response{JSONRPC: "2.0", ID: req.ID}
	switch req.Method {
	case "server/discover":
		resp.Result = map[string]any{
			"resultType":        "complete",
			"_meta":             serverMeta,
			"ttlMs":             0,
			"cacheScope":        "public",
			"supportedVersions": []string{protocolVersion},
			"capabilities":      map[string]any{"tools": map[string]any{}},
		}
	case "tools/list":
		resp.Result = map[string]any{
			"resultType": "complete",
			"_meta":      serverMeta,
			"ttlMs":      0,
			"cacheScope": "public",
			"tools":      tools(),
		}
	case "tools/call":
		var p struct {
			Name      string          `json:"name"`
			Arguments json.RawMessage `json:"arguments"`
		}
		if err := json.Unmarshal(req.Params, &p); err != nil {
			resp.Error = &rpcError{Code: -32602, Message: "invalid params: " + err.Error()}
			return resp
		}
		result, ok := call(p.Name, p.Arguments)
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

func obj(props map[string]any, required ...string) map[string]any {
	s := map[string]any{"type": "object", "properties": props}
	if len(required) > 0 {
		s["required"] = required
	}
	return s
}

func str(desc string) map[string]any { return map[string]any{"type": "string", "description": desc} }

func tools() []any {
	return []any{
		map[string]any{
			"name":         "greet",
			"title":        "Greet",
			"description":  "Greet someone by name.",
			"inputSchema":  obj(map[string]any{"name": str("Who to greet.")}, "name"),
			"outputSchema": obj(map[string]any{"message": map[string]any{"type": "string"}}, "message"),
		},
		map[string]any{
			"name":        "media",
			"description": "Return one content block of every kind the model view shows: text, image, volume and web resource links, audio.",
			"inputSchema": obj(map[string]any{}),
		},
		map[string]any{
			"name":        "media_edge",
			"description": "Return content blocks the model view must turn into notes.",
			"inputSchema": obj(map[string]any{}),
		},
		map[string]any{
			"name":        "echo_args",
			"description": "Return the arguments unchanged as structuredContent.",
			"inputSchema": map[string]any{"type": "object", "additionalProperties": true},
		},
		map[string]any{
			"name":        "read_file",
			"description": "Read a file and return its content as text.",
			"inputSchema": obj(map[string]any{"path": str("Absolute path, e.g. /package/assets/greeting.txt.")}, "path"),
		},
		map[string]any{
			"name":        "write_file",
			"description": "Write text to a file (created or truncated).",
			"inputSchema": obj(map[string]any{"path": str("Absolute path under /volume."), "text": str("Content.")}, "path", "text"),
		},
	}
}

func text(s string) map[string]any { return map[string]any{"type": "text", "text": s} }

func toolError(msg string) map[string]any {
	return map[string]any{"content": []any{text(msg)}, "isError": true}
}

func call(name string, rawArgs json.RawMessage) (map[string]any, bool) {
	args := map[string]any{}
	if len(rawArgs) > 0 && string(rawArgs) != "null" {
		// UseNumber keeps big integers exact when they are echoed back.
		dec := json.NewDecoder(bytes.NewReader(rawArgs))
		dec.UseNumber()
		if err := dec.Decode(&args); err != nil {
			return toolError("arguments must be an object: " + err.Error()), true
		}
	}
	switch name {
	case "greet":
		n, _ := args["name"].(string)
		if strings.TrimSpace(n) == "" {
			return toolError("name must not be empty"), true
		}
		msg := fmt.Sprintf("%s, %s!", greeting(), n)
		sc := map[string]any{"message": msg}
		b, _ := json.Marshal(sc)
		return map[string]any{"content": []any{text(string(b))}, "structuredContent": sc}, true
	case "media":
		return media(), true
	case "media_edge":
		return mediaEdge(), true
	case "echo_args":
		return map[string]any{"content": []any{text(string(rawArgs))}, "structuredContent": args}, true
	case "read_file":
		p, _ := args["path"].(string)
		b, err := os.ReadFile(p)
		if err != nil {
			return toolError(err.Error()), true
		}
		return map[string]any{"content": []any{text(string(b))}}, true
	case "write_file":
		p, _ := args["path"].(string)
		t, _ := args["text"].(string)
		if err := os.WriteFile(p, []byte(t), 0o644); err != nil {
			return toolError(err.Error()), true
		}
		return map[string]any{"content": []any{text(fmt.Sprintf("wrote %d bytes to %s", len(t), p))}}, true
	}
	return nil, false
}

// greeting reads the package's asset when /package is mounted.
func greeting() string {
	b, err := os.ReadFile("/package/assets/greeting.txt")
	if err != nil {
		if !errors.Is(err, os.ErrNotExist) {
			fmt.Fprintln(os.Stderr, "greet: reading greeting asset:", err)
		}
		return "Hello"
	}
	if g := strings.TrimSpace(string(b)); g != "" {
		return g
	}
	return "Hello"
}

func media() map[string]any {
	content := []any{
		text("Here is the chart."),
		map[string]any{"type": "image", "mimeType": "image/png", "data": base64.StdEncoding.EncodeToString(tinyPNG)},
	}
	// Files the links point at; without a writable /volume/tmp the links
	// are still sent so the host's "does not resolve" note can be tested.
	if err := os.WriteFile("/volume/tmp/chart 1.png", tinyPNG, 0o644); err != nil {
		fmt.Fprintln(os.Stderr, "greet: writing chart:", err)
	}
	if err := os.WriteFile("/volume/tmp/notes.txt", []byte("plain notes\n"), 0o644); err != nil {
		fmt.Fprintln(os.Stderr, "greet: writing notes:", err)
	}
	content = append(content,
		map[string]any{"type": "resource_link", "uri": "volume:///tmp/chart%201.png", "name": "chart 1.png", "mimeType": "image/png"},
		map[string]any{"type": "resource_link", "uri": "volume:///tmp/notes.txt", "name": "notes.txt", "mimeType": "text/plain"},
		map[string]any{"type": "resource_link", "uri": "https://example.com/report.pdf", "name": "Quarterly report", "mimeType": "application/pdf"},
		map[string]any{"type": "audio", "mimeType": "audio/wav", "data": base64.StdEncoding.EncodeToString(tinyWAV)},
	)
	return map[string]any{"content": content}
}

func mediaEdge() map[string]any {
	jpegMagic := []byte{0xff, 0xd8, 0xff, 0xe0, 0, 0x10, 'J', 'F', 'I', 'F', 0}
	if err := os.WriteFile("/volume/tmp/fake.png", []byte("not really a png"), 0o644); err != nil {
		fmt.Fprintln(os.Stderr, "greet: writing fake.png:", err)
	}
	if err := os.Mkdir("/volume/tmp/adir", 0o755); err != nil && !errors.Is(err, os.ErrExist) {
		fmt.Fprintln(os.Stderr, "greet: mkdir adir:", err)
	}
	return map[string]any{"content": []any{
		// 0: PNG label on JPEG bytes: magic mismatch.
		map[string]any{"type": "image", "mimeType": "image/png", "data": base64.StdEncoding.EncodeToString(jpegMagic)},
		// 1: not base64.
		map[string]any{"type": "image", "mimeType": "image/png", "data": "!!not base64!!"},
		// 2: an image type outside the four.
		map[string]any{"type": "image", "mimeType": "image/svg+xml", "data": base64.StdEncoding.EncodeToString([]byte("<svg/>"))},
		// 3: escapes /volume by dot-dot segments.
		map[string]any{"type": "resource_link", "uri": "volume:///tmp/../../etc/passwd", "name": "escape"},
		// 4: escapes by an encoded slash inside one segment.
		map[string]any{"type": "resource_link", "uri": "volume:///tmp/..%2F..%2Fetc%2Fpasswd", "name": "escape-encoded"},
		// 5: does not exist.
		map[string]any{"type": "resource_link", "uri": "volume:///tmp/missing.png", "name": "missing"},
		// 6: a directory, not a regular file.
		map[string]any{"type": "resource_link", "uri": "volume:///tmp/adir", "name": "adir"},
		// 7: .png name, non-PNG bytes: a file reference, not an image.
		map[string]any{"type": "resource_link", "uri": "volume:///tmp/fake.png", "name": "fake.png", "mimeType": "image/png"},
		// 8: an embedded resource: omitted.
		map[string]any{"type": "resource", "resource": map[string]any{"uri": "file:///x.txt", "mimeType": "text/plain", "text": "embedded"}},
		// 9: a block type nobody knows: omitted.
		map[string]any{"type": "hologram", "data": "zzz"},
		// 10: a volume mount the call does not have.
		map[string]any{"type": "resource_link", "uri": "volume:///data/report.csv", "name": "report.csv"},
	}}
}
