package main

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/subako/subako-runner/cmd/subako-runner/internal/loopback"
	"github.com/subako/subako-runner/cmd/subako-runner/internal/mcpserve"
	"github.com/subako/subako-runner/internal/text"
	"github.com/subako/subako-runner/runtime"
)

// mcpShutdown bounds the wait for the calls in flight to end once they are
// cancelled (the client has gone, or SIGINT/SIGTERM): with the runtime's
// close after it, the process is gone within 2 s.
const mcpShutdown = 500 * time.Millisecond

// mcpFlags are the flags of mcp beyond those of a call.
type mcpFlags struct {
	http           string
	allowRemote    bool
	allowedHosts   []string
	allowedOrigins []string
	maxSessions    int
	sessionIdle    time.Duration
	maxQueued      int
	watch          bool
	build          string // --build: the command --watch runs on source changes
}

func newMCPCmd(a *app) *cobra.Command {
	var h hostFlags
	var c callFlags
	var m mcpFlags
	cmd := &cobra.Command{
		Use:   "mcp [flags] PACKAGE",
		Short: "serve the package to any MCP client (stdio, or Streamable HTTP with --http)",
		Long: "Check and discover PACKAGE once, then serve it as an MCP server on stdin/stdout (or over\n" +
			"Streamable HTTP with --http): tools/list is the stored discovery, and every tools/call runs in a\n" +
			"fresh instance under the flags' limits, volumes and network, as on Subako. A crash is an isError\n" +
			"result naming the crash code. Logs go to stderr, never stdout.\n" +
			"Exit status: 0 when the client disconnects, 2 on a usage or host error, 3 when discovery crashed,\n" +
			"4 when the package is rejected (nothing is served then).",
		Args: positionals([]string{"PACKAGE"}, 1, 1),
		RunE: func(cmd *cobra.Command, args []string) error {
			req, err := c.request(a.e, "", nil)
			if err != nil {
				return usageErr(cmd, "%v", err)
			}
			if m.http != "" {
				if m.http, err = loopback.ListenAddr(m.http, m.allowRemote, "--http", "--http-allow-remote"); err != nil {
					return usageErr(cmd, "%v", err)
				}
			} else if m.allowRemote || len(m.allowedHosts) > 0 || len(m.allowedOrigins) > 0 {
				return usageErr(cmd, "--http-allow-remote, --http-allow-host and --allow-origin need --http")
			}
			if m.allowedHosts, err = loopback.NormalizeHosts(m.allowedHosts, "--http-allow-host"); err != nil {
				return usageErr(cmd, "%v", err)
			}
			if m.allowedOrigins, err = mcpserve.NormalizeOrigins(m.allowedOrigins); err != nil {
				return usageErr(cmd, "--allow-origin: %v", err)
			}
			if m.maxSessions < 0 || m.maxQueued < 0 || m.sessionIdle < 0 {
				return usageErr(cmd, "--http-max-sessions, --http-session-idle and --max-queued must not be negative")
			}
			if m.build != "" && !m.watch {
				return usageErr(cmd, "--build runs on changes --watch sees: give --watch too")
			}
			return status(runMCP(a.ctx, a.e, &h, &c, &m, args[0], req))
		},
	}
	h.register(cmd, false)
	// One line per call at info is what the operator reads in the client's
	// server log.
	h.logLevel = "info"
	cmd.Flags().Lookup("log-level").DefValue = "info"
	h.registerTrace(cmd)
	h.registerMetrics(cmd)
	h.registerWorkers(cmd)
	c.register(cmd)
	fs := cmd.Flags()
	fs.StringVar(&m.http, "http", "", "serve Streamable HTTP on `ADDR` (HOST:PORT, or PORT for 127.0.0.1:PORT) at /mcp instead of stdio")
	fs.BoolVar(&m.allowRemote, "http-allow-remote", false, "let --http listen on a non-loopback address and answer requests for any IP address")
	fs.Var(&repeated{&m.allowedHosts, "NAME"}, "http-allow-host", "also answer requests whose Host (and Origin) is NAME; repeatable")
	fs.Var(&repeated{&m.allowedOrigins, "ORIGIN"}, "allow-origin", "also answer browser requests from ORIGIN (SCHEME://HOST[:PORT], e.g. an editor's vscode-webview://… or the MCP Inspector's http://localhost:6274); repeatable")
	fs.IntVar(&m.maxSessions, "http-max-sessions", mcpserve.DefaultMaxSessions, "keep at most `N` sessions; a new one closes the session idle the longest")
	fs.DurationVar(&m.sessionIdle, "http-session-idle", mcpserve.DefaultSessionIdle, "close a session after `DURATION` without a request")
	fs.IntVar(&m.maxQueued, "max-queued", mcpserve.DefaultMaxQueued, "let at most `N` calls wait for a place (one per CPU runs); more are refused as busy")
	fs.BoolVar(&m.watch, "watch", false, "check and discover again when module.wasm or the manifest changes, and swap the package in")
	fs.StringVar(&m.build, "build", "", "with --watch: run `COMMAND` (sh -c, in the current directory) when a source file under it changes, then load what it built (e.g. --build make)")
	return cmd
}

