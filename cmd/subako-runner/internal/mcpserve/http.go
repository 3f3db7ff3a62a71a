package mcpserve

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/zap"

	"github.com/subako/subako-runner/cmd/subako-runner/internal/loopback"
)

// statelessVersion is the first MCP revision without sessions: its requests
// and a later revision's carry MCP-Protocol-Version on every POST and need
// no Mcp-Session-Id. It is not protocol.Version, the revision ABI 1's
// guests speak, although the two are equal today: this one is where MCP
// dropped sessions and bounds the comparison in handler, and a later
// protocol.Version must not raise it (clients of this revision would get
// sessions again). TestStatelessVersion pins protocol.Version to it or
// later.
const statelessVersion = "2026-07-28"

// DefaultMaxSessions is how many sessions (of 2025-06-18 and 2025-11-25
// clients) Handler keeps when Options.MaxSessions is zero. A session costs
// about 60 KB; a client holds one for as long as it is connected.
const DefaultMaxSessions = 128

// DefaultSessionIdle is how long a session may go without a request
// before it is closed, when Options.SessionIdle is zero. A client whose
// session was closed gets 404 and starts a new one, as MCP says.
const DefaultSessionIdle = 10 * time.Minute

// maxRequestBody is the largest POST body Handler reads: the SDK's bound.
const maxRequestBody = mcp.DefaultMaxRequestBodyBytes

// Handler serves the server over Streamable HTTP, on any path (mount it
// where the clients expect it, conventionally /mcp).
//
// Requests of 2026-07-28 (by their MCP-Protocol-Version header) are served
// statelessly; a later revision the server does not know gets the
// transport's "unsupported protocol version" error (-32022, with the
// versions it has); anything else, initialize included, gets a session of
// 2025-06-18 or 2025-11-25 with Mcp-Session-Id and the GET stream for
// notifications. Before either, every request's Host and Origin are checked
// against DNS rebinding and other sites' pages (see CheckHost).
//
// Every request id reaches the SDK through idPath, as on stdio, so its
// answer carries the id exactly as the client spelled it.
//
// Sessions are bounded: at most Options.MaxSessions at once (a new one
// closes the session idle the longest, or is refused with 503 when every
// session has a request in flight), each closed after Options.SessionIdle
// without a request.
//
// Each call makes a handler with its own sessions: call it once per
// listener.
func (s *Server) Handler() http.Handler {
	return s.handler(&sessionTable{srv: s, max: s.opts.MaxSessions, byID: map[string]*sessionUse{}})
}

// handler is Handler over the session table table.
func (s *Server) handler(table *sessionTable) http.Handler {
	get := func(*http.Request) *mcp.Server { return s.sdk }
	logger := newSlogger(s.log.Named("mcp.http"))
	sessions := mcp.NewStreamableHTTPHandler(get, &mcp.StreamableHTTPOptions{
		Logger:         logger,
		SessionTimeout: s.opts.SessionIdle,
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
			if !slices.Contains(mcp.SupportedProtocolVersions(), v) {
				unsupportedVersion(w, r, v)
				return
			}
			w, end, ok := readMessage(w, r, newIDPath())
			if !ok {
				return
			}
			defer end()
			stateless.ServeHTTP(w, r)
			return
		}
		table.serve(w, r, sessions)
	})
}

// unsupportedVersion answers a request of a revision this server does not
// have as the 2026-07-28 transport says: 400, and a JSON-RPC error naming
// the versions it has, so the client can pick one.
func unsupportedVersion(w http.ResponseWriter, r *http.Request, requested string) {
	var req struct {
		ID json.RawMessage `json:"id"`
	}
	if r.Body != nil {
		body, _ := io.ReadAll(io.LimitReader(r.Body, maxRequestBody))
		_ = json.Unmarshal(body, &req)
	}
	if req.ID == nil || !validID(req.ID) {
		req.ID = json.RawMessage("null")
	}
	data, _ := json.Marshal(mcp.UnsupportedProtocolVersionData{Supported: mcp.SupportedProtocolVersions(), Requested: requested})
	writeJSONRPCError(w, http.StatusBadRequest, req.ID, mcp.CodeUnsupportedProtocolVersion, "unsupported protocol version", data)
}

