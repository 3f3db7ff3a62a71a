package subakohttp

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http/httptrace"
	"os"
	"sync/atomic"
	"syscall"
)

// truncateOutput empties a file output after a failure, so a partial body
// is never mistaken for a complete one.
func truncateOutput(f *os.File) {
	if f != nil {
		_ = f.Truncate(0)
	}
}

func pathErrText(err error) string {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err.Error()
	}
	return err.Error()
}

// bodySource produces the request body afresh for every hop that sends it.
type bodySource struct {
	data        []byte
	file        *os.File
	size        int64
	contentType string
}

func (c *Call) openBody(b *requestBody) (*bodySource, *Error) {
	if b == nil {
		return &bodySource{}, nil
	}
	if b.kind != "file" {
		return &bodySource{data: b.data, size: int64(len(b.data)), contentType: b.contentType}, nil
	}
	if c.cfg.Files == nil {
		return nil, errorf(KindBadPath, "file bodies are not available in this call")
	}
	f, err := c.cfg.Files.OpenFile(b.path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, errorf(KindBadPath, fmt.Sprintf("cannot open %q: %s; use an existing file under /volume/tmp/ or /volume/data/ of this call", b.path, pathErrText(err)))
	}
	st, e := regularFile(f, b.path)
	if e != nil {
		return nil, e
	}
	return &bodySource{file: f, size: st.Size()}, nil
}

// openOutput creates a file output, or opens an existing regular file and
// empties it. The open never waits (O_NONBLOCK: a FIFO without a reader
// fails at once, one with a reader opens) and nothing is truncated before
// the file is known to be a regular one.
func (c *Call) openOutput(guestPath string) (*os.File, *Error) {
	if c.cfg.Files == nil {
		return nil, errorf(KindBadPath, "file outputs are not available in this call")
	}
	f, err := c.createOutput(guestPath)
	if err != nil {
		var herr *Error
		if errors.As(err, &herr) {
			return nil, herr
		}
		return nil, errorf(KindBadPath, fmt.Sprintf("cannot create %q: %s; use a path under /volume/tmp/ or /volume/data/ of this call, in an existing directory, that is not a directory, a FIFO or a device", guestPath, pathErrText(err)))
	}
	if _, e := regularFile(f, guestPath); e != nil {
		return nil, e
	}
	if err := f.Truncate(0); err != nil {
		f.Close()
		return nil, errorf(KindBadPath, fmt.Sprintf("cannot empty %q: %s", guestPath, pathErrText(err)))
	}
	return f, nil
}

// createOutput opens a file output for writing, creating it if it does
// not exist. A file it creates is a new directory entry, charged to the
// call's budget as the WASI layer charges the guest's own (one of
// MaxEntries, no bytes): O_EXCL tells a creation from an existing file
// without a race, and the entry is reserved before it is made.
func (c *Call) createOutput(guestPath string) (*os.File, error) {
	const flags = os.O_WRONLY | syscall.O_NONBLOCK
	b := c.cfg.Budget
	if b == nil {
		return c.cfg.Files.OpenFile(guestPath, flags|os.O_CREATE, 0o644)
	}
	if !b.ReserveEntry(0) {
		// At the cap an existing file may still be written; only a new one is refused.
		f, err := c.cfg.Files.OpenFile(guestPath, flags, 0)
		if errors.Is(err, fs.ErrNotExist) {
			return nil, errorf(KindWriteBudget, fmt.Sprintf("creating %q would exceed the call's write budget (%d of %d bytes used, %d of at most %d new directory entries); write into an existing file or remove files first", guestPath, b.Used(), b.Limit(), b.Entries(), b.MaxEntries()))
		}
		return f, err
	}
	f, err := c.cfg.Files.OpenFile(guestPath, flags|os.O_CREATE|os.O_EXCL, 0o644)
	if err == nil {
		return f, nil
	}
	b.RefundEntry(0)
	if errors.Is(err, fs.ErrExist) {
		return c.cfg.Files.OpenFile(guestPath, flags, 0)
	}
	return nil, err
}

// regularFile checks an opened volume file on its descriptor (not its path,
// which the guest may change meanwhile); it closes f when refusing it.
func regularFile(f *os.File, guestPath string) (fs.FileInfo, *Error) {
	st, err := f.Stat()
	if err != nil || !st.Mode().IsRegular() {
		f.Close()
		return nil, errorf(KindBadPath, fmt.Sprintf("%q is not a regular file (a directory, FIFO, socket or device); use a regular file under /volume/tmp/ or /volume/data/", guestPath))
	}
	return st, nil
}

func (b *bodySource) present() bool { return b.file != nil || b.data != nil }

func (b *bodySource) reader(ctx context.Context, c *Call) io.ReadCloser {
	var r io.Reader
	if b.file != nil {
		r = io.NewSectionReader(b.file, 0, b.size)
	} else {
		r = bytes.NewReader(b.data)
	}
	return io.NopCloser(&countingReader{ctx: ctx, r: r, n: &c.sent})
}

// countingReader counts body bytes sent and stops reading the body (a
// file, for file bodies) as soon as the request's context ends, whatever
// the transport does with the connection.
type countingReader struct {
	ctx context.Context
	r   io.Reader
	n   *atomic.Int64
}

func (cr *countingReader) Read(p []byte) (int, error) {
	if err := cr.ctx.Err(); err != nil {
		return 0, err
	}
	n, err := cr.r.Read(p)
	cr.n.Add(int64(n))
	return n, err
}

// sentCounter counts a request once its headers are written to a
// connection: a request refused before (by the destination check, DNS, a
// refused dial or a failed TLS handshake) was never sent and is not
// counted.
func sentCounter(ctx context.Context, n *atomic.Int64) context.Context {
	return httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{WroteHeaders: func() { n.Add(1) }})
}
