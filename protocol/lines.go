package protocol

import "bytes"

// LineSplitter cuts the module's stdout into protocol lines under the §3
// caps. It is an io.Writer: feed it the bytes of every stdout write in order.
// It never holds more than maxLine bytes of a pending line, so a module that
// writes an endless line costs the host at most maxLine of memory.
//
// Not safe for concurrent use; the guest's fd_write calls are sequential.
type LineSplitter struct {
	maxLine, maxTotal int64
	onLine            func([]byte) error
	buf               []byte // the pending partial line
	total             int64
	lines             int64
	err               error
}

// NewLineSplitter returns a splitter that calls onLine for each complete
// line, without its "\n". The slice passed to onLine is only valid during the
// call (it may point into the caller's buffer). A limit ≤ 0 means no limit.
//
// A line longer than maxLine bytes (not counting "\n"), or more than maxTotal
// bytes in all (counting every byte written, newlines included), makes Write
// return an *Error with CodeOutputTooLarge. An error from onLine is returned
// as is. Either error is sticky: every later Write and Close returns it.
func NewLineSplitter(maxLine, maxTotal int64, onLine func(line []byte) error) *LineSplitter {
	return &LineSplitter{maxLine: maxLine, maxTotal: maxTotal, onLine: onLine}
}

// Write splits p into lines. It returns the number of bytes consumed, which
// is len(p) unless err is non-nil.
func (s *LineSplitter) Write(p []byte) (int, error) {
	if s.err != nil {
		return 0, s.err
	}
	n := len(p)
	if s.maxTotal > 0 && s.total+int64(n) > s.maxTotal {
		n = int(s.maxTotal - s.total) // consume what fits, then fail
	}
	consumed, err := s.split(p[:n])
	s.total += int64(consumed)
	if err == nil && n < len(p) {
		err = errorf(CodeOutputTooLarge, "the module wrote more than %d bytes to stdout in this run", s.maxTotal)
	}
	if err != nil {
		s.err = err
		return consumed, err
	}
	return len(p), nil
}

func (s *LineSplitter) split(p []byte) (int, error) {
	off := 0
	for off < len(p) {
		i := bytes.IndexByte(p[off:], '\n')
		if i < 0 {
			if err := s.hold(p[off:]); err != nil {
				return off, err
			}
			return len(p), nil
		}
		seg := p[off : off+i]
		if len(s.buf) == 0 {
			if s.maxLine > 0 && int64(len(seg)) > s.maxLine {
				return off, s.tooLong()
			}
			if err := s.deliver(seg); err != nil {
				return off + i + 1, err
			}
		} else {
			if err := s.hold(seg); err != nil {
				return off, err
			}
			line := s.buf
			s.buf = s.buf[:0]
			if cap(line) > 1<<16 {
				s.buf = nil // do not keep a huge buffer alive for the rest of the run
			}
			if err := s.deliver(line); err != nil {
				return off + i + 1, err
			}
		}
		off += i + 1
	}
	return off, nil
}

// hold appends part of a line to the pending buffer, refusing to grow it
// past maxLine.
func (s *LineSplitter) hold(b []byte) error {
	if s.maxLine > 0 && int64(len(s.buf))+int64(len(b)) > s.maxLine {
		s.buf = nil
		return s.tooLong()
	}
	s.buf = append(s.buf, b...)
	return nil
}

func (s *LineSplitter) deliver(line []byte) error {
	s.lines++
	return s.onLine(line)
}

func (s *LineSplitter) tooLong() error {
	return errorf(CodeOutputTooLarge, "the module wrote a stdout line longer than %d bytes; a single JSON-RPC message may not exceed it", s.maxLine)
}

// Close delivers a trailing line that had no "\n" (it is a protocol line
// too) and returns the sticky error, if any. Close after Close does nothing.
func (s *LineSplitter) Close() error {
	if s.err != nil {
		return s.err
	}
	if len(s.buf) > 0 {
		line := s.buf
		s.buf = nil
		if err := s.deliver(line); err != nil {
			s.err = err
			return err
		}
	}
	return nil
}

// Lines returns the number of lines delivered so far.
func (s *LineSplitter) Lines() int64 { return s.lines }

// Total returns the number of stdout bytes consumed so far.
func (s *LineSplitter) Total() int64 { return s.total }
