// Command sdkgreet is the greet tool built with the official MCP Go SDK
// (github.com/modelcontextprotocol/go-sdk v1.8.0) over its stdio transport.
//
// It exists to prove that an unmodified SDK server works as an ABI 1
// package: the SDK answers server/discover and the per-request-_meta
// (stateless 2026-07-28) tools/list and tools/call without initialize. The
// SDK reads stdin in one goroutine and answers from another, so under a host
// whose stdin blocks the whole wasm thread it never answers; the host must
// offer non-blocking stdin with poll_oneoff readiness.
package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

type greetIn struct {
	Name string `json:"name" jsonschema:"Who to greet."`
}

type greetOut struct {
	Message string `json:"message"`
}

func greet(_ context.Context, _ *mcp.CallToolRequest, in greetIn) (*mcp.CallToolResult, greetOut, error) {
	if strings.TrimSpace(in.Name) == "" {
		// The SDK turns a handler error into an isError result, which is
		// what the model should read.
		return nil, greetOut{}, errors.New("name must not be empty")
	}
	return nil, greetOut{Message: fmt.Sprintf("Hello, %s!", in.Name)}, nil
}

func main() {
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	server := mcp.NewServer(&mcp.Implementation{Name: "sdkgreet", Version: "0.1.0"}, &mcp.ServerOptions{Logger: logger})
	mcp.AddTool(server, &mcp.Tool{Name: "greet", Description: "Greet someone by name."}, greet)
	if err := server.Run(context.Background(), &mcp.StdioTransport{}); err != nil {
		fmt.Fprintln(os.Stderr, "sdkgreet:", err)
		os.Exit(1)
	}
}
