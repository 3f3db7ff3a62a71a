package worker

import (
	"encoding/binary"
	"fmt"
)

// Frame layout: a fixed 16-byte header (little-endian), then the payload.
//
//	[0:4]   payload length (<= maxFrame)
//	[4]     frame type
//	[5]     flags
//	[6:8]   reserved, zero
//	[8:12]  stream id (0 for connection frames)
//	[12:16] aux: DATA+flagFirst: the message's total length; WINDOW: credit increment; else 0
const (
	headerSize = 16
	maxFrame   = 256 << 10
	// window is the credit each side grants per stream and direction.
	window = 4 << 20
	// creditBatch: credit is given back in lumps this big (or when the reader has drained).
	creditBatch = window / 4
	// msgCost is the credit a message costs on top of its bytes, so that
	// empty messages cannot pile up without bound either.
	msgCost = 64
	// maxMessageLimit is what the aux field can describe.
	maxMessageLimit = 1<<32 - 1
)

const (
	frameHello    = 1 // worker -> parent, stream 0, payload: hello; the worker's first frame
	frameSettings = 2 // parent -> worker, stream 0, aux: the largest message the parent accepts
	frameData     = 3 // a message chunk; flagFirst starts a message, aux = its total length
	frameWindow   = 4 // aux more bytes of credit for the stream's sender
	frameEOF      = 5 // the sender's CloseSend
	frameReset    = 6 // parent -> worker: abandon (Close); worker -> parent: the handler returned
)

const flagFirst = 1

type frameHeader struct {
	length uint32
	typ    uint8
	flags  uint8
	id     uint32
	aux    uint32
}

// ProtocolError is a malformed frame or a broken rule of the channel. On the
// parent side the worker that sent it is killed (Reason ExitProtocol).
type ProtocolError struct{ Msg string }

func (e *ProtocolError) Error() string { return "worker: protocol violation: " + e.Msg }

func protoErr(format string, args ...any) error {
	return &ProtocolError{Msg: fmt.Sprintf(format, args...)}
}

func putHeader(b []byte, h frameHeader) {
	binary.LittleEndian.PutUint32(b[0:4], h.length)
	b[4] = h.typ
	b[5] = h.flags
	b[6], b[7] = 0, 0
	binary.LittleEndian.PutUint32(b[8:12], h.id)
	binary.LittleEndian.PutUint32(b[12:16], h.aux)
}

// parseHeader checks everything a header can be checked for on its own;
// the rest (stream state, credit, message size) is the reader's job.
func parseHeader(b []byte) (frameHeader, error) {
	h := frameHeader{
		length: binary.LittleEndian.Uint32(b[0:4]),
		typ:    b[4],
		flags:  b[5],
		id:     binary.LittleEndian.Uint32(b[8:12]),
		aux:    binary.LittleEndian.Uint32(b[12:16]),
	}
	if b[6] != 0 || b[7] != 0 {
		return h, protoErr("reserved header bytes set")
	}
	if h.length > maxFrame {
		return h, protoErr("frame of %d bytes (max %d)", h.length, maxFrame)
	}
	switch h.typ {
	case frameHello, frameSettings:
		if h.id != 0 || h.flags != 0 {
			return h, protoErr("connection frame %d with stream id or flags", h.typ)
		}
		if h.typ == frameSettings && h.length != 0 {
			return h, protoErr("settings frame with payload")
		}
	case frameData:
		if h.id == 0 || h.flags&^flagFirst != 0 {
			return h, protoErr("data frame: bad stream id or flags")
		}
		if h.flags&flagFirst == 0 && (h.aux != 0 || h.length == 0) {
			return h, protoErr("continuation frame with aux or empty")
		}
		if h.flags&flagFirst != 0 && h.length > h.aux {
			return h, protoErr("first chunk longer than its message")
		}
	case frameWindow:
		if h.id == 0 || h.flags != 0 || h.length != 0 || h.aux == 0 || h.aux > window {
			return h, protoErr("bad window frame")
		}
	case frameEOF, frameReset:
		if h.id == 0 || h.flags != 0 || h.length != 0 || h.aux != 0 {
			return h, protoErr("bad eof/reset frame")
		}
	default:
		return h, protoErr("unknown frame type %d", h.typ)
	}
	return h, nil
}
