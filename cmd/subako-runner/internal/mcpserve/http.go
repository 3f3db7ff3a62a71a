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
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/zap"

	"github.com/subako/subako-runner/cmd/subako-runner/internal/loopback"
)

// statelessVersion is the first MCP revision without sessions: its requests
// carry MCP-Protocol-Version on every POST and need no Mcp-Session-Id.
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
// Sessions are bounded: at most Options.MaxSessions at once (a new one
// closes the session idle the longest, or is refused with 503 when every
// session has a request in flight), each closed after Options.SessionIdle
// without a request.
//
// Each call makes a handler with its own sessions: call it once per
// listener.
func (s *Server) Handler() http.Handler {
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
	table := &sessionTable{srv: s, max: s.opts.MaxSessions, byID: map[string]*sessionUse{}}
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
	last      time.Time
	busy      int             // POSTs and DELETEs in flight (a GET stream is not busy)
	cancelled map[string]bool // ids (by idKey) the client cancelled: their answers are dropped
}

func (t *sessionTable) serve(w http.ResponseWriter, r *http.Request, h http.Handler) {
	id := r.Header.Get("Mcp-Session-Id")
	if id == "" {
		t.serveNew(w, r, h)
		return
	}
	var msg envelope
	if r.Method == http.MethodPost && r.Body != nil {
		// Read the message to see what it is (the SDK reads no more).
		body, err := io.ReadAll(io.LimitReader(r.Body, maxRequestBody+1))
		r.Body = io.NopCloser(io.MultiReader(bytes.NewReader(body), r.Body))
		if err == nil {
			_ = json.Unmarshal(body, &msg)
		}
	}
	t.mu.Lock()
	u := t.byID[id]
	if u != nil {
		u.last = time.Now()
		if r.Method != http.MethodGet {
			u.busy++
		}
		if msg.Method == "notifications/cancelled" {
			if k := idKey(msg.Params.RequestID); k != "" {
				if u.cancelled == nil {
					u.cancelled = map[string]bool{}
				}
				u.cancelled[k] = true
			}
		}
	}
	t.mu.Unlock()
	if k := idKey(msg.ID); u != nil && msg.Method != "" && k != "" {
		// A request: its answer is dropped if the client cancels it
		// meanwhile (MCP: a cancelled request gets no response).
		w = &dropCancelled{ResponseWriter: w, drop: func() bool {
			t.mu.Lock()
			defer t.mu.Unlock()
			return u.cancelled[k]
		}}
		defer func() {
			t.mu.Lock()
			delete(u.cancelled, k)
			t.mu.Unlock()
		}()
	}
	h.ServeHTTP(w, r)
	t.mu.Lock()
	defer t.mu.Unlock()
	if u != nil {
		u.last = time.Now()
		if r.Method != http.MethodGet {
			u.busy--
		}
	}
	if r.Method == http.MethodDelete {
		delete(t.byID, id)
	}
}

// envelope is what the session table reads of a client's message.
type envelope struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params struct {
		RequestID json.RawMessage `json:"requestId"`
	} `json:"params"`
}

// idKey compares ids by JSON value (the SDK re-encodes them): a string and
// a number with the same digits differ.
func idKey(raw json.RawMessage) string {
	var v any
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	if len(raw) == 0 || d.Decode(&v) != nil {
		return ""
	}
	switch v := v.(type) {
	case string:
		return "s:" + v
	case json.Number:
		if i, err := v.Int64(); err == nil {
			return "n:" + strconv.FormatInt(i, 10)
		}
		return "n:" + v.String()
	}
	return ""
}

// dropCancelled passes a POST's event stream on, event by event, leaving
// out the answer of a request the client has cancelled: the SDK writes one
// (an error of code 0, "context canceled").
type dropCancelled struct {
	http.ResponseWriter
	drop func() bool
	buf  []byte
}

func (d *dropCancelled) Write(b []byte) (int, error) {
	if !strings.HasPrefix(d.Header().Get("Content-Type"), "text/event-stream") {
		if d.drop() && bytes.Contains(b, []byte(`"error"`)) {
			return len(b), nil
		}
		return d.ResponseWriter.Write(b)
	}
	d.buf = append(d.buf, b...)
	for {
		i := bytes.Index(d.buf, []byte("\n\n"))
		if i < 0 {
			return len(b), nil
		}
		event := d.buf[:i+2]
		d.buf = d.buf[i+2:]
		if d.drop() && isAnswer(event) {
			continue
		}
		if _, err := d.ResponseWriter.Write(event); err != nil {
			return 0, err
		}
	}
}

// isAnswer reports an SSE event whose data is a JSON-RPC response (on a
// POST's stream, the one answer to its request; notifications have a
// method).
func isAnswer(event []byte) bool {
	for _, line := range bytes.Split(event, []byte("\n")) {
		if data, ok := bytes.CutPrefix(line, []byte("data: ")); ok {
			var m struct {
				Method string          `json:"method"`
				ID     json.RawMessage `json:"id"`
			}
			return json.Unmarshal(data, &m) == nil && m.Method == "" && len(m.ID) > 0
		}
	}
	return false
}

func (d *dropCancelled) Flush() {
	if f, ok := d.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Unwrap lets http.ResponseController reach the connection.
func (d *dropCancelled) Unwrap() http.ResponseWriter { return d.ResponseWriter }

// serveNew serves a request without a session (an initialize, or a
// client's mistake, which the SDK refuses) once there is room for the
// session it may make.
func (t *sessionTable) serveNew(w http.ResponseWriter, r *http.Request, h http.Handler) {
	if r.Method != http.MethodPost {
		h.ServeHTTP(w, r)
		return
	}
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
	if id := w.Header().Get("Mcp-Session-Id"); id != "" {
		t.byID[id] = &sessionUse{last: time.Now()}
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
