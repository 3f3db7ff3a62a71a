package mcpserve

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"syscall"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// maxStdioLine bounds one line from the client. A longer line is read to
// its end and refused (-32600); a little room is left under the SDK's own
// limit for the id the line is rewritten with.
const maxStdioLine = mcp.DefaultMaxLineLength - 64

// JSON-RPC error codes this layer answers with itself.
const (
	codeParseError     = -32700
	codeInvalidRequest = -32600
)

// ServeStdio serves one client over a line-delimited JSON-RPC stream (the
// stdio transport: in is the client's requests, out its answers) until in
// ends, the client disconnects or ctx is done. Nothing else may write to out.
//
// Between the client and the SDK sits a layer that keeps the session sound
// whatever the client sends:
//   - Every request reaches the SDK under an id of this layer's own, and
//     its answer goes back under the client's id spelled byte for byte as
//     sent (idPath, which Handler uses too).
//   - A line that is not JSON gets -32700 and one that is not a JSON-RPC
//     message (a batch included: MCP 2025-06-18 removed them) -32600, both
//     with id null, and the session goes on (the SDK would end it).
//   - A request the client cancelled (notifications/cancelled) gets no
//     answer, as MCP says: the SDK's "context canceled" error is dropped.
//     A cancel naming no request in flight is dropped unread.
//     So do the requests in flight when ctx ends: they are cancelled too.
//   - At the end of in, every request read and not cancelled is answered
//     before the server stops (the SDK alone would stop at once and drop
//     them), so a script may write its requests and close stdin.
func (s *Server) ServeStdio(ctx context.Context, in io.Reader, out io.Writer) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	ctx = context.WithValue(ctx, sessionStopKey{}, ctx)
	c := newStdioConn(ctx, in, out)
	t := &mcp.IOTransport{Reader: &stdioReader{c}, Writer: &stdioWriter{c}}
	err := s.sdk.Run(ctx, t)
	if errors.Is(err, io.EOF) || clientGone(err) || (err != nil && ctx.Err() != nil) {
		return nil
	}
	return err
}

// clientGone reports an error that means the client closed its end (an
// answer, e.g. to a call it cancelled, written after it left): the normal
// end of a session, not a failure.
func clientGone(err error) bool {
	return errors.Is(err, io.ErrClosedPipe) || errors.Is(err, syscall.EPIPE) || errors.Is(err, os.ErrClosed)
}

// stdioConn is the state of one stdio session between client and SDK.
type stdioConn struct {
	ctx context.Context
	in  *bufio.Reader

	mu       sync.Mutex
	cond     *sync.Cond
	out      io.Writer // guarded by mu: one line at a time
	partial  []byte    // the SDK's output line not yet complete
	ids      *idPath   // the requests in flight
	live     int       // requests in flight not cancelled
	pending  []byte    // rewritten input not yet read by the SDK (reader only)
	eof      bool      // in has ended (reader only)
	writeErr error     // the first failed write to out
}

func newStdioConn(ctx context.Context, in io.Reader, out io.Writer) *stdioConn {
	c := &stdioConn{ctx: ctx, in: bufio.NewReaderSize(in, 64<<10), out: out, ids: newIDPath()}
	c.cond = sync.NewCond(&c.mu)
	context.AfterFunc(ctx, func() {
		c.mu.Lock()
		c.cond.Broadcast()
		c.mu.Unlock()
	})
	return c
}

// stdioReader is the SDK's view of the client's stream.
type stdioReader struct{ c *stdioConn }

func (r *stdioReader) Read(b []byte) (int, error) {
	c := r.c
	for len(c.pending) == 0 {
		if c.eof {
			c.waitAnswered()
			return 0, io.EOF
		}
		line, tooLong, err := c.readLine()
		switch {
		case tooLong:
			c.refuse(nil, codeInvalidRequest, fmt.Sprintf("Invalid Request: a line over %d bytes", maxStdioLine))
		case len(bytes.TrimSpace(line)) > 0:
			c.pending = c.inbound(bytes.TrimSpace(line))
		}
		if err == io.EOF {
			c.eof = true
		} else if err != nil {
			return 0, err
		}
	}
	n := copy(b, c.pending)
	c.pending = c.pending[n:]
	return n, nil
}

func (r *stdioReader) Close() error { return nil }

// readLine reads one line, keeping at most maxStdioLine bytes of it.
func (c *stdioConn) readLine() (line []byte, tooLong bool, err error) {
	for {
		chunk, err := c.in.ReadSlice('\n')
		if !tooLong {
			if len(line)+len(chunk) > maxStdioLine {
				tooLong, line = true, nil
			} else {
				line = append(line, chunk...)
			}
		}
		if err != bufio.ErrBufferFull {
			return line, tooLong, err
		}
	}
}

