package mcpserve

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	goruntime "runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/zap"

	"github.com/subako/subako-runner/protocol"
	"github.com/subako/subako-runner/runtime"
)

// DefaultPageSize is how many tools one tools/list page holds when
// Options.PageSize is zero. ABI 1 allows 1,024 tools; clients page through
// them with nextCursor.
const DefaultPageSize = 100

// CrashMetaKey is the _meta member of a crash result: {"reason", "message"},
// for clients that want the crash code without parsing the text.
const CrashMetaKey = "subako/crash"

// Options configure a Server.
type Options struct {
	// Logger receives the server's logs (and, through the runtime, one line
	// per call); nil logs nothing. It must not write to the stdio transport's
	// output.
	Logger *zap.Logger
	// Call is the template of every call: Tmp, Data, Skills, Network and
	// Limits apply to each tools/call; Tool and Arguments are ignored.
	Call runtime.CallRequest
	// KeepTmp keeps each call's fresh /volume/tmp (when Call.Tmp is empty)
	// instead of removing it with the call, and logs where it is.
	KeepTmp bool
	// KeepTmpDir is where the kept volumes are made; empty means the
	// system's temporary directory. A runtime of worker processes must let
	// them write there, so its embedder names one directory for them all.
	KeepTmpDir string
	// PageSize is the number of tools per tools/list page; zero means
	// DefaultPageSize.
	PageSize int
	// AllowRemote lets Handler answer requests whose Host or Origin names a
	// non-loopback IP address. Without it only loopback names and addresses
	// (and AllowedHosts) are served.
	AllowRemote bool
	// AllowedHosts are extra host names (without port) Handler accepts in
	// Host and Origin, e.g. the name a remote client uses for this machine.
	AllowedHosts []string
	// AllowedOrigins are browser origins (SCHEME://HOST[:PORT], as
	// NormalizeOrigins returns them) Handler accepts besides its own, e.g.
	// an editor's webview or the MCP Inspector's page.
	AllowedOrigins []string
	// MaxSessions bounds Handler's sessions; zero means DefaultMaxSessions.
	MaxSessions int
	// SessionIdle closes a session after that long without a request; zero
	// means DefaultSessionIdle.
	SessionIdle time.Duration
	// MaxRunning is how many tools/call run at once; zero means one per
	// CPU (the runtime's default bound on instances). Calls beyond it wait
	// their turn here, before they hold anything of the runtime's (their
	// /volume/tmp is made once they run).
	MaxRunning int
	// MaxQueued is how many calls may wait for their turn; zero means
	// DefaultMaxQueued. A call beyond it is refused at once with a JSON-RPC
	// error saying the server is busy (code -32000).
	MaxQueued int
}

// DefaultMaxQueued is Options.MaxQueued's default: calls waiting to run.
const DefaultMaxQueued = 64

// codeServerBusy is the JSON-RPC error of a call or session refused
// because a bound is reached (JSON-RPC's range for server errors).
const codeServerBusy = -32000

// Server serves one package (swappable with Swap) to MCP clients. It is safe
// for concurrent use; ServeStdio and Handler may serve at the same time.
type Server struct {
	log  *zap.Logger
	opts Options
	sdk  *mcp.Server

	swapMu sync.Mutex // serialises Swap, so the SDK's tool list follows the packages in order

	mu     sync.Mutex
	cur    *held
	tools  map[string]bool // names registered with the SDK server
	list   []*mcp.Tool     // the tools in the package's order, for tools/list
	cache  *mcp.Cacheable  // the package's ttlMs and cacheScope; nil when it said none
	calls  sync.WaitGroup
	closed bool
	queued int // calls waiting for a place in running

	running chan struct{} // one token per call running (Options.MaxRunning)

	// stopping ends every call in flight when Close is called.
	stopping  context.Context
	stopCalls context.CancelFunc
}

// held is a package and the calls using it; a retired package is closed
// when its last call returns.
type held struct {
	pkg     *runtime.Package
	refs    int
	retired bool
}

