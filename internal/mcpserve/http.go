package mcpserve

import (
	"fmt"
	"net/http"
	"net/url"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/zap"

	"github.com/subako/subako-runner/internal/loopback"
)

// statelessVersion is the first MCP revision without sessions: its requests
// carry MCP-Protocol-Version on every POST and need no Mcp-Session-Id.
const statelessVersion = "2026-07-28"

// Handler serves the server over Streamable HTTP, on any path (mount it
// where the clients expect it, conventionally /mcp).
//
// Requests of 2026-07-28 and later (by their MCP-Protocol-Version header)
// are served statelessly; anything else, initialize included, gets a session
// of 2025-06-18 or 2025-11-25 with Mcp-Session-Id and the GET stream for
// notifications. Before either, every request's Host and Origin are checked
// against DNS rebinding (see CheckHost): a page on another site cannot reach
// this server through the browser.
//
// Each call makes a handler with its own sessions: call it once per
// listener. A session idle for an hour is closed (the client starts anew).
func (s *Server) Handler() http.Handler {
	get := func(*http.Request) *mcp.Server { return s.sdk }
	logger := newSlogger(s.log.Named("mcp.http"))
	sessions := mcp.NewStreamableHTTPHandler(get, &mcp.StreamableHTTPOptions{
		Logger:         logger,
		SessionTimeout: time.Hour,
		// The Host and Origin checks below are stricter than the SDK's
		// (which checks Host only, and only on a loopback listener).
		DisableLocalhostProtection: true,
	})
	stateless := mcp.NewStreamableHTTPHandler(get, &mcp.StreamableHTTPOptions{
		Logger:                       logger,
		Stateless:                    true,
		DisableLocalhostProtection:   true,
		PropagateRequestCancellation: true, // a client that gives up ends the instance
	})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := s.CheckHost(r); err != nil {
			s.log.Warn("refused an HTTP request", zap.String("remote", r.RemoteAddr), zap.Error(err))
			http.Error(w, "Forbidden: "+err.Error(), http.StatusForbidden)
			return
		}
		if v := r.Header.Get("MCP-Protocol-Version"); v >= statelessVersion {
			stateless.ServeHTTP(w, r)
			return
		}
		sessions.ServeHTTP(w, r)
	})
}

// CheckHost is the DNS-rebinding defence of Handler. A browser tricked into
// sending a request here by a rebound name still sends that name in Host
// (and its page's origin in Origin), so both must name this machine as a
// client legitimately addresses it: localhost, a loopback address, one of
// Options.AllowedHosts, or with Options.AllowRemote any IP address. An
// Origin must also be http or https; "null" (a sandboxed or file page) is
// refused.
func (s *Server) CheckHost(r *http.Request) error {
	if !s.hostAllowed(r.Host) {
		return fmt.Errorf("Host %q is not an address of this server", r.Host)
	}
	origin := r.Header.Get("Origin")
	if origin == "" {
		return nil // not a browser, or a same-origin GET
	}
	u, err := url.Parse(origin)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("Origin %q is not an http(s) origin", origin)
	}
	if !s.hostAllowed(u.Host) {
		return fmt.Errorf("Origin %q is not a page of this server", origin)
	}
	return nil
}

func (s *Server) hostAllowed(hostport string) bool {
	return loopback.HostAllowed(hostport, s.opts.AllowedHosts, s.opts.AllowRemote)
}
