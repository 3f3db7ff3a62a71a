package wasi

import (
	"io"
	"sync"
)

// Stdin is the host-fed stdin pipe of one instance: the host writes request
// lines (Write never blocks; the bytes are buffered) and closes it with
// CloseWrite; the guest reads through fd 0. A guest may make fd 0
// non-blocking (fd_fdstat_set_flags) and wait for it in poll_oneoff together
// with clocks, which is how Go guests keep their other goroutines running
// while stdin stays open.
type Stdin struct {
	mu     sync.Mutex
	buf    []byte
	closed bool
	// wake is closed at the next change, and made only when a reader may
	// wait (nothing buffered, not closed): most calls never wait, and a
	// channel at every write would be garbage for nothing.
	wake chan struct{}
}

// NewStdin returns an open, empty pipe.
func NewStdin() *Stdin { return &Stdin{} }

// Write appends p for the guest to read. It fails with io.ErrClosedPipe
// after CloseWrite.
func (s *Stdin) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return 0, io.ErrClosedPipe
	}
	s.buf = append(s.buf, p...)
	s.signal()
	return len(p), nil
}

// CloseWrite ends the stream: once the buffered bytes are read, the guest
// reads end of file. Closing twice is harmless.
func (s *Stdin) CloseWrite() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.closed {
		s.closed = true
		s.signal()
	}
	return nil
}

func (s *Stdin) signal() {
	if s.wake != nil {
		close(s.wake)
		s.wake = nil
	}
}

// state reports what a reader would see now, and, when it has to wait (nothing
// buffered, not closed), a channel closed at the next change; a ready
// pipe has no channel (nil), for nothing it could change would make it
// readier. A nil Stdin is an empty, closed pipe.
func (s *Stdin) state() (buffered int, eof bool, wake <-chan struct{}) {
	if s == nil {
		return 0, true, nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	buffered, eof = len(s.buf), s.closed && len(s.buf) == 0
	if buffered > 0 || eof {
		return buffered, eof, nil
	}
	if s.wake == nil {
		s.wake = make(chan struct{})
	}
	return 0, false, s.wake
}

// stdinState is what a reader would see at one instant, with the channel
// closed at the first change after it.
type stdinState struct {
	buffered int
	eof      bool
	wake     <-chan struct{}
}

func (s *Stdin) snapshot() stdinState {
	n, eof, wake := s.state()
	return stdinState{n, eof, wake}
}

// readInto fills bufs from the buffer without blocking.
func (s *Stdin) readInto(bufs iovecList) int {
	if s == nil {
		return 0
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for b := range bufs.all() {
		c := copy(b, s.buf)
		s.buf = s.buf[c:]
		n += c
		if len(s.buf) == 0 {
			break
		}
	}
	if len(s.buf) == 0 {
		s.buf = nil // let the backing array go
	}
	return n
}
