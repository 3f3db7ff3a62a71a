package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"time"

	"github.com/spf13/cobra"

	"github.com/subako/subako-runner/cmd/subako-runner/internal/inspect"
	"github.com/subako/subako-runner/cmd/subako-runner/internal/loopback"
	"github.com/subako/subako-runner/runtime"
)

// inspectFlags are the flags of inspect beyond those of a call.
type inspectFlags struct {
	listen       string
	allowRemote  bool
	allowedHosts []string
	examples     map[string][]json.RawMessage // --examples, for the Check tab
}

func newInspectCmd(a *app) *cobra.Command {
	var h hostFlags
	var c callFlags
	var f inspectFlags
	var examplesFile string
	cmd := &cobra.Command{
		Use:   "inspect [flags] PACKAGE",
		Short: "serve a local web page to judge a package: upload report, tools, calls, model view, checks",
		Long: "Check and discover PACKAGE, then serve a local web page that shows the upload report, the tools\n" +
			"and their schemas, a form to call each tool under the flags' limits, volumes and network, what\n" +
			"the model reads (images drawn, volume files listed), crashes with their stderr tail, the cost of\n" +
			"each call, and the conformance checklist. The page's URL, with its random token, is printed on\n" +
			"stdout. A refused package still gets its page, which shows why.\n" +
			"Exit status: 0 when interrupted (Ctrl-C), 2 on a usage or host error.",
		Args: positionals([]string{"PACKAGE"}, 1, 1),
		RunE: func(cmd *cobra.Command, args []string) error {
			req, err := c.request(a.e, "", nil)
			if err != nil {
				return usageErr(cmd, "%v", err)
			}
			if f.listen, err = loopback.ListenAddr(f.listen, f.allowRemote, "--listen", "--listen-allow-remote"); err != nil {
				return usageErr(cmd, "%v", err)
			}
			if f.allowedHosts, err = loopback.NormalizeHosts(f.allowedHosts, "--listen-allow-host"); err != nil {
				return usageErr(cmd, "%v", err)
			}
			if f.examples, err = readExamples(examplesFile); err != nil {
				return usageErr(cmd, "%v", err)
			}
			return status(runInspect(a.ctx, a.e, &h, &f, args[0], req))
		},
	}
	h.register(cmd, false)
	h.registerMetrics(cmd)
	h.registerWorkers(cmd)
	c.register(cmd)
	fs := cmd.Flags()
	fs.StringVar(&f.listen, "listen", "127.0.0.1:0", "serve the page on `ADDR` (HOST:PORT, or PORT for 127.0.0.1:PORT; port 0 picks a free one)")
	fs.BoolVar(&f.allowRemote, "listen-allow-remote", false, "let --listen use a non-loopback address (the token still guards every request)")
	fs.StringVar(&examplesFile, "examples", "", "JSON `FILE` mapping tool names to arrays of argument objects: the Check tab calls each, under the network flags (as check --examples)")
	fs.Var(&repeated{&f.allowedHosts, "NAME"}, "listen-allow-host", "also answer requests whose Host is NAME (a name other machines use for this one); repeatable")
	return cmd
}

func runInspect(ctx context.Context, e *env, h *hostFlags, f *inspectFlags, path string, req runtime.CallRequest) int {
	// Every call of the page mounts the flags' volumes; the page names no
	// other host path (a reload loads PACKAGE again).
	h.readOnly = append(h.readOnly, req.Skills)
	h.readWrite = append(h.readWrite, req.Data, req.Tmp)
	rt, closeRT, err := h.openRuntime(ctx, e, *req.Limits, path)
	if err != nil {
		return startFailed(ctx, e, err)
	}
	defer closeRT()
	log, err := h.logger(e.stderr)
	if err != nil {
		return fail(e, "%v", err)
	}
	srv, err := inspect.New(ctx, inspect.Config{Runtime: rt, Path: path, Request: req, AllowedHosts: f.allowedHosts, Logger: log, Examples: f.examples})
	if err != nil {
		if code, ok := interrupted(ctx, e, err); ok {
			return code
		}
		return fail(e, "%v", err)
	}
	defer srv.Close(context.WithoutCancel(ctx))
	ln, err := net.Listen("tcp", f.listen)
	if err != nil {
		return fail(e, "--listen: %v", err)
	}
	conns := loopback.NewConnLimiter(loopback.DefaultMaxConns)
	// Requests end with the command (a call in flight stops on SIGINT/SIGTERM).
	hs := conns.Server(ctx, srv)
	done := make(chan error, 1)
	go func() { done <- hs.Serve(conns.Listener(ln)) }()
	fmt.Fprintf(e.stderr, "subako-runner: inspecting %s; open this URL (Ctrl-C stops):\n", path)
	fmt.Fprintln(e.stdout, srv.URL(ln.Addr().String()))
	select {
	case err := <-done:
		return fail(e, "--listen: %v", err)
	case <-ctx.Done():
	}
	shutdown, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Second)
	defer cancel()
	_ = hs.Shutdown(shutdown)
	return exitOK
}
