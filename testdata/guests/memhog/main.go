// Command memhog is a memory-heavy ABI 1 package: its one tool allocates a
// large buffer, writes every byte of it and answers. It is what a package
// that copies or transforms a large file does to its linear memory, and it
// shows how long the host takes to give a guest that memory and to take it
// back (tests of runtime/, and the memory rows of `make bench`).
//
// Tool alloc {mib, grow}: allocates mib MiB (default 64) in one make, or with
// grow true by appending 64 KiB at a time (as io.ReadAll of a large file
// does, so the Go heap is copied as it doubles); writes every byte; answers
// "allocated N MiB, checksum C". mib must be 1..4096.
package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
)

type request struct {
	ID     json.RawMessage `json:"id,omitempty"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params,omitempty"`
}

var meta = map[string]any{"io.modelcontextprotocol/serverInfo": map[string]any{"name": "memhog", "version": "0.1.0"}}

func main() {
	in := bufio.NewReader(os.Stdin)
	for {
		line, err := in.ReadBytes('\n')
		if len(bytes.TrimSpace(line)) > 0 {
			var req request
			if json.Unmarshal(line, &req) == nil && len(req.ID) > 0 && string(req.ID) != "null" {
				b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": req.ID, "result": answer(req)})
				os.Stdout.Write(append(b, '\n'))
			}
		}
		if err == io.EOF {
			os.Exit(0)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "memhog: reading stdin:", err)
			os.Exit(1)
		}
	}
}

func answer(req request) map[string]any {
	r := map[string]any{"resultType": "complete", "_meta": meta}
	switch req.Method {
	case "server/discover":
		r["ttlMs"], r["cacheScope"] = 0, "public"
		r["supportedVersions"] = []string{"2026-07-28"}
		r["capabilities"] = map[string]any{"tools": map[string]any{}}
	case "tools/list":
		r["ttlMs"], r["cacheScope"] = 0, "public"
		r["tools"] = []any{map[string]any{
			"name":        "alloc",
			"description": "Allocate and fill a buffer of mib MiB, then answer.",
			"inputSchema": map[string]any{"type": "object", "properties": map[string]any{
				"mib":  map[string]any{"type": "integer", "minimum": 1, "maximum": 4096},
				"grow": map[string]any{"type": "boolean"},
			}},
		}}
	default: // tools/call
		var p struct {
			Arguments struct {
				MiB  int  `json:"mib"`
				Grow bool `json:"grow"`
			} `json:"arguments"`
		}
		_ = json.Unmarshal(req.Params, &p)
		n := p.Arguments.MiB
		if n == 0 {
			n = 64
		}
		if n < 1 || n > 4096 {
			r["content"] = []any{map[string]any{"type": "text", "text": "mib must be 1..4096"}}
			r["isError"] = true
			return r
		}
		r["content"] = []any{map[string]any{"type": "text", "text": fill(n<<20, p.Arguments.Grow)}}
	}
	return r
}

// fill allocates size bytes and writes all of them, so every page is really
// used, with copy (memory.copy) rather than a byte loop, so that the call's
// time is the memory's, not the guest's arithmetic.
func fill(size int, grow bool) string {
	var buf []byte
	if grow {
		chunk := make([]byte, 64<<10)
		for len(buf) < size {
			chunk[0] = byte(len(buf) >> 16)
			buf = append(buf, chunk...)
		}
	} else {
		buf = make([]byte, size)
		for i := 0; i < 4096 && i < size; i++ {
			buf[i] = byte(i)
		}
		for n := 4096; n < size; n *= 2 {
			copy(buf[n:], buf[:n])
		}
	}
	var sum uint64
	for i := 0; i < size; i += 4096 {
		sum += uint64(buf[i])
	}
	fmt.Fprintf(os.Stderr, "memhog: filled %d MiB\n", size>>20)
	return fmt.Sprintf("allocated %d MiB, checksum %d", size>>20, sum)
}
