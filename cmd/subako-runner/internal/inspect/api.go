package inspect

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"os"
	"strconv"
	"time"

	"github.com/subako/subako-runner/conformance"
	"github.com/subako/subako-runner/protocol"
	"github.com/subako/subako-runner/runtime"
)

// maxRequestBody bounds what the API reads from the browser: arguments are
// sent to the module over a line of at most 16 MiB anyway.
const maxRequestBody = 16 << 20

// callEntry is one call of this session, kept with its /volume/tmp.
type callEntry struct {
	ID        int             `json:"id"`
	Time      time.Time       `json:"time"`
	Tool      string          `json:"tool"`
	Arguments json.RawMessage `json:"arguments"`
	Outcome   runtime.Outcome `json:"outcome"`
	Crash     *runtime.Crash  `json:"crash,omitempty"`
	Result    json.RawMessage `json:"result,omitempty"`
	View      []viewItem      `json:"view"`
	Stats     runtime.Stats   `json:"stats"`

	res   *runtime.Result
	files []string // host paths of the view's files, by viewItem.File
}

// viewItem is a protocol.ViewItem as the page draws it: an inline image
// carries its data as a data: URL, and a volume file (image or not) the
// number under which GET /api/calls/{id}/files/{n} serves it.
type viewItem struct {
	protocol.ViewItem
	DataURL string `json:"dataUrl,omitempty"`
	File    *int   `json:"file,omitempty"`
}

func (c *callEntry) release() error {
	if c.res == nil {
		return nil
	}
	return c.res.Release()
}

// callRequest is the body of POST /api/call and /api/validate.
type callRequest struct {
	Tool      string          `json:"tool"`
	Arguments json.RawMessage `json:"arguments"`
	// Force calls even when the arguments do not match the inputSchema:
	// the host does not validate arguments (the module must), and an
	// author wants to see what their module does with bad ones.
	Force bool `json:"force"`
}

func (s *Server) current() *packageState {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.state
}

// acquire returns the current package state with a call counted on it, so
// a reload closes the old package only after its calls have returned.
func (s *Server) acquire() (*packageState, func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.state == nil {
		return nil, func() {}
	}
	st := s.state
	st.inflight.Add(1)
	return st, st.inflight.Done
}

func (s *Server) getPackage(w http.ResponseWriter, r *http.Request) {
	st := s.current()
	if st == nil {
		httpError(w, http.StatusServiceUnavailable, "closed", "the server is closing")
		return
	}
	writeJSON(w, http.StatusOK, st.report)
}

// reload runs the upload again, so an author can rebuild module.wasm and
// look at the new version without restarting the server.
func (s *Server) reload(w http.ResponseWriter, r *http.Request) {
	st, err := loadPackage(r.Context(), s.cfg.Runtime, s.cfg.Path)
	if err != nil {
		httpError(w, http.StatusInternalServerError, "host_error", err.Error())
		return
	}
	s.mu.Lock()
	old := s.state
	s.state = st
	s.mu.Unlock()
	if old != nil {
		// Package.Close wants the calls in flight returned: close the old
		// package once the last one has.
		go func() {
			old.inflight.Wait()
			_ = old.close(context.Background())
		}()
	}
	writeJSON(w, http.StatusOK, st.report)
}

// readCall decodes a call body and finds its tool in st.
func readCall(w http.ResponseWriter, r *http.Request, st *packageState) (*callRequest, *protocol.CompiledTool, bool) {
	var req callRequest
	if err := json.NewDecoder(io.LimitReader(r.Body, maxRequestBody)).Decode(&req); err != nil {
		httpError(w, http.StatusBadRequest, "bad_request", "the body must be JSON {\"tool\":…, \"arguments\":{…}}: "+err.Error())
		return nil, nil, false
	}
	if len(req.Arguments) == 0 {
		req.Arguments = json.RawMessage(`{}`)
	}
	if st == nil || st.pkg == nil {
		httpError(w, http.StatusConflict, "rejected", "the package was refused at upload: see its upload report")
		return nil, nil, false
	}
	tool, ok := st.pkg.Tool(req.Tool)
	if !ok {
		httpError(w, http.StatusNotFound, runtime.CodeUnknownTool, fmt.Sprintf("the package has no tool %q", req.Tool))
		return nil, nil, false
	}
	return &req, tool, true
}

