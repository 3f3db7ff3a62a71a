package mcpserve

import (
	"bytes"
	"encoding/json"
	"strconv"
	"sync"

	"github.com/subako/subako-runner/protocol"
)

// idPath is the one way a client's request ids cross to the SDK and back,
// on both transports. The SDK reads a numeric id as an int64 (so 1.0, -0,
// -1.5e-7 or 12345678901234567890 would come back as other numbers) and
// decodes strings (a lone surrogate escape would come back as U+FFFD), so
// every request reaches it under an id of this layer's own, a small
// integer, and its answer goes back under the client's id byte for byte.
//
// Only requests in flight are held: a notifications/cancelled naming an id
// that is not in flight (never sent, already answered, or sent in another
// session) is dropped, never stored and never passed on, so it can neither
// grow memory nor reach another request. An entry is freed when its request
// is answered. Over HTTP, a request whose POST ended before its answer (the
// client gave up on the stream, and may still cancel it, as the SDK's
// client does) is kept among the session's last maxOrphans such requests
// and at most maxOrphanBytes of their ids, the oldest freed first.
type idPath struct {
	mu          sync.Mutex
	next        int64
	byOurs      map[int64]*inFlight
	byTheir     map[string]int64 // protocol.ID.Key of the client's id → ours
	orphans     []int64          // released requests still held, oldest first
	orphanBytes int              // the length of their ids
}

// The bounds of the requests idPath keeps after their POST ended.
const (
	maxOrphans     = 64
	maxOrphanBytes = 1 << 20
)

// inFlight is a request the SDK has not answered: the client's id as sent.
type inFlight struct {
	theirs    json.RawMessage
	key       string
	cancelled bool
}

func newIDPath() *idPath {
	return &idPath{byOurs: map[int64]*inFlight{}, byTheir: map[string]int64{}}
}

// idKey is the key ids compare by: their JSON value (protocol.ID), so a
// cancel may spell the number 1 as 1.0, but the string "1" is another id.
func idKey(raw json.RawMessage) (string, bool) {
	var id protocol.ID
	if id.UnmarshalJSON(raw) != nil || id.IsNull() {
		return "", false
	}
	return id.Key(), true
}

// request registers a request of the client and returns the id the SDK
// gets for it.
func (p *idPath) request(theirs json.RawMessage) int64 {
	key, _ := idKey(theirs)
	p.mu.Lock()
	defer p.mu.Unlock()
	ours := p.next
	p.next++
	p.byOurs[ours] = &inFlight{theirs: bytes.Clone(theirs), key: key}
	p.byTheir[key] = ours
	return ours
}

// cancel marks the request in flight under the client's id theirs
// cancelled and returns the SDK's id for it; ok is false when no such
// request is in flight. newly is false when it was cancelled before.
func (p *idPath) cancel(theirs json.RawMessage) (ours int64, newly, ok bool) {
	key, valid := idKey(theirs)
	if !valid {
		return 0, false, false
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	ours, ok = p.byTheir[key]
	if !ok {
		return 0, false, false
	}
	call := p.byOurs[ours]
	newly = !call.cancelled
	call.cancelled = true
	return ours, newly, true
}

// answered removes the request the SDK knows as ours and returns it; ok is
// false when no such request is in flight (an answer of the layer's own, or
// one already sent).
func (p *idPath) answered(ours int64) (call *inFlight, ok bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	call, ok = p.byOurs[ours]
	if !ok {
		return nil, false
	}
	p.forgetLocked(ours, call)
	return call, true
}

// release is called when the HTTP request that carried the request ours
// ends. A request answered or cancelled is freed; one still running is
// kept, within the bounds, for a cancel that comes after.
func (p *idPath) release(ours int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	call, ok := p.byOurs[ours]
	if !ok {
		return
	}
	if call.cancelled || len(call.theirs) > maxOrphanBytes {
		p.forgetLocked(ours, call)
		return
	}
	p.orphans = append(p.orphans, ours)
	p.orphanBytes += len(call.theirs)
	for len(p.orphans) > maxOrphans || p.orphanBytes > maxOrphanBytes {
		oldest := p.orphans[0]
		p.orphans = p.orphans[1:]
		if c, ok := p.byOurs[oldest]; ok {
			p.orphanBytes -= len(c.theirs)
			p.forgetLocked(oldest, c)
		}
	}
}

func (p *idPath) forgetLocked(ours int64, call *inFlight) {
	delete(p.byOurs, ours)
	if p.byTheir[call.key] == ours {
		delete(p.byTheir, call.key)
	}
}

// inFlightCount is the number of requests held.
func (p *idPath) inFlightCount() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.byOurs) + len(p.byTheir)
}

// inboundResult is what rewriteInbound did with a message.
type inboundResult struct {
	ours      int64
	isRequest bool // ours names the request's id
	drop      bool // a cancel for no request in flight: pass nothing on
	newly     bool // a cancel that cancelled a request not cancelled before
}

// rewriteInbound puts the SDK's ids into a client's message (a JSON object
// already checked to be JSON-RPC): a request's id becomes a new id of
// ours, and a notifications/cancelled's requestId the id of the request it
// names, or the message is to be dropped when it names none in flight.
func (p *idPath) rewriteInbound(m map[string]json.RawMessage, method string) inboundResult {
	var res inboundResult
	if id, ok := m["id"]; ok && string(id) != "null" {
		res.ours, res.isRequest = p.request(id), true
		m["id"] = json.RawMessage(strconv.FormatInt(res.ours, 10))
	}
	if method != "notifications/cancelled" {
		return res
	}
	var params map[string]json.RawMessage
	if json.Unmarshal(m["params"], &params) != nil {
		res.drop = true
		return res
	}
	ours, newly, ok := p.cancel(params["requestId"])
	if !ok {
		res.drop = true
		return res
	}
	res.newly = newly
	params["requestId"] = json.RawMessage(strconv.FormatInt(ours, 10))
	if b, err := json.Marshal(params); err == nil {
		m["params"] = b
	}
	return res
}

// responsePrefix is how the SDK begins every message with an id (its wire
// struct's field order: jsonrpc, id, method, …).
var responsePrefix = []byte(`{"jsonrpc":"2.0","id":`)

// answerID reads the SDK's id of an answer it wrote: ours, and the rest of
// msg after the id. ok is false for anything else (a notification, a
// request of the server, an answer without an id of ours).
func answerID(msg []byte) (ours int64, rest []byte, ok bool) {
	if !bytes.HasPrefix(msg, responsePrefix) {
		return 0, nil, false
	}
	rest = msg[len(responsePrefix):]
	end := bytes.IndexAny(rest, ",}")
	if end < 0 || bytes.HasPrefix(rest[end:], []byte(`,"method":`)) {
		return 0, nil, false
	}
	ours, err := strconv.ParseInt(string(rest[:end]), 10, 64)
	if err != nil {
		return 0, nil, false
	}
	return ours, rest[end:], true
}

// withID is an answer rest (as answerID returns it) under the id theirs.
func withID(theirs json.RawMessage, rest []byte) []byte {
	out := make([]byte, 0, len(responsePrefix)+len(theirs)+len(rest))
	out = append(out, responsePrefix...)
	out = append(out, theirs...)
	return append(out, rest...)
}

// validID: JSON-RPC ids are strings, numbers or null.
func validID(raw json.RawMessage) bool {
	var id protocol.ID
	return id.UnmarshalJSON(raw) == nil && json.Valid(raw)
}