// New makes a Server for pkg. The Server owns pkg (and every package given
// to Swap): it closes each once it is replaced and its calls have returned,
// and the last one in Close.
func New(pkg *runtime.Package, opts Options) *Server {
	log := opts.Logger
	if log == nil {
		log = zap.NewNop()
	}
	if opts.PageSize <= 0 {
		opts.PageSize = DefaultPageSize
	}
	if opts.MaxSessions <= 0 {
		opts.MaxSessions = DefaultMaxSessions
	}
	if opts.SessionIdle <= 0 {
		opts.SessionIdle = DefaultSessionIdle
	}
	if opts.MaxRunning <= 0 {
		opts.MaxRunning = goruntime.NumCPU()
	}
	if opts.MaxQueued <= 0 {
		opts.MaxQueued = DefaultMaxQueued
	}
	s := &Server{log: log, opts: opts, cur: &held{pkg: pkg}, tools: map[string]bool{}, running: make(chan struct{}, opts.MaxRunning)}
	s.stopping, s.stopCalls = context.WithCancel(context.Background())
	s.sdk = mcp.NewServer(implementation(pkg), &mcp.ServerOptions{
		Logger:       newSlogger(log.Named("mcp")),
		PageSize:     opts.PageSize,
		Instructions: instructions(pkg),
		// Only tools: a package offers nothing else, and logging/setLevel
		// would suggest the client can change what the host logs.
		Capabilities: &mcp.ServerCapabilities{Tools: &mcp.ToolCapabilities{ListChanged: true}},
		// The results' cache fields are the package's (the SDK would say 0).
		SetCacheable: func(_ context.Context, _ mcp.Request, c *mcp.Cacheable) {
			s.mu.Lock()
			defer s.mu.Unlock()
			if s.cache != nil {
				*c = *s.cache
			}
		},
	})
	s.sdk.AddReceivingMiddleware(jsonrpcCodes, s.toolsInOrder)
	s.setTools(pkg)
	return s
}

// implementation names the server after the package, so a client lists it
// under the package's name and version.
func implementation(pkg *runtime.Package) *mcp.Implementation {
	impl := &mcp.Implementation{Name: pkg.Name(), Title: pkg.Name() + " (subako-runner)", Version: runtime.Version}
	if m := pkg.Manifest(); m != nil && m.Version != "" {
		impl.Version = m.Version
	}
	return impl
}

// instructions passes on the module's own server/discover instructions.
func instructions(pkg *runtime.Package) string {
	var s string
	if raw := pkg.Discovery().Result.Instructions; raw != nil {
		_ = json.Unmarshal(raw, &s)
	}
	return s
}

// Swap replaces the package being served: calls already running finish on
// the old package, which is closed after them; new calls and tools/list see
// the new one, and every connected client is sent
// notifications/tools/list_changed. The Server owns pkg from now on.
func (s *Server) Swap(ctx context.Context, pkg *runtime.Package) {
	s.swapMu.Lock()
	defer s.swapMu.Unlock()
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		pkg.Close(ctx)
		return
	}
	old := s.cur
	s.cur = &held{pkg: pkg}
	old.retired = true
	closeOld := old.refs == 0
	s.mu.Unlock()
	if closeOld {
		old.pkg.Close(ctx)
	}
	s.setTools(pkg)
}

// setTools makes the SDK server's tool list pkg's. The SDK batches the
// changes into one list_changed notification per session. New tools go in
// before old ones go out, so a tools/list in between sees a superset, never
// a list missing a tool both versions have.
func (s *Server) setTools(pkg *runtime.Package) {
	next := map[string]bool{}
	var add []*mcp.Tool
	for _, t := range pkg.Tools() {
		next[t.Name] = true
		add = append(add, s.sdkTool(t))
	}
	var gone []string
	cache := packageCache(pkg)
	s.mu.Lock()
	s.list, s.cache = add, cache
	for name := range s.tools {
		if !next[name] {
			gone = append(gone, name)
		}
	}
	s.tools = next
	s.mu.Unlock()
	for _, t := range add {
		s.sdk.AddTool(t, s.callTool)
	}
	if len(gone) > 0 {
		s.sdk.RemoveTools(gone...)
	}
}

// packageCache is the ttlMs and cacheScope the package's server/discover
// result gave, or nil when it gave no ttlMs.
func packageCache(pkg *runtime.Package) *mcp.Cacheable {
	d := pkg.Discovery().Result
	if d.TTLMs == nil {
		return nil
	}
	var c mcp.Cacheable
	if json.Unmarshal(d.TTLMs, &c.TTLMs) != nil || c.TTLMs < 0 {
		return nil
	}
	if d.CacheScope != nil && json.Unmarshal(d.CacheScope, &c.CacheScope) != nil {
		return nil
	}
	if c.CacheScope == "" {
		c.CacheScope = "public"
	}
	return &c
}

// toolsInOrder answers tools/list with the package's tools in the order
// the module listed them (the SDK sorts them by name), paged by
// Options.PageSize under a cursor of this server's own.
func (s *Server) toolsInOrder(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if method != "tools/list" {
			return next(ctx, method, req)
		}
		start := 0
		p, _ := req.GetParams().(*mcp.ListToolsParams)
		if p != nil && p.Cursor != "" {
			n, ok := decodeCursor(p.Cursor)
			if !ok {
				return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "invalid cursor"}
			}
			start, p.Cursor = n, ""
		}
		res, err := next(ctx, method, req)
		lr, ok := res.(*mcp.ListToolsResult)
		if err != nil || !ok {
			return res, err
		}
		s.mu.Lock()
		list := s.list
		s.mu.Unlock()
		if start > len(list) {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "invalid cursor"}
		}
		end := min(start+s.opts.PageSize, len(list))
		lr.Tools, lr.NextCursor = slices.Clone(list[start:end]), ""
		if end < len(list) {
			lr.NextCursor = encodeCursor(end)
		}
		return lr, nil
	}
}