// validate checks arguments against the tool's inputSchema with the same
// compiled schema `check` uses, so the form says what is wrong before a call.
func (s *Server) validate(w http.ResponseWriter, r *http.Request) {
	req, tool, ok := readCall(w, r, s.current())
	if !ok {
		return
	}
	if err := tool.ValidateInput(req.Arguments); err != nil {
		writeJSON(w, http.StatusOK, map[string]any{"valid": false, "error": err.Error()})
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"valid": true})
}

func (s *Server) call(w http.ResponseWriter, r *http.Request) {
	st, done := s.acquire()
	defer done()
	req, tool, ok := readCall(w, r, st)
	if !ok {
		return
	}
	if !req.Force {
		if err := tool.ValidateInput(req.Arguments); err != nil {
			httpError(w, http.StatusUnprocessableEntity, "invalid_arguments", err.Error())
			return
		}
	}
	cr := s.cfg.Request
	cr.Tool, cr.Arguments = req.Tool, req.Arguments
	res, err := st.pkg.Call(r.Context(), cr)
	if err != nil {
		var ce *runtime.CallError
		if errors.As(err, &ce) {
			httpError(w, http.StatusBadRequest, ce.Code, ce.Message)
			return
		}
		httpError(w, http.StatusInternalServerError, "host_error", err.Error())
		return
	}
	e := &callEntry{Time: time.Now(), Tool: req.Tool, Arguments: req.Arguments, Outcome: res.Outcome, Crash: res.Crash, Result: res.Result, Stats: res.Stats, res: res, View: []viewItem{}}
	for _, v := range res.View {
		item := viewItem{ViewItem: v}
		if v.Type == "image" && len(v.Data) > 0 {
			item.DataURL = "data:" + v.MimeType + ";base64," + base64.StdEncoding.EncodeToString(v.Data)
		}
		if v.HostPath != "" {
			n := len(e.files)
			e.files = append(e.files, v.HostPath)
			item.File = &n
		}
		e.View = append(e.View, item)
	}
	s.remember(e)
	writeJSON(w, http.StatusOK, e)
}

// remember adds a call to the history, releasing the oldest past the bound.
func (s *Server) remember(e *callEntry) {
	s.mu.Lock()
	s.next++
	e.ID = s.next
	s.calls = append(s.calls, e)
	var evicted []*callEntry
	if len(s.calls) > s.history {
		n := len(s.calls) - s.history
		evicted = append(evicted, s.calls[:n]...)
		s.calls = append([]*callEntry(nil), s.calls[n:]...)
	}
	s.mu.Unlock()
	for _, old := range evicted {
		if err := old.release(); err != nil {
			s.log.Warn("releasing a call's /volume/tmp")
		}
	}
}

// callSummary is one row of the history.
type callSummary struct {
	ID         int             `json:"id"`
	Time       time.Time       `json:"time"`
	Tool       string          `json:"tool"`
	Arguments  json.RawMessage `json:"arguments"`
	Outcome    runtime.Outcome `json:"outcome"`
	Crash      string          `json:"crash,omitempty"`
	DurationMs float64         `json:"durationMs"`
}