func runMCP(ctx context.Context, e *env, h *hostFlags, c *callFlags, m *mcpFlags, path string, req runtime.CallRequest) int {
	keepDir := ""
	if c.volumes.keepTmp && req.Tmp == "" {
		// The kept volumes of all the calls are made in one directory,
		// made now, so the workers can be let write it.
		dir, err := os.MkdirTemp("", "subako-runner-kept-")
		if err != nil {
			return fail(e, "--keep-tmp: %v", err)
		}
		keepDir = dir
		defer os.Remove(dir) // only when no call kept anything there
	}
	c.volumes.allow(h, req.Tmp)
	h.readWrite = append(h.readWrite, keepDir)
	if m.watch {
		// A build may make the package directory again: the workers read
		// its parent, so the new one is theirs too.
		h.readOnly = append(h.readOnly, filepath.Dir(packageRoot(path)))
	}
	cfg, release, err := h.runtimeConfig(e, *req.Limits, path)
	if err != nil {
		return startFailed(ctx, e, err)
	}
	defer release()
	cfg.Logger = cfg.Logger.WithOptions(zap.WrapCore(promoteModuleStderr))
	rt, err := runtime.New(ctx, cfg)
	if err != nil {
		return startFailed(ctx, e, err)
	}
	defer func() { h.closing.Store(true); closeRuntime(ctx, rt) }()
	sandboxWarning(e.stderr, rt.Sandbox())
	pkg, err := rt.Load(ctx, path)
	if err != nil {
		return reportRejectedOnStderr(ctx, e, path, err)
	}
	srv := mcpserve.New(pkg, mcpserve.Options{
		Logger: cfg.Logger, Call: req, KeepTmp: c.volumes.keepTmp, KeepTmpDir: keepDir,
		AllowRemote: m.allowRemote, AllowedHosts: m.allowedHosts, AllowedOrigins: m.allowedOrigins,
		MaxSessions: m.maxSessions, SessionIdle: m.sessionIdle, MaxQueued: m.maxQueued,
	})
	defer func() {
		closeCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), mcpShutdown)
		defer cancel()
		srv.Close(closeCtx)
	}()
	serveCtx, stop := context.WithCancel(ctx)
	defer stop()
	if m.watch {
		watched := make(chan struct{})
		go func() {
			defer close(watched)
			srv.Watch(serveCtx, mcpserve.WatchOptions{
				Path:        path,
				Load:        func(ctx context.Context) (*runtime.Package, error) { return rt.Load(ctx, path) },
				Build:       m.build,
				BuildDir:    ".",
				BuildOutput: e.stderr,
			})
		}()
		// Runs before the server and the runtime close: no load in flight.
		defer func() { stop(); <-watched }()
	}
	tools := fmt.Sprintf("%d tools", len(pkg.Tools()))
	if len(pkg.Tools()) == 1 {
		tools = "1 tool"
	}
	if m.http == "" {
		fmt.Fprintf(e.stderr, "subako-runner: serving %s (%s) over stdio\n", pkg.Name(), tools)
		if err := srv.ServeStdio(serveCtx, e.stdin, e.stdout); err != nil {
			return fail(e, "%v", err)
		}
		return exitOK
	}
	ln, err := net.Listen("tcp", m.http)
	if err != nil {
		return fail(e, "--http: %v", err)
	}
	conns := loopback.NewConnLimiter(loopback.DefaultMaxConns)
	mux := http.NewServeMux()
	mux.Handle("/mcp", srv.Handler())
	// Requests end with the command (a call in flight stops on SIGINT/SIGTERM).
	hs := conns.Server(ctx, mux)
	fmt.Fprintf(e.stderr, "subako-runner: serving %s (%s) over Streamable HTTP at http://%s/mcp\n", pkg.Name(), tools, ln.Addr())
	done := make(chan error, 1)
	go func() { done <- hs.Serve(conns.Listener(ln)) }()
	select {
	case err := <-done:
		return fail(e, "--http: %v", err)
	case <-ctx.Done():
	}
	// Close, not Shutdown: the sessions' GET streams never go idle. The
	// command's context has already ended every 2026-07-28 call; a
	// session's call is cancelled by srv.Close before the runtime closes.
	hs.Close()
	return exitOK
}

// reportRejectedOnStderr is reportPackageError for a command whose stdout
// belongs to the protocol: every reason goes to stderr.
func reportRejectedOnStderr(ctx context.Context, e *env, path string, err error) int {
	if code, ok := interrupted(ctx, e, err); ok {
		return code
	}
	rej, code := rejection(e, err)
	if rej == nil {
		return code
	}
	var b strings.Builder
	fmt.Fprintf(&b, "subako-runner: %s was rejected, nothing is served: %d problem(s)\n", path, len(rej.Rejections))
	for _, r := range rej.Rejections {
		fmt.Fprintf(&b, "  %s: %s\n", r.Code, text.Terminal(r.Message))
	}
	if rej.Crash != nil {
		printStderr(&b, rej.Crash.Stderr)
	}
	fmt.Fprint(e.stderr, b.String())
	return code
}

// promoteModuleStderr shows the module's stderr lines, which the runtime
// logs at debug, at info: in mcp they are the author's only window into the
// module while a client drives it, and stderr is where an MCP client
// collects a server's diagnostics.
func promoteModuleStderr(inner zapcore.Core) zapcore.Core {
	return &stderrPromoter{inner}
}

type stderrPromoter struct{ zapcore.Core }

func isModuleStderr(ent zapcore.Entry) bool {
	return ent.Level == zapcore.DebugLevel && strings.HasPrefix(ent.Message, "module stderr")
}

func (c *stderrPromoter) Enabled(l zapcore.Level) bool {
	return c.Core.Enabled(l) || (l == zapcore.DebugLevel && c.Core.Enabled(zapcore.InfoLevel))
}

func (c *stderrPromoter) With(fields []zapcore.Field) zapcore.Core {
	return &stderrPromoter{c.Core.With(fields)}
}

func (c *stderrPromoter) Check(ent zapcore.Entry, ce *zapcore.CheckedEntry) *zapcore.CheckedEntry {
	if isModuleStderr(ent) {
		ent.Level = zapcore.InfoLevel
	}
	if c.Core.Enabled(ent.Level) {
		return ce.AddCore(ent, c)
	}
	return ce
}
