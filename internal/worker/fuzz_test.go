package worker

import (
	"bytes"
	"context"
	"errors"
	"io"
	"testing"
)

type fuzzRW struct {
	io.Reader
	io.Writer
}

func (fuzzRW) Close() error { return nil }

// FuzzReadLoop feeds arbitrary bytes to a channel's reader, as the parent
// (hello first, streams 1-3 open) and as a worker. It must never panic nor
// hold more than the credit and message limits allow, and must end with
// an error (a *ProtocolError or the input's end).
func FuzzReadLoop(f *testing.F) {
	for _, seed := range fuzzSeeds() {
		f.Add(seed, true)
		f.Add(seed[headerSize+5:], false)
	}
	f.Fuzz(func(t *testing.T, data []byte, parent bool) {
		const maxMessage = 1 << 20
		c := newConn(fuzzRW{bytes.NewReader(data), io.Discard}, parent, maxMessage, nil)
		var streams []*Stream
		var first func([]byte)
		if parent {
			first = func([]byte) {}
			for range 3 {
				c.lastID++
				s := newStream(c, c.lastID)
				c.streams[s.id] = s
				streams = append(streams, s)
			}
		} else {
			c.baseCtx = context.Background()
			c.handle = func(_ context.Context, _ []byte, s *Stream) {}
		}
		err := c.readLoop(first)
		var pe *ProtocolError
		if err == nil || (!errors.As(err, &pe) && err != io.EOF && err != io.ErrUnexpectedEOF) {
			t.Fatalf("readLoop ended with %v", err)
		}
		for _, s := range streams {
			held := s.qbytes + int64(len(s.partial))
			if held > window+maxMessage {
				t.Fatalf("stream %d holds %d bytes", s.id, held)
			}
		}
		c.handlers.Wait()
	})
}

func frame(h frameHeader, payload []byte) []byte {
	b := make([]byte, headerSize, headerSize+len(payload))
	h.length = uint32(len(payload))
	putHeader(b, h)
	return append(b, payload...)
}

func cat(parts ...[]byte) []byte { return bytes.Join(parts, nil) }

// fuzzSeeds are well-formed conversations (and a few near misses), as the
// worker would send them: hello first.
func fuzzSeeds() [][]byte {
	hello := frame(frameHeader{typ: frameHello}, []byte("hello"))
	msg := func(id uint32, m string) []byte {
		return frame(frameHeader{typ: frameData, flags: flagFirst, id: id, aux: uint32(len(m))}, []byte(m))
	}
	return [][]byte{
		cat(hello, msg(1, "abc"), frame(frameHeader{typ: frameEOF, id: 1}, nil), frame(frameHeader{typ: frameReset, id: 1}, nil)),
		cat(hello, frame(frameHeader{typ: frameData, flags: flagFirst, id: 2, aux: 6}, []byte("abc")),
			frame(frameHeader{typ: frameData, id: 2}, []byte("def")), msg(3, "")),
		cat(hello, frame(frameHeader{typ: frameWindow, id: 1, aux: 100}, nil), msg(2, "x")),
		cat(hello, frame(frameHeader{typ: frameData, flags: flagFirst, id: 1, aux: 1 << 30}, []byte("big"))),
		cat(hello, msg(9, "never opened")),
		cat(hello, frame(frameHeader{typ: frameData, id: 1}, []byte("no first"))),
	}
}