func writeJSONRPCError(w http.ResponseWriter, status int, id json.RawMessage, code int, msg string, data json.RawMessage) {
	e := map[string]any{"code": code, "message": msg}
	if data != nil {
		e["data"] = data
	}
	b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "error": e})
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(b)
}

// readMessage reads a POST's message and puts it under the SDK's ids
// (idPath): the request's answer, written to the returned writer, goes
// back under the client's id, and end releases the id when the HTTP
// request ends. ok is false when readMessage answered the request itself: a body
// over the bound (413), or a notifications/cancelled naming no request in
// flight (202, as the SDK answers a notification; nothing is stored). A
// body that is not a message this layer reads is passed on for the SDK to
// refuse.
func readMessage(w http.ResponseWriter, r *http.Request, ids *idPath) (_ http.ResponseWriter, end func(), ok bool) {
	end = func() {}
	if r.Method != http.MethodPost || r.Body == nil {
		return w, end, true
	}
	if r.ContentLength > maxRequestBody {
		tooLarge(w)
		return nil, nil, false
	}
	var buf bytes.Buffer
	if r.ContentLength > 0 {
		buf.Grow(int(r.ContentLength) + 1)
	}
	_, err := buf.ReadFrom(io.LimitReader(r.Body, maxRequestBody+1))
	if buf.Len() > maxRequestBody {
		tooLarge(w)
		return nil, nil, false
	}
	body := buf.Bytes()
	r.Body = io.NopCloser(bytes.NewReader(body))
	if err != nil {
		// The SDK answers what it can of a body cut short.
		return w, end, true
	}
	var m map[string]json.RawMessage
	var method string
	if json.Unmarshal(body, &m) != nil || string(m["jsonrpc"]) != `"2.0"` || m["method"] == nil ||
		json.Unmarshal(m["method"], &method) != nil || (m["id"] != nil && !validID(m["id"])) {
		return w, end, true // not a request or notification: the SDK answers it
	}
	res := ids.rewriteInbound(m, method)
	if res.drop {
		w.WriteHeader(http.StatusAccepted)
		return nil, nil, false
	}
	out, err := json.Marshal(m)
	if err != nil { // cannot happen: every value came from a valid document
		return w, end, true
	}
	r.Body, r.ContentLength = io.NopCloser(bytes.NewReader(out)), int64(len(out))
	if !res.isRequest {
		return w, end, true
	}
	return &answerWriter{ResponseWriter: w, ids: ids}, func() { ids.release(res.ours) }, true
}

// tooLarge refuses a body over maxRequestBody as the SDK does, and closes
// the connection rather than read the rest.
func tooLarge(w http.ResponseWriter) {
	w.Header().Set("Connection", "close")
	http.Error(w, fmt.Sprintf("request body over %d bytes", maxRequestBody), http.StatusRequestEntityTooLarge)
}

// sessionTable bounds the SDK's sessions: it sees every session request,
// so it knows which sessions exist, which have a request in flight and
// when each was last used.
type sessionTable struct {
	srv *Server
	max int

	mu       sync.Mutex
	byID     map[string]*sessionUse
	starting int // new sessions being made (counted against max)
}

type sessionUse struct {
	last time.Time
	busy int     // POSTs and DELETEs in flight (a GET stream is not busy)
	ids  *idPath // the session's requests in flight
}

func (t *sessionTable) serve(w http.ResponseWriter, r *http.Request, h http.Handler) {
	id := r.Header.Get("Mcp-Session-Id")
	if id == "" {
		t.serveNew(w, r, h)
		return
	}
	t.mu.Lock()
	u := t.byID[id]
	if u == nil && t.sdkHas(id) {
		// Made by an initialize whose answer the client has read while
		// serveNew has yet to see it end.
		u = &sessionUse{ids: newIDPath()}
		t.byID[id] = u
	}
	if u != nil {
		u.last = time.Now()
		if r.Method != http.MethodGet {
			u.busy++
		}
	}
	t.mu.Unlock()
	if u == nil {
		// Not a session of this server (made up, or closed): answered as
		// the SDK does, before the body is read, so a made-up id costs
		// no memory.
		w.Header().Set("Connection", "close")
		http.Error(w, "session not found", http.StatusNotFound)
		return
	}
	defer func() {
		t.mu.Lock()
		defer t.mu.Unlock()
		u.last = time.Now()
		if r.Method != http.MethodGet {
			u.busy--
		}
		if r.Method == http.MethodDelete {
			delete(t.byID, id)
		}
	}()
	w, end, ok := readMessage(w, r, u.ids)
	if !ok {
		return
	}
	defer end()
	h.ServeHTTP(w, r)
}