// jsonrpcCodes gives every error a handler returns a JSON-RPC code: the
// SDK sends an error that is not a *jsonrpc.Error with code 0, which no
// JSON-RPC client reads as an error code. Such an error is the host's
// (the server shutting down, a call cancelled): -32603, internal error.
func jsonrpcCodes(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		res, err := next(ctx, method, req)
		if err == nil {
			return res, nil
		}
		var coded *jsonrpc.Error
		if errors.As(err, &coded) && coded.Code != 0 {
			return res, err
		}
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: err.Error()}
	}
}

const cursorPrefix = "subako-tools:"

func encodeCursor(n int) string {
	return base64.RawURLEncoding.EncodeToString([]byte(cursorPrefix + strconv.Itoa(n)))
}

func decodeCursor(c string) (int, bool) {
	b, err := base64.RawURLEncoding.DecodeString(c)
	if err != nil || !strings.HasPrefix(string(b), cursorPrefix) {
		return 0, false
	}
	n, err := strconv.Atoi(strings.TrimPrefix(string(b), cursorPrefix))
	return n, err == nil && n >= 0
}

// sdkTool is the tool as the module listed it, in the SDK's type; the
// schemas are passed on byte for byte. Members the SDK cannot represent are
// dropped (with a warning) rather than the tool.
func (s *Server) sdkTool(t protocol.Tool) *mcp.Tool {
	var mt mcp.Tool
	if err := json.Unmarshal(t.Raw, &mt); err != nil {
		s.log.Warn("tool member the MCP SDK cannot represent; serving the tool without it", zap.String("tool", t.Name), zap.Error(err))
		mt = mcp.Tool{Name: t.Name, Title: t.Title, Description: t.Description}
	}
	mt.InputSchema = t.InputSchema
	if t.OutputSchema != nil {
		mt.OutputSchema = t.OutputSchema
	} else {
		mt.OutputSchema = nil
	}
	return &mt
}

func (s *Server) acquire() (*held, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, false
	}
	s.cur.refs++
	s.calls.Add(1)
	return s.cur, true
}

func (s *Server) release(ctx context.Context, h *held) {
	s.mu.Lock()
	h.refs--
	closeIt := h.retired && h.refs == 0
	s.mu.Unlock()
	if closeIt {
		h.pkg.Close(context.WithoutCancel(ctx))
	}
	s.calls.Done()
}

// sessionStopKey carries, in the context of a session's requests, the
// context whose end stops that session and its calls.
type sessionStopKey struct{}

