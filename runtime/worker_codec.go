package runtime

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"math"
	"time"

	"github.com/subako/subako-runner/limits"
	"github.com/subako/subako-runner/protocol"
)

// The messages of every call (its header, its answer, its HTTP
// exchanges, the events' sequence numbers) have a hand-written binary
// form: varints and length-prefixed bytes in a fixed order. gob, which the
// rarer messages use, sends its type descriptions with every message and
// builds a decoder for them each time, about 70 µs a message: more than
// the whole of a small call in process (docs/RATIONALE.md).

// wbuf appends a message's fields.
type wbuf struct{ b []byte }

func (w *wbuf) uint(v uint64)       { w.b = binary.AppendUvarint(w.b, v) }
func (w *wbuf) int(v int64)         { w.b = binary.AppendVarint(w.b, v) }
func (w *wbuf) bytes(p []byte)      { w.uint(uint64(len(p))); w.b = append(w.b, p...) }
func (w *wbuf) string(s string)     { w.uint(uint64(len(s))); w.b = append(w.b, s...) }
func (w *wbuf) dur(d time.Duration) { w.int(int64(d)) }
func (w *wbuf) bool(v bool) {
	if v {
		w.b = append(w.b, 1)
	} else {
		w.b = append(w.b, 0)
	}
}

// rbuf reads them back. The first problem sticks (err) and every read
// after it returns zero values: a decoder reads all its fields and checks
// once.
type rbuf struct {
	b   []byte
	err error
}

var errShort = errors.New("message ends early")

func (r *rbuf) fail(err error) {
	if r.err == nil {
		r.err = err
	}
	r.b = nil
}

