// Command volops is an ABI 1 guest with one tool, fs {op, path, to}, that
// does one file system operation and answers "ok" or the error (isError):
// the runtime's tests use it to touch /volume/tmp in every way a guest can
// and check that the next call still gets a fresh directory.
//
// Ops: list, stat, lstat, chtimes, create, remove, churn (create, then
// remove), mkdir, open, symlink
// (a link at path to to), link (path to to), rename (path to to), readlink,
// fstat3 and readdir3 (fd_filestat_get and fd_readdir on descriptor 3, the
// first preopen: /volume/tmp), fresh (what the test needs to tell a fresh
// /volume/tmp: its times, link count and number of entries) and none.
package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"syscall"
	"time"
)

type message struct {
	ID     json.RawMessage `json:"id,omitempty"`
	Method string          `json:"method"`
	Params struct {
		Arguments struct {
			Op, Path, To string
		} `json:"arguments"`
	} `json:"params"`
}

var fsTool = map[string]any{
	"name":        "fs",
	"description": "Do one file system operation.",
	"inputSchema": map[string]any{"type": "object", "properties": map[string]any{
		"op": map[string]any{"type": "string"}, "path": map[string]any{"type": "string"}, "to": map[string]any{"type": "string"},
	}},
}

func main() {
	sc := bufio.NewScanner(os.Stdin)
	sc.Buffer(nil, 1<<20)
	enc := json.NewEncoder(os.Stdout) // one message a line
	for sc.Scan() {
		var m message
		if json.Unmarshal(sc.Bytes(), &m) != nil || len(m.ID) == 0 {
			continue
		}
		result := map[string]any{"resultType": "complete"}
		switch m.Method {
		case "server/discover":
			result["supportedVersions"] = []string{"2026-07-28"}
			result["capabilities"] = map[string]any{"tools": map[string]any{}}
		case "tools/list":
			result["tools"] = []any{fsTool}
		case "tools/call":
			a := m.Params.Arguments
			text, isError := "ok", false
			if err := do(a.Op, a.Path, a.To); err != nil {
				text, isError = err.Error(), true
			}
			result["content"] = []any{map[string]any{"type": "text", "text": text}}
			result["isError"] = isError
		}
		enc.Encode(map[string]any{"jsonrpc": "2.0", "id": m.ID, "result": result})
	}
}

func do(op, path, to string) error {
	switch op {
	case "fresh":
		var st syscall.Stat_t
		if err := syscall.Fstat(3, &st); err != nil {
			return err
		}
		entries, err := os.ReadDir("/volume/tmp")
		if err != nil {
			return err
		}
		return fmt.Errorf("atime=%d mtime=%d ctime=%d nlink=%d entries=%d", st.Atime, st.Mtime, st.Ctime, st.Nlink, len(entries))
	case "none":
		return nil
	case "list":
		_, err := os.ReadDir(path)
		return err
	case "stat":
		_, err := os.Stat(path)
		return err
	case "lstat":
		_, err := os.Lstat(path)
		return err
	case "chtimes":
		t := time.Date(2001, 1, 1, 0, 0, 0, 0, time.UTC)
		return os.Chtimes(path, t, t)
	case "create":
		return os.WriteFile(path, []byte("left by an earlier call"), 0o644)
	case "remove":
		return os.Remove(path)
	case "churn": // create and remove: the directory is empty again
		if err := os.WriteFile(path, nil, 0o644); err != nil {
			return err
		}
		return os.Remove(path)
	case "mkdir":
		return os.Mkdir(path, 0o755)
	case "open":
		f, err := os.Open(path)
		if err != nil {
			return err
		}
		return f.Close()
	case "symlink":
		return os.Symlink(to, path)
	case "link":
		return os.Link(path, to)
	case "rename":
		return os.Rename(path, to)
	case "readlink":
		_, err := os.Readlink(path)
		return err
	case "fstat3":
		var st syscall.Stat_t
		return syscall.Fstat(3, &st)
	case "readdir3":
		buf := make([]byte, 4096)
		_, err := syscall.ReadDir(3, buf, 0)
		return err
	}
	return errors.New("unknown op " + op)
}