// admit waits for a place among the running calls. At most
// Options.MaxQueued calls wait; one more is refused at once, so a flood of
// calls costs a bounded queue, not memory and volumes without bound.
func (s *Server) admit(ctx context.Context) error {
	select {
	case s.running <- struct{}{}:
		return nil
	default:
	}
	s.mu.Lock()
	if s.queued >= s.opts.MaxQueued {
		s.mu.Unlock()
		s.log.Warn("refused a call: the queue is full", zap.Int("running", s.opts.MaxRunning), zap.Int("queued", s.opts.MaxQueued))
		return &jsonrpc.Error{Code: codeServerBusy, Message: fmt.Sprintf("server busy: %d calls running and %d waiting; try again later", s.opts.MaxRunning, s.opts.MaxQueued)}
	}
	s.queued++
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		s.queued--
		s.mu.Unlock()
	}()
	select {
	case s.running <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// callTool runs one tools/call in a fresh instance of the current package.
// Everything the module did — a result, a tool error, a crash — is a
// CallToolResult; only a request the host refuses (an unknown tool) is a
// JSON-RPC error, as MCP asks.
func (s *Server) callTool(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	defer context.AfterFunc(s.stopping, cancel)()
	// The SDK detaches a request's context from its session's, so a
	// session that is told to stop (ServeStdio's context) would wait for
	// its calls to run to their limits: its stop reaches them here.
	sessionStop, _ := ctx.Value(sessionStopKey{}).(context.Context)
	if sessionStop != nil {
		defer context.AfterFunc(sessionStop, cancel)()
	}
	if err := s.admit(ctx); err != nil {
		return nil, err
	}
	defer func() { <-s.running }()
	h, ok := s.acquire()
	if !ok {
		return nil, errors.New("the server is shutting down")
	}
	defer s.release(ctx, h)
	cr := s.opts.Call
	cr.Tool, cr.Arguments = req.Params.Name, req.Params.Arguments
	if s.opts.KeepTmp && cr.Tmp == "" {
		// The runtime removes the volumes it makes when it closes; a kept
		// one is made here, where nothing sweeps it.
		dir, err := os.MkdirTemp(s.opts.KeepTmpDir, "subako-tmp-")
		if err != nil {
			return textResult(true, "subako-runner could not make the call's /volume/tmp: "+err.Error()), nil
		}
		cr.Tmp = dir
	}
	res, err := h.pkg.Call(ctx, cr)
	if ctx.Err() != nil {
		// The client cancelled (notifications/cancelled, a closed HTTP
		// request, the end of the session): the instance is gone and
		// nobody reads an answer.
		if res != nil {
			res.Release()
		}
		if s.stopping.Err() != nil || (sessionStop != nil && sessionStop.Err() != nil) {
			s.log.Info("call cancelled: subako-runner is stopping", zap.String("tool", cr.Tool))
		} else {
			s.log.Info("call cancelled by the client", zap.String("tool", cr.Tool))
		}
		return nil, ctx.Err()
	}
	var refused *runtime.CallError
	switch {
	case errors.As(err, &refused) && refused.Code == runtime.CodeUnknownTool:
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: refused.Message}
	case errors.As(err, &refused):
		return textResult(true, fmt.Sprintf("subako-runner refused the call (%s): %s", refused.Code, refused.Message)), nil
	case err != nil:
		s.log.Error("call failed in the host", zap.String("tool", cr.Tool), zap.Error(err))
		return textResult(true, "subako-runner could not run the call: "+err.Error()), nil
	}
	if s.opts.KeepTmp {
		s.log.Info("kept /volume/tmp", zap.String("tool", cr.Tool), zap.String("dir", res.TmpDir))
	} else {
		defer res.Release()
	}
	if res.Outcome == runtime.OutcomeCrashed {
		return crashResult(res.Crash), nil
	}
	return s.moduleResult(res.Parsed), nil
}

// crashResult tells the model (and the operator reading the client's
// transcript) that the function crashed, with what the operator needs to
// fix it: the crash code, the sentence and the module's last stderr.
func crashResult(c *runtime.Crash) *mcp.CallToolResult {
	var b strings.Builder
	fmt.Fprintf(&b, "the module crashed (%s): %s", c.Reason, c.Message)
	if c.Stderr != "" {
		b.WriteString("\nlast stderr of the module:\n")
		b.WriteString(strings.TrimRight(c.Stderr, "\n"))
	}
	r := textResult(true, b.String())
	r.Meta = mcp.Meta{CrashMetaKey: map[string]string{"reason": c.Reason, "message": c.Message}}
	return r
}

func textResult(isError bool, text string) *mcp.CallToolResult {
	return &mcp.CallToolResult{IsError: isError, Content: []mcp.Content{&mcp.TextContent{Text: text}}}
}

// moduleResult is the module's CallToolResult in the SDK's type:
// structuredContent byte for byte, _meta, isError, and each content block
// the SDK can carry. A block it cannot (a type this MCP revision does not
// define for tool results) becomes a text note, as in the model view.
func (s *Server) moduleResult(r protocol.CallToolResult) *mcp.CallToolResult {
	out := &mcp.CallToolResult{IsError: r.IsError, Content: []mcp.Content{}}
	for _, b := range r.Content {
		out.Content = append(out.Content, contentBlock(b))
	}
	if r.StructuredContent != nil {
		out.StructuredContent = r.StructuredContent
	}
	if r.Meta != nil {
		var m mcp.Meta
		if err := json.Unmarshal(r.Meta, &m); err == nil {
			out.Meta = m
		}
	}
	return out
}

func contentBlock(b protocol.ContentBlock) mcp.Content {
	var one mcp.CallToolResult
	wrapped, _ := json.Marshal(map[string]any{"content": []json.RawMessage{b.Raw}})
	if err := json.Unmarshal(wrapped, &one); err == nil && len(one.Content) == 1 {
		return one.Content[0]
	}
	return &mcp.TextContent{Text: fmt.Sprintf("[a %q content block was omitted: MCP tool results cannot carry it]", b.Type)}
}

// Close stops taking calls, cancels the calls in flight (their clients
// get no answer: the server is going away) and waits for their instances
// to end, or for ctx, then closes the package.
func (s *Server) Close(ctx context.Context) error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	s.mu.Unlock()
	s.stopCalls()
	done := make(chan struct{})
	go func() { s.calls.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
		return ctx.Err()
	}
	s.mu.Lock()
	pkg := s.cur.pkg
	s.mu.Unlock()
	return pkg.Close(ctx)
}