func (r *rbuf) uint() uint64 {
	v, n := binary.Uvarint(r.b)
	if n <= 0 {
		r.fail(errShort)
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *rbuf) int() int64 {
	v, n := binary.Varint(r.b)
	if n <= 0 {
		r.fail(errShort)
		return 0
	}
	r.b = r.b[n:]
	return v
}

// bytes is the next length-prefixed field, a slice of the message (which
// the reader owns); nil when empty.
func (r *rbuf) bytes() []byte {
	n := r.uint()
	if n > uint64(len(r.b)) {
		r.fail(errShort)
		return nil
	}
	if n == 0 {
		return nil
	}
	p := r.b[:n:n]
	r.b = r.b[n:]
	return p
}

func (r *rbuf) string() string     { return string(r.bytes()) }
func (r *rbuf) dur() time.Duration { return time.Duration(r.int()) }
func (r *rbuf) intN() int          { return int(clampInt(r.int())) }
func (r *rbuf) count(each int) int {
	// A count can claim no more elements than the bytes left could hold.
	n := r.uint()
	if n > uint64(len(r.b))/uint64(each) {
		r.fail(errShort)
		return 0
	}
	return int(n)
}

func (r *rbuf) bool() bool {
	if len(r.b) == 0 {
		r.fail(errShort)
		return false
	}
	v := r.b[0]
	r.b = r.b[1:]
	if v > 1 {
		r.fail(errors.New("a boolean that is neither 0 nor 1"))
	}
	return v == 1
}

func clampInt(v int64) int64 { return max(min(v, math.MaxInt32), math.MinInt32) }

// wireCodec is a message with the hand-written form; encodeWire and
// decodeWire use it instead of gob.
type wireCodec interface{ putWire(w *wbuf) }
type wireDecoder interface{ getWire(r *rbuf) }

// wireSeq is a wireSync's sequence number.
type wireSeq uint64

func (s wireSeq) putWire(w *wbuf)  { w.uint(uint64(s)) }
func (s *wireSeq) getWire(r *rbuf) { *s = wireSeq(r.uint()) }

func (m wireHTTPMsg) putWire(w *wbuf) {
	w.bytes(m.Doc)
	w.int(m.Used)
	w.int(m.Entries)
	w.int(m.LinkBytes)
}

func (m *wireHTTPMsg) getWire(r *rbuf) {
	m.Doc, m.Used, m.Entries, m.LinkBytes = r.bytes(), r.int(), r.int(), r.int()
}

func (q wireCallReq) putWire(w *wbuf) {
	w.uint(q.Handle)
	w.string(q.Tool)
	w.bytes(q.Arguments)
	w.string(q.Tmp)
	w.string(q.Data)
	w.string(q.Skills)
	w.bool(q.Network)
	w.bool(q.Discovery)
	w.uint(uint64(len(q.Messages)))
	for _, m := range q.Messages {
		w.bytes(m)
	}
	// Limits other than the runtime's are rare (a call's override): JSON
	// keeps this form free of limits.Limits' two dozen fields.
	w.bool(q.Limits != nil)
	if q.Limits != nil {
		doc, _ := json.Marshal(q.Limits)
		w.bytes(doc)
	}
}

func (q *wireCallReq) getWire(r *rbuf) {
	q.Handle, q.Tool, q.Arguments = r.uint(), r.string(), r.bytes()
	q.Tmp, q.Data, q.Skills = r.string(), r.string(), r.string()
	q.Network, q.Discovery = r.bool(), r.bool()
	if n := r.count(1); n > 0 {
		q.Messages = make([][]byte, n)
		for i := range q.Messages {
			q.Messages[i] = r.bytes()
		}
	}
	if r.bool() {
		q.Limits = &limits.Limits{}
		if err := json.Unmarshal(r.bytes(), q.Limits); err != nil {
			r.fail(err)
		}
	}
}

func (s Stats) putWire(w *wbuf) {
	w.dur(s.Duration)
	w.uint(s.FuelUsed)
	w.int(s.MemoryBytes)
	w.int(s.BytesWritten)
	w.int(s.HTTPRequests)
	w.int(s.HTTPBytesSent)
	w.int(s.HTTPBytesReceived)
	w.dur(s.ExitWait)
	w.dur(s.QueueWait)
	w.int(int64(s.Queued))
}

func (s *Stats) getWire(r *rbuf) {
	s.Duration, s.FuelUsed, s.MemoryBytes, s.BytesWritten = r.dur(), r.uint(), r.int(), r.int()
	s.HTTPRequests, s.HTTPBytesSent, s.HTTPBytesReceived = r.int(), r.int(), r.int()
	s.ExitWait, s.QueueWait, s.Queued = r.dur(), r.dur(), r.intN()
}

func putCrash(w *wbuf, c *Crash) {
	w.bool(c != nil)
	if c != nil {
		w.string(c.Reason)
		w.string(c.Message)
		w.string(c.Stderr)
	}
}

func getCrash(r *rbuf) *Crash {
	if !r.bool() {
		return nil
	}
	return &Crash{Reason: r.string(), Message: r.string(), Stderr: r.string()}
}

func putTime(w *wbuf, t time.Time) {
	if t.IsZero() {
		w.int(0)
		return
	}
	w.int(t.UnixNano())
}

func getTime(r *rbuf) time.Time {
	if ns := r.int(); ns != 0 {
		return time.Unix(0, ns)
	}
	return time.Time{}
}

func (m wireMessage) putWire(w *wbuf) {
	w.int(int64(m.Kind))
	w.bytes(m.ID)
	w.string(m.Method)
	w.bytes(m.Params)
	w.bytes(m.Result)
	w.bool(m.Error != nil)
	if m.Error != nil {
		w.int(m.Error.Code)
		w.string(m.Error.Message)
		w.bytes(m.Error.Data)
	}
}

func (m *wireMessage) getWire(r *rbuf) {
	m.Kind, m.ID, m.Method = protocol.Kind(r.intN()), r.bytes(), r.string()
	m.Params, m.Result = r.bytes(), r.bytes()
	if r.bool() {
		m.Error = &protocol.RPCError{Code: r.int(), Message: r.string(), Data: r.bytes()}
	}
}

func (res wireResult) putWire(w *wbuf) {
	w.bytes(res.Result)
	putCrash(w, res.Crash)
	res.Stats.putWire(w)
	w.bool(res.Reuse)
	putTime(w, res.Timing.InstanceStart)
	w.dur(res.Timing.Instantiate)
	w.dur(res.Timing.Run)
	w.uint(uint64(len(res.Responses)))
	for _, m := range res.Responses {
		m.putWire(w)
	}
	w.int(int64(res.Notifs))
	w.dur(res.ExitAfter)
	w.string(res.Stderr)
	w.uint(uint64(res.ExitCode))
}

func (res *wireResult) getWire(r *rbuf) {
	res.Result = r.bytes()
	res.Crash = getCrash(r)
	res.Stats.getWire(r)
	res.Reuse = r.bool()
	res.Timing.InstanceStart = getTime(r)
	res.Timing.Instantiate, res.Timing.Run = r.dur(), r.dur()
	// A response takes at least its eight fields' bytes.
	if n := r.count(8); n > 0 {
		res.Responses = make([]wireMessage, n)
		for i := range res.Responses {
			res.Responses[i].getWire(r)
		}
	}
	res.Notifs = r.intN()
	res.ExitAfter = r.dur()
	res.Stderr = r.string()
	res.ExitCode = uint32(min(r.uint(), math.MaxUint32))
}