// answerWriter passes a POST's answer on under the client's id (an
// event stream event by event, or a JSON body), leaving out the answer of
// a request the client has cancelled: the SDK writes one ("context
// canceled"), and MCP gives a cancelled request none.
type answerWriter struct {
	http.ResponseWriter
	ids *idPath
	buf []byte
}

func (a *answerWriter) Write(b []byte) (int, error) {
	if !strings.HasPrefix(a.Header().Get("Content-Type"), "text/event-stream") {
		out, keep := a.mapAnswer(b)
		if !keep {
			return len(b), nil
		}
		if _, err := a.ResponseWriter.Write(out); err != nil {
			return 0, err
		}
		return len(b), nil
	}
	a.buf = append(a.buf, b...)
	for {
		i := bytes.Index(a.buf, []byte("\n\n"))
		if i < 0 {
			return len(b), nil
		}
		event := a.buf[:i+2]
		a.buf = a.buf[i+2:]
		out, keep := a.mapEvent(event)
		if !keep {
			continue
		}
		if _, err := a.ResponseWriter.Write(out); err != nil {
			return 0, err
		}
	}
}

// mapEvent is an SSE event with its data mapped by mapAnswer.
func (a *answerWriter) mapEvent(event []byte) ([]byte, bool) {
	lines := bytes.Split(event, []byte("\n"))
	for i, line := range lines {
		if data, ok := bytes.CutPrefix(line, []byte("data: ")); ok {
			out, keep := a.mapAnswer(data)
			if !keep {
				return nil, false
			}
			lines[i] = append([]byte("data: "), out...)
			return bytes.Join(lines, []byte("\n")), true
		}
	}
	return event, true
}

// mapAnswer is an answer of the SDK under the client's id; keep is false
// for the answer of a cancelled request. Anything else passes as it is.
func (a *answerWriter) mapAnswer(msg []byte) (_ []byte, keep bool) {
	ours, rest, ok := answerID(msg)
	if !ok {
		return msg, true
	}
	call, ok := a.ids.answered(ours)
	if !ok {
		return msg, true
	}
	if call.cancelled {
		return nil, false
	}
	return withID(call.theirs, rest), true
}

func (a *answerWriter) Flush() {
	if f, ok := a.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Unwrap lets http.ResponseController reach the connection.
func (a *answerWriter) Unwrap() http.ResponseWriter { return a.ResponseWriter }

// serveNew serves a request without a session (an initialize, or a
// client's mistake, which the SDK refuses) once there is room for the
// session it may make.
func (t *sessionTable) serveNew(w http.ResponseWriter, r *http.Request, h http.Handler) {
	if r.Method != http.MethodPost {
		h.ServeHTTP(w, r)
		return
	}
	// The body is read before a session is counted: a client sending
	// it slowly holds no session.
	w, end, ok := readMessage(w, r, newIDPath())
	if !ok {
		return
	}
	defer end()
	evict, ok := t.reserve()
	if evict != "" {
		t.closeSession(evict)
	}
	if !ok {
		t.srv.log.Warn("refused a new MCP session: every session has a request in flight", zap.Int("sessions", t.max), zap.String("remote", r.RemoteAddr))
		writeJSONRPCError(w, http.StatusServiceUnavailable, json.RawMessage("null"), codeServerBusy,
			fmt.Sprintf("server busy: all %d sessions have requests in flight; try again later", t.max), nil)
		return
	}
	h.ServeHTTP(w, r)
	t.mu.Lock()
	defer t.mu.Unlock()
	t.starting--
	if id := w.Header().Get("Mcp-Session-Id"); id != "" && t.byID[id] == nil {
		t.byID[id] = &sessionUse{last: time.Now(), ids: newIDPath()}
	}
}

// reserve counts a new session against the bound. At the bound it first
// forgets sessions the SDK has closed (idle timeout), then picks the
// session idle the longest to close; ok is false when every session is
// busy.
func (t *sessionTable) reserve() (evict string, ok bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.byID)+t.starting >= t.max {
		t.pruneLocked()
	}
	if len(t.byID)+t.starting >= t.max {
		var oldest *sessionUse
		for id, u := range t.byID {
			if u.busy == 0 && (oldest == nil || u.last.Before(oldest.last)) {
				oldest, evict = u, id
			}
		}
		if oldest == nil {
			return "", false
		}
		delete(t.byID, evict)
	}
	t.starting++
	return evict, true
}

