// Package mcpserve serves a loaded ABI 1 package to any MCP client, over
// stdio or Streamable HTTP, with Subako's semantics: the tool list is the
// one discovery stored, and every tools/call runs in a fresh instance of the
// module under the call's limits, volumes and network policy
// (`subako-runner mcp`).
//
// The client-facing protocol is the official MCP Go SDK's: it answers
// initialize for clients of 2025-06-18 and 2025-11-25, server/discover and
// the stateless requests of 2026-07-28, ping, paginated tools/list and
// notifications/cancelled. This package supplies the tools, turns a call
// into runtime.Package.Call, and turns the outcome into a CallToolResult:
// the module's own result, or for a crash an isError result naming the
// crash code, its message and the module's last stderr, never a JSON-RPC
// error.
//
//	srv := mcpserve.New(pkg, mcpserve.Options{Logger: log})
//	defer srv.Close(ctx)
//	err := srv.ServeStdio(ctx, os.Stdin, os.Stdout)
//
// Handler serves the same server over Streamable HTTP, and Watch reloads the
// package when its files change.
package mcpserve