func (s *Server) listCalls(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	out := make([]callSummary, 0, len(s.calls))
	for i := len(s.calls) - 1; i >= 0; i-- {
		c := s.calls[i]
		row := callSummary{ID: c.ID, Time: c.Time, Tool: c.Tool, Arguments: c.Arguments, Outcome: c.Outcome, DurationMs: runtime.Milliseconds(c.Stats.Duration)}
		if c.Crash != nil {
			row.Crash = c.Crash.Reason
		}
		out = append(out, row)
	}
	s.mu.Unlock()
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) lookup(w http.ResponseWriter, r *http.Request) *callEntry {
	id, err := strconv.Atoi(r.PathValue("id"))
	if err == nil {
		s.mu.Lock()
		defer s.mu.Unlock()
		for _, c := range s.calls {
			if c.ID == id {
				return c
			}
		}
	}
	httpError(w, http.StatusNotFound, "no_call", "no such call in this session's history")
	return nil
}

func (s *Server) getCall(w http.ResponseWriter, r *http.Request) {
	if c := s.lookup(w, r); c != nil {
		writeJSON(w, http.StatusOK, c)
	}
}

// callFile serves a file the call's view names, from where the runtime's
// volume resolver found it (inside a volume of that call). Only files of the
// view are served, by number, so no path from the browser reaches the disk.
func (s *Server) callFile(w http.ResponseWriter, r *http.Request) {
	c := s.lookup(w, r)
	if c == nil {
		return
	}
	n, err := strconv.Atoi(r.PathValue("n"))
	if err != nil || n < 0 || n >= len(c.files) {
		httpError(w, http.StatusNotFound, "no_file", "the view has no such file")
		return
	}
	f, err := os.Open(c.files[n])
	if err != nil {
		httpError(w, http.StatusGone, "gone", "the file is no longer there: "+err.Error())
		return
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil || !fi.Mode().IsRegular() {
		httpError(w, http.StatusGone, "gone", "the file is no longer a regular file")
		return
	}
	head := make([]byte, protocol.SniffLen)
	n, _ = io.ReadFull(f, head)
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		httpError(w, http.StatusGone, "gone", "the file cannot be read: "+err.Error())
		return
	}
	// The module chose the file's name and bytes: neither may make it
	// active content on this origin, where its scripts would carry the
	// token cookie. Only an image its magic bytes prove is shown inline,
	// as that image type; anything else (HTML, SVG, scripts, whatever
	// the name says) is an attachment of no executable type. nosniff keeps
	// the browser to the type given, and the sandbox CSP gives a rendered
	// response an opaque origin without scripts, whatever the browser does.
	h := w.Header()
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Content-Security-Policy", fileCSP)
	if img := protocol.ImageType(head[:n]); img != "" {
		h.Set("Content-Type", img)
		h.Set("Content-Disposition", mime.FormatMediaType("inline", map[string]string{"filename": fi.Name()}))
	} else {
		h.Set("Content-Type", "application/octet-stream")
		h.Set("Content-Disposition", mime.FormatMediaType("attachment", map[string]string{"filename": fi.Name()}))
	}
	http.ServeContent(w, r, "", fi.ModTime(), f)
}

// fileCSP is the Content-Security-Policy of every file a call wrote: a
// sandbox without allow-scripts or allow-same-origin, so even a document
// a browser renders runs nothing and reaches nothing of this origin.
const fileCSP = "sandbox; default-src 'none'; img-src 'self'; style-src 'unsafe-inline'"

// check runs the conformance suite (`subako-runner check`) and returns its
// report: the checklist with the evidence of each item.
func (s *Server) check(w http.ResponseWriter, r *http.Request) {
	rep, err := conformance.Run(r.Context(), s.cfg.Runtime, s.cfg.Path, conformance.Options{Examples: s.cfg.Examples, ExampleNetwork: s.cfg.Request.Network})
	if err != nil {
		httpError(w, http.StatusInternalServerError, "host_error", err.Error())
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"passed": rep.Passed, "checks": rep.Checks, "durationMs": float64(rep.Duration.Microseconds()) / 1000})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// apiError is the body of every API failure.
type apiError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

func httpError(w http.ResponseWriter, status int, code, msg string) {
	writeJSON(w, status, map[string]apiError{"error": {Code: code, Message: msg}})
}