// sdkHas reports whether the SDK has the session id.
func (t *sessionTable) sdkHas(id string) bool {
	for ss := range t.srv.sdk.Sessions() {
		if ss.ID() == id {
			return true
		}
	}
	return false
}

// pruneLocked drops the sessions the SDK no longer has.
func (t *sessionTable) pruneLocked() {
	live := map[string]bool{}
	for ss := range t.srv.sdk.Sessions() {
		live[ss.ID()] = true
	}
	for id := range t.byID {
		if !live[id] {
			delete(t.byID, id)
		}
	}
}

func (t *sessionTable) closeSession(id string) {
	for ss := range t.srv.sdk.Sessions() {
		if ss.ID() == id {
			t.srv.log.Info("closed the MCP session idle the longest to make room for a new one", zap.String("session", id), zap.Int("sessions", t.max))
			_ = ss.Close()
			return
		}
	}
}

// CheckHost is the DNS-rebinding and cross-site defence of Handler. A
// browser tricked into sending a request here by a rebound name still sends
// that name in Host (and its page's origin in Origin), so Host must name
// this machine as a client legitimately addresses it: localhost, a loopback
// address, one of Options.AllowedHosts, or with Options.AllowRemote any IP
// address. An Origin, when sent, must be this server's own (http, an
// allowed host, and the port the request came to) or one of
// Options.AllowedOrigins, compared by scheme, host and port: a page served
// on another port of this machine is another site.
func (s *Server) CheckHost(r *http.Request) error {
	if !s.hostAllowed(r.Host) {
		return fmt.Errorf("Host %q is not an address of this server", r.Host)
	}
	origin := r.Header.Get("Origin")
	if origin == "" {
		return nil // not a browser, or a same-origin GET
	}
	if slices.Contains(s.opts.AllowedOrigins, normalizeOrigin(origin)) {
		return nil
	}
	u, err := url.Parse(origin)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.Path != "" || u.User != nil {
		return fmt.Errorf("Origin %q is not an http(s) origin (allow it with --allow-origin)", origin)
	}
	if u.Scheme != "http" || !s.hostAllowed(u.Host) || originPort(u) != hostPort(r.Host) {
		return fmt.Errorf("Origin %q is not this server's (allow it with --allow-origin)", origin)
	}
	return nil
}

// normalizeOrigin is how origins compare: lowercased, without a trailing
// slash.
func normalizeOrigin(o string) string {
	return strings.TrimSuffix(strings.ToLower(strings.TrimSpace(o)), "/")
}

// NormalizeOrigins returns origins as Options.AllowedOrigins compares
// them, or an error naming the first that is not SCHEME://HOST[:PORT].
func NormalizeOrigins(origins []string) ([]string, error) {
	var out []string
	for _, o := range origins {
		n := normalizeOrigin(o)
		u, err := url.Parse(n)
		if err != nil || u.Scheme == "" || u.Host == "" || u.Path != "" || u.RawQuery != "" || u.User != nil {
			return nil, fmt.Errorf("origin %q: want SCHEME://HOST[:PORT], e.g. http://localhost:6274 or vscode-webview://ID", o)
		}
		out = append(out, n)
	}
	return out, nil
}

func originPort(u *url.URL) string {
	if p := u.Port(); p != "" {
		return p
	}
	if u.Scheme == "https" {
		return "443"
	}
	return "80"
}

func hostPort(hostport string) string {
	if _, p, err := net.SplitHostPort(hostport); err == nil && p != "" {
		return p
	}
	return "80"
}

func (s *Server) hostAllowed(hostport string) bool {
	return loopback.HostAllowed(hostport, s.opts.AllowedHosts, s.opts.AllowRemote)
}