// waitAnswered returns once every request read and not cancelled has been
// answered, or ctx is done.
func (c *stdioConn) waitAnswered() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for c.live > 0 && c.ctx.Err() == nil {
		c.cond.Wait()
	}
}

// inbound checks one line from the client and returns it as the SDK gets
// it (with its newline), or nil when this layer answered it itself.
func (c *stdioConn) inbound(line []byte) []byte {
	if line[0] == '[' {
		if json.Valid(line) {
			c.refuse(nil, codeInvalidRequest, "Invalid Request: JSON-RPC batches are not supported (MCP 2025-06-18 removed them)")
		} else {
			c.refuse(nil, codeParseError, "Parse error: the line is not JSON")
		}
		return nil
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(line, &m); err != nil {
		if json.Valid(line) {
			c.refuse(nil, codeInvalidRequest, "Invalid Request: a message is a JSON object")
		} else {
			c.refuse(nil, codeParseError, "Parse error: "+err.Error())
		}
		return nil
	}
	id, hasID := m["id"]
	if hasID && !validID(id) {
		c.refuse(nil, codeInvalidRequest, "Invalid Request: an id is a string, a number or null")
		return nil
	}
	if string(m["jsonrpc"]) != `"2.0"` {
		c.refuse(id, codeInvalidRequest, `Invalid Request: "jsonrpc" must be "2.0"`)
		return nil
	}
	rawMethod, hasMethod := m["method"]
	if !hasMethod {
		// An answer to a request of the server: its id is the SDK's own.
		if !hasID || string(id) == "null" {
			c.refuse(nil, codeInvalidRequest, "Invalid Request: neither a request (no method) nor a response (no id)")
			return nil
		}
		return append(line, '\n')
	}
	var method string
	if json.Unmarshal(rawMethod, &method) != nil {
		c.refuse(id, codeInvalidRequest, "Invalid Request: the method is not a string")
		return nil
	}
	c.mu.Lock()
	res := c.ids.rewriteInbound(m, method)
	if res.isRequest {
		c.live++
	}
	if res.newly {
		// Its answer will be dropped: the end of input no longer waits for it.
		c.live--
		c.cond.Broadcast()
	}
	c.mu.Unlock()
	if res.drop {
		return nil
	}
	b, err := json.Marshal(m)
	if err != nil { // cannot happen: every value came from a valid document
		c.refuse(id, codeInvalidRequest, "Invalid Request: "+err.Error())
		return nil
	}
	return append(b, '\n')
}

// refuse answers a message this layer will not pass on. id is the
// message's id when it is a valid one, else nil (sent as null).
func (c *stdioConn) refuse(id json.RawMessage, code int, msg string) {
	if id == nil || !validID(id) {
		id = json.RawMessage("null")
	}
	b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "error": map[string]any{"code": code, "message": msg}})
	c.mu.Lock()
	defer c.mu.Unlock()
	c.writeLocked(append(b, '\n'))
}

func (c *stdioConn) writeLocked(b []byte) {
	if c.writeErr != nil {
		return
	}
	if _, err := c.out.Write(b); err != nil {
		c.writeErr = err
	}
}

// stdioWriter is the SDK's view of the client's end: each complete line
// is an answer to map back to the client's id (or drop, when cancelled),
// or a message of the server's own, passed on as it is.
type stdioWriter struct{ c *stdioConn }

func (w *stdioWriter) Write(b []byte) (int, error) {
	c := w.c
	n := len(b)
	c.mu.Lock()
	defer c.mu.Unlock()
	for len(b) > 0 {
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			c.partial = append(c.partial, b...)
			break
		}
		line := b[:i+1]
		if len(c.partial) > 0 {
			line = append(c.partial, line...)
			c.partial = nil
		}
		if out := c.outboundLocked(line); out != nil {
			c.writeLocked(out)
		}
		b = b[i+1:]
	}
	if c.writeErr != nil {
		return 0, c.writeErr
	}
	return n, nil
}

func (w *stdioWriter) Close() error { return nil }

// outboundLocked maps an answer's id back to the client's, or returns nil
// for the answer of a cancelled request.
func (c *stdioConn) outboundLocked(line []byte) []byte {
	ours, rest, ok := answerID(line)
	if !ok {
		return line // a notification, a request of the server, or an answer of no request in flight
	}
	call, ok := c.ids.answered(ours)
	if !ok {
		return line
	}
	if call.cancelled || c.ctx.Err() != nil {
		// Cancelled by the client, or with the whole session (the
		// command's SIGINT/SIGTERM): MCP gives a cancelled request no
		// answer, so the SDK's ("context canceled") is dropped, however
		// late the SDK writes it.
		return nil
	}
	c.live--
	c.cond.Broadcast()
	return withID(call.theirs, rest)
}
