package inspect

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"embed"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io/fs"
	"net"
	"net/http"
	"net/url"
	"sync"

	"go.uber.org/zap"

	"github.com/subako/subako-runner/cmd/subako-runner/internal/loopback"
	"github.com/subako/subako-runner/runtime"
)

//go:embed assets
var assets embed.FS

// tokenCookiePrefix, followed by the server's port, names the cookie that
// carries the token after the first page load, so the page's own requests
// (assets, downloads, img src) need not repeat it in the URL. A browser
// keeps cookies per host, not per port: with one name for all, two inspect
// pages open at once overwrote each other's token.
const tokenCookiePrefix = "subako_inspect_token_"

// tokenCookie is the name of the token's cookie for a request to the
// server listening on its local address (the Host's port when unknown).
func tokenCookie(r *http.Request) string {
	port := hostPort(r.Host)
	if a, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr); ok {
		port = hostPort(a.String())
	}
	return tokenCookiePrefix + port
}

func hostPort(hostport string) string {
	if _, p, err := net.SplitHostPort(hostport); err == nil && p != "" {
		return p
	}
	return "80"
}

// tokenHeader is how scripts and API clients present the token.
const tokenHeader = "X-Subako-Token"

// defaultHistory is how many calls the page keeps (with their /volume/tmp)
// when Config.History is zero.
const defaultHistory = 32

// Config configures a Server.
type Config struct {
	// Runtime loads the package and runs its calls and checks.
	Runtime *runtime.Runtime
	// Path is the package directory or bare .wasm file.
	Path string
	// Request is the template of every call: its Data, Skills, Network and
	// Limits apply; Tool, Arguments and Tmp are set per call.
	Request runtime.CallRequest
	// Token is the secret every request must carry; empty means a random
	// one (Server.Token tells it).
	Token string
	// AllowedHosts are Host names accepted besides the loopback ones
	// (localhost, 127.0.0.1, ::1), for a server deliberately listening on
	// another address.
	AllowedHosts []string
	// History is how many calls the page keeps; 0 means 32.
	History int
	// Logger receives the server's logs; nil logs nothing.
	Logger *zap.Logger
	// Examples are the argument objects the Check tab calls each tool
	// with, as `check --examples` (conformance.ParseExamples), under
	// Request's network policy: a fetching tool is judged on a real
	// answer.
	Examples map[string][]json.RawMessage
}

// Server serves the inspect page and its API for one package.
//
// # Notes
//
//   - Safe for concurrent use; calls run concurrently, each in a fresh
//     instance.
//   - Close releases the package and every kept /volume/tmp.
type Server struct {
	cfg     Config
	token   string
	mux     *http.ServeMux
	log     *zap.Logger
	history int

	mu    sync.Mutex
	state *packageState
	calls []*callEntry // oldest first
	next  int
}

// New loads the package at cfg.Path (upload checks, compilation, discovery)
// and returns its server. A package that is refused still gets a server: its
// page shows why. An error means the host could not do the work (an
// unreadable path, a cancelled context).
func New(ctx context.Context, cfg Config) (*Server, error) {
	if cfg.Runtime == nil {
		return nil, errors.New("inspect: Config.Runtime is nil")
	}
	s := &Server{cfg: cfg, token: cfg.Token, log: cfg.Logger, history: cfg.History}
	if s.log == nil {
		s.log = zap.NewNop()
	}
	if s.history <= 0 {
		s.history = defaultHistory
	}
	if s.token == "" {
		var b [24]byte
		if _, err := rand.Read(b[:]); err != nil {
			return nil, err
		}
		s.token = hex.EncodeToString(b[:])
	}
	st, err := loadPackage(ctx, cfg.Runtime, cfg.Path)
	if err != nil {
		return nil, err
	}
	s.state = st
	s.routes()
	return s, nil
}

// Token is the secret every request must carry.
func (s *Server) Token() string { return s.token }

