package mcpserve

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"sync"
	"syscall"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// maxTrackedLine bounds the line a stdio tracker keeps to read its id: the
// SDK's own line limit. A longer line is passed on untracked.
const maxTrackedLine = mcp.DefaultMaxLineLength

// ServeStdio serves one client over a line-delimited JSON-RPC stream (the
// stdio transport: in is the client's requests, out its answers) until in
// ends, the client disconnects or ctx is done. Nothing else may write to out.
//
// At the end of in, every request already read is answered before the
// server stops (the SDK alone would stop at once and drop them), so a
// script may write its requests and close stdin.
func (s *Server) ServeStdio(ctx context.Context, in io.Reader, out io.Writer) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	p := newPending(ctx)
	t := &mcp.IOTransport{
		Reader: &drainingReader{r: in, p: p, lines: lineScanner{onLine: p.request}},
		Writer: &trackingWriter{w: out, lines: lineScanner{onLine: p.response}},
	}
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

// pending is the set of request ids read from the client and not yet
// answered (nor cancelled by the client).
type pending struct {
	ctx  context.Context
	mu   sync.Mutex
	cond *sync.Cond
	ids  map[string]bool
}

func newPending(ctx context.Context) *pending {
	p := &pending{ctx: ctx, ids: map[string]bool{}}
	p.cond = sync.NewCond(&p.mu)
	context.AfterFunc(ctx, func() {
		p.mu.Lock()
		p.cond.Broadcast()
		p.mu.Unlock()
	})
	return p
}

type envelope struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params struct {
		RequestID json.RawMessage `json:"requestId"`
	} `json:"params"`
}

// idKey compares ids by JSON value, as far as a client's ids need: a
// string and a number with the same digits differ.
func idKey(raw json.RawMessage) string {
	var v any
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	if d.Decode(&v) != nil || v == nil {
		return ""
	}
	switch v := v.(type) {
	case string:
		return "s:" + v
	case json.Number:
		return "n:" + v.String()
	}
	return ""
}

// request notes a message from the client.
func (p *pending) request(line []byte) {
	var m envelope
	if json.Unmarshal(line, &m) != nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	switch {
	case m.Method == "notifications/cancelled":
		delete(p.ids, idKey(m.Params.RequestID))
	case m.Method != "":
		if k := idKey(m.ID); k != "" {
			p.ids[k] = true
		}
	}
	p.cond.Broadcast()
}

// response notes a message to the client.
func (p *pending) response(line []byte) {
	var m envelope
	if json.Unmarshal(line, &m) != nil || m.Method != "" {
		return
	}
	p.mu.Lock()
	delete(p.ids, idKey(m.ID))
	p.cond.Broadcast()
	p.mu.Unlock()
}

// wait returns once every request read has been answered, or ctx is done.
func (p *pending) wait() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for len(p.ids) > 0 && p.ctx.Err() == nil {
		p.cond.Wait()
	}
}

// lineScanner calls onLine with each complete line written to it.
type lineScanner struct {
	buf    []byte
	skip   bool // the current line is over maxTrackedLine
	onLine func([]byte)
}

func (l *lineScanner) write(b []byte) {
	for len(b) > 0 {
		i := bytes.IndexByte(b, '\n')
		chunk := b
		if i >= 0 {
			chunk = b[:i]
		}
		if !l.skip {
			if len(l.buf)+len(chunk) > maxTrackedLine {
				l.skip, l.buf = true, nil
			} else {
				l.buf = append(l.buf, chunk...)
			}
		}
		if i < 0 {
			return
		}
		if !l.skip {
			l.onLine(l.buf)
		}
		l.buf, l.skip = l.buf[:0], false
		b = b[i+1:]
	}
}

// drainingReader passes the client's stream on, noting its requests, and
// holds back its end until they are answered.
type drainingReader struct {
	r     io.Reader
	p     *pending
	lines lineScanner
	eof   bool
}

func (d *drainingReader) Read(b []byte) (int, error) {
	if d.eof {
		d.p.wait()
		return 0, io.EOF
	}
	n, err := d.r.Read(b)
	d.lines.write(b[:n])
	if err == io.EOF {
		if len(d.lines.buf) > 0 && !d.lines.skip { // a last request without its newline
			d.lines.onLine(d.lines.buf)
			d.lines.buf = nil
		}
		// The bytes of this read must reach the SDK before the end is held
		// back: they may be the requests waited for.
		d.eof = true
		if n > 0 {
			return n, nil
		}
		d.p.wait()
	}
	return n, err
}

func (d *drainingReader) Close() error { return nil }

// trackingWriter passes the server's answers on, noting which requests
// they answer.
type trackingWriter struct {
	mu    sync.Mutex
	w     io.Writer
	lines lineScanner
}

func (t *trackingWriter) Write(b []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	n, err := t.w.Write(b)
	t.lines.write(b[:n])
	return n, err
}

func (t *trackingWriter) Close() error { return nil }
