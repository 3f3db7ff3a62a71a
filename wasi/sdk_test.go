package wasi_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/subako/subako-runner/internal/devtools/testguest"
	"github.com/subako/subako-runner/wasi"
)

// TestOfficialMCPGoSDKGuest runs the official MCP Go SDK's stdio server
// (testdata/guests/sdkgreet): it reads stdin in one goroutine and answers
// from another, so it answers only if stdin is non-blocking and pollable.
func TestOfficialMCPGoSDKGuest(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and compiles a 14 MB guest")
	}
	wasm := testguest.Go(t, "../testdata/guests/sdkgreet")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	stdin := wasi.NewStdin()
	pr, pw := io.Pipe()
	stderr := &syncBuffer{}
	done := make(chan error, 1)
	go func() {
		code, err := run(t, ctx, wasm, wasi.Config{Stdin: stdin, Stdout: lineWriter{pw}, Stderr: stderr})
		pw.Close()
		if err == nil && code != 0 {
			err = fmt.Errorf("exit code %d", code)
		}
		done <- err
	}()
	const meta = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"subako","version":"test"},"io.modelcontextprotocol/clientCapabilities":{}}`
	lines := bufio.NewScanner(pr)
	lines.Buffer(nil, 1<<20)
	for i, req := range []string{
		`{"jsonrpc":"2.0","id":"a1","method":"tools/call","params":{"name":"greet","arguments":{"name":"Ada"},` + meta + `}}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"greet","arguments":{"name":"Bo"},` + meta + `}}`,
	} {
		stdin.Write([]byte(req + "\n"))
		if !lines.Scan() {
			t.Fatalf("no answer to request %d while stdin is open; stderr:\n%s", i, stderr)
		}
		want := []string{"Hello, Ada!", "Hello, Bo!"}[i]
		if !strings.Contains(lines.Text(), want) {
			t.Fatalf("answer %q lacks %q", lines.Text(), want)
		}
	}
	stdin.CloseWrite()
	for lines.Scan() {
	}
	if err := <-done; err != nil {
		t.Fatalf("%v; stderr:\n%s", err, stderr)
	}
}