// URL is the address to open in a browser for a server listening on addr
// (host:port), with the token.
func (s *Server) URL(addr string) string {
	host, port, err := net.SplitHostPort(addr)
	if err == nil && (host == "" || host == "0.0.0.0" || host == "::") {
		addr = net.JoinHostPort("127.0.0.1", port)
	}
	return "http://" + addr + "/?token=" + url.QueryEscape(s.token)
}

// Close releases the package and every kept call volume.
func (s *Server) Close(ctx context.Context) error {
	s.mu.Lock()
	calls, st := s.calls, s.state
	s.calls, s.state = nil, nil
	s.mu.Unlock()
	var errs []error
	for _, c := range calls {
		errs = append(errs, c.release())
	}
	if st != nil {
		st.inflight.Wait()
		errs = append(errs, st.close(ctx))
	}
	return errors.Join(errs...)
}

func (s *Server) routes() {
	s.mux = http.NewServeMux()
	static, _ := fs.Sub(assets, "assets")
	files := http.FileServerFS(static)
	s.mux.HandleFunc("GET /{$}", s.page)
	s.mux.Handle("GET /assets/", http.StripPrefix("/assets/", files))
	s.mux.HandleFunc("GET /api/package", s.getPackage)
	s.mux.HandleFunc("POST /api/reload", s.reload)
	s.mux.HandleFunc("POST /api/validate", s.validate)
	s.mux.HandleFunc("POST /api/call", s.call)
	s.mux.HandleFunc("GET /api/calls", s.listCalls)
	s.mux.HandleFunc("GET /api/calls/{id}", s.getCall)
	s.mux.HandleFunc("GET /api/calls/{id}/files/{n}", s.callFile)
	s.mux.HandleFunc("POST /api/check", s.check)
}

// ServeHTTP checks where the request comes from and that it carries the
// token, then serves it.
//
// A refused request is answered from its headers alone, and its connection
// closed: its body is never read (the server would otherwise wait for the
// rest of it before answering, as long as a client takes to send it).
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	refuse := func(msg string, status int) {
		w.Header().Set("Connection", "close")
		http.Error(w, msg, status)
	}
	if !loopback.HostAllowed(r.Host, s.cfg.AllowedHosts, false) {
		refuse("inspect: Host "+r.Host+" is not this server's (DNS rebinding is refused)", http.StatusMisdirectedRequest)
		return
	}
	if o := r.Header.Get("Origin"); o != "" && o != "http://"+r.Host {
		refuse("inspect: cross-origin request refused", http.StatusForbidden)
		return
	}
	if !s.authorized(w, r) {
		refuse("inspect: missing or wrong token: open the URL subako-runner printed", http.StatusUnauthorized)
		return
	}
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Header().Set("X-Frame-Options", "DENY")
	w.Header().Set("Referrer-Policy", "no-referrer")
	w.Header().Set("Content-Security-Policy", "default-src 'self'; img-src 'self' data:; object-src 'none'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'")
	s.mux.ServeHTTP(w, r)
}

// authorized accepts the token from the header, the cookie or the query;
// a valid query token on the page sets the cookie.
func (s *Server) authorized(w http.ResponseWriter, r *http.Request) bool {
	if s.tokenOK(r.Header.Get(tokenHeader)) {
		return true
	}
	if c, err := r.Cookie(tokenCookie(r)); err == nil && s.tokenOK(c.Value) {
		return true
	}
	if s.tokenOK(r.URL.Query().Get("token")) {
		http.SetCookie(w, &http.Cookie{Name: tokenCookie(r), Value: s.token, Path: "/", HttpOnly: true, SameSite: http.SameSiteStrictMode})
		return true
	}
	return false
}

func (s *Server) tokenOK(t string) bool {
	return t != "" && subtle.ConstantTimeCompare([]byte(t), []byte(s.token)) == 1
}

func (s *Server) page(w http.ResponseWriter, r *http.Request) {
	b, err := assets.ReadFile("assets/index.html")
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	_, _ = w.Write(s.withInitialPackage(b))
}
