package runtime

import (
	"bytes"
	"encoding/gob"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"go.uber.org/zap/zapcore"

	"github.com/subako/subako-runner/limits"
	"github.com/subako/subako-runner/protocol"
)

// The messages between a runtime and its worker processes. The channel
// (internal/worker) frames and multiplexes opaque messages; each message
// here is one kind byte and the gob encoding of that kind's struct: a
// binary form that carries the large payloads (a metered module, a tool
// result, a chunk of stdout) as they are, never re-encoded as JSON.
//
// A stream's first message (its header) names the operation; the worker
// answers with one final message, and in between either side may send the
// messages of that operation (an HTTP exchange, stdio, trace events).
//
// Everything a worker sends is untrusted: a worker may have been taken over
// by the guest it ran. The parent decodes it with bounds (the channel's
// MaxMessage; gob refuses lengths beyond the data), checks what it can
// (the tool list is validated again, the result parsed again, the view
// built from the parent's own mounts) and kills the worker on anything
// malformed.
type wireKind byte

const (
	wireLoad wireKind = iota + 1
	wireOpen
	wireValidate
	wireDiscover
	wireRelease
	wireCall
	wireProbe
	wireCommand
	wireEvents
	wireProbeSandbox // test builds only (worker_probe_test.go's tag)

	wireHTTP      // worker → parent: a subako_http request document
	wireHTTPReply // parent → worker: its response document
	wireStdin     // parent → worker: command stdin bytes (empty: end)
	wireStdout    // worker → parent: command stdout bytes
	wireStderr    // worker → parent: command stderr bytes
	wireTrace     // worker → parent (events stream)
	wireProgress  // worker → parent (events stream)
	wireInstance  // worker → parent (events stream): an instance started or ended
	wireLog       // worker → parent (events stream): a log entry

	wireReply // worker → parent: the operation's final answer
	wireError // worker → parent: the operation's failure

	// wireSync (worker → parent) carries a sequence number on both an
	// operation's stream, just before its answer, and the events stream:
	// the parent hands the answer back only once the events before it
	// (trace lines, progress) have reached the runtime's hooks.
	wireSync

	// wireSoon (worker → parent, on a call's stream, no payload): the
	// guest has ended; only the instance's end and the answer remain. The
	// parent, whose reader has stopped polling by then on a long call,
	// starts polling again, and its wake-up overlaps that end.
	wireSoon
)

// maxWireKind bounds the kinds a decoder accepts.
const maxWireKind = wireSoon

// encodeWire is one message: kind and v's gob encoding. It panics only on
// a type gob cannot encode, which is a programming error caught by every
// test that sends the kind.
func encodeWire(kind wireKind, v any) []byte {
	if c, ok := v.(wireCodec); ok {
		w := wbuf{b: make([]byte, 1, 256)}
		w.b[0] = byte(kind)
		c.putWire(&w)
		return w.b
	}
	var b bytes.Buffer
	b.WriteByte(byte(kind))
	if v != nil {
		if err := gob.NewEncoder(&b).Encode(v); err != nil {
			panic(fmt.Sprintf("runtime: encoding worker message %d: %v", kind, err))
		}
	}
	return b.Bytes()
}

// errMalformed is what decoding a message the peer should never have sent
// returns: the parent kills a worker that sends one.
var errMalformed = errors.New("malformed worker message")

// wireKindOf is the kind of message m.
func wireKindOf(m []byte) (wireKind, error) {
	if len(m) == 0 || m[0] == 0 || wireKind(m[0]) > maxWireKind {
		return 0, errMalformed
	}
	return wireKind(m[0]), nil
}

// decodeWire decodes message m, which must be of kind want, into v.
func decodeWire(m []byte, want wireKind, v any) error {
	k, err := wireKindOf(m)
	if err != nil {
		return err
	}
	if k != want {
		return fmt.Errorf("%w: kind %d where %d was expected", errMalformed, k, want)
	}
	if v == nil {
		if len(m) != 1 {
			return fmt.Errorf("%w: kind %d carries data", errMalformed, k)
		}
		return nil
	}
	if d, ok := v.(wireDecoder); ok {
		r := rbuf{b: m[1:]}
		d.getWire(&r)
		if r.err == nil && len(r.b) > 0 {
			r.err = errors.New("data after the message")
		}
		if r.err != nil {
			return fmt.Errorf("%w: kind %d: %v", errMalformed, k, r.err)
		}
		return nil
	}
	if err := gob.NewDecoder(bytes.NewReader(m[1:])).Decode(v); err != nil {
		return fmt.Errorf("%w: %v", errMalformed, err)
	}
	return nil
}

// workerEnv is what the parent tells a worker through its environment,
// before the worker reads anything from the channel: the sandbox must be in
// force first.
type workerEnv struct {
	Limits             limits.Limits
	CacheDir           string
	StrictCache        bool
	TempDir            string
	CompilationWorkers int
	ReadOnly           []string
	ReadWrite          []string
	Trace, Progress    bool
	// LogLevel is the parent logger's lowest enabled level: the worker
	// sends its log entries from there up to the parent (module stderr
	// lines at debug among them), as a zapcore.Level; above FatalLevel, none.
	LogLevel int8
	// Instances: the parent's Observer counts instances, so the worker
	// reports their starts and ends.
	Instances bool
}

// workerConfigEnv is the environment variable carrying workerEnv as JSON.
const workerConfigEnv = "SUBAKO_WORKER_CONFIG"

// Request headers.

type wirePath struct {
	Path string
}

type wireOpenReq struct {
	Path string
	// Artifact is artifact.json's fields; Metered travels beside it.
	Artifact []byte
	Metered  []byte
}

type wireHandleReq struct {
	Handle uint64
	Path   string
}

type wireCallReq struct {
	Handle            uint64
	Tool              string
	Arguments         []byte
	Tmp, Data, Skills string
	// Limits are the call's when they differ from the runtime's (which the
	// worker's runtime has); nil otherwise.
	Limits  *limits.Limits
	Network bool // the parent holds a policy: exchange requests with it
	LazyTmp bool // Tmp is a directory the parent\'s runtime made
	// Messages and Discovery are a probe's.
	Messages  [][]byte
	Discovery bool
}

type wireCommandReq struct {
	Path      string
	Args, Env []string
	Mounts    []wireMount
	Limits    limits.Limits
	HasStdin  bool
	Network   bool
}

type wireMount struct {
	Guest, Host string
	ReadOnly    bool
}

// Replies.

// wirePackage is a package the worker holds under Handle: loaded,
// discovered or opened.
type wirePackage struct {
	Handle    uint64
	Artifact  []byte // artifact.json's fields
	Metered   []byte
	Discovery wireDiscovery
	Opened    *Opened
	Imports   []Import
}

type wireDiscovery struct {
	Pages, Notifications int
	Duration             time.Duration
	Stderr               string
	MemoryBytes          int64
	FuelUsed             uint64
}

// wireChecked is a module the worker checked and compiled (Validate).
type wireChecked struct {
	Handle    uint64
	Hash      [32]byte
	Dir       string
	Manifest  *Manifest
	HasAssets bool
	Module    []byte
	Imports   []Import
}

// wireResult is a call's or probe's end, as the worker saw it.
type wireResult struct {
	Result    []byte
	Crash     *Crash
	Stats     Stats
	Reuse     bool
	Timing    wireTiming
	Responses []wireMessage
	Notifs    int
	ExitAfter time.Duration
	Stderr    string
	ExitCode  uint32
}

type wireTiming struct {
	InstanceStart time.Time
	Instantiate   time.Duration
	Run           time.Duration
}

// wireMessage is a protocol.Message (whose ID gob cannot see into) with
// its id as JSON.
type wireMessage struct {
	Kind   protocol.Kind
	ID     []byte
	Method string
	Params []byte
	Result []byte
	Error  *protocol.RPCError
}

func toWireMessage(m protocol.Message) wireMessage {
	w := wireMessage{Kind: m.Kind, Method: m.Method, Params: m.Params, Result: m.Result, Error: m.Error}
	if !m.ID.IsZero() {
		w.ID, _ = m.ID.MarshalJSON()
	}
	return w
}

func (w wireMessage) message() (protocol.Message, error) {
	m := protocol.Message{Kind: w.Kind, Method: w.Method, Params: json.RawMessage(w.Params), Result: json.RawMessage(w.Result), Error: w.Error}
	if len(w.ID) > 0 {
		if err := m.ID.UnmarshalJSON(w.ID); err != nil {
			return protocol.Message{}, fmt.Errorf("%w: %v", errMalformed, err)
		}
	}
	return m, nil
}

// wireFailure is an operation's failure, kept as what the caller can
// inspect: a rejection, a refused call, the runtime's close, the
// caller's cancellation, or any other error as text.
type wireFailure struct {
	Kind       string // "rejected", "call", "closed", "canceled", "link", "other"
	Message    string
	Rejections []Rejection
	Crash      *Crash
	Code       string
	Path       string
}

type wireHTTPMsg struct {
	Doc []byte
	// Used, Entries and LinkBytes are the worker's write budget when it
	// sends the request; the parent's answer carries what the request's
	// file output charged (the deltas).
	Used, Entries, LinkBytes int64
}

type wireTraceMsg struct {
	Event TraceEvent
}

type wireProgressMsg struct {
	Event ProgressEvent
}

type wireInstanceMsg struct {
	Started bool
}

// wireLogMsg is one of the worker's log entries: its fields as a JSON
// object.
type wireLogMsg struct {
	Level   zapcore.Level
	Message string
	Fields  []byte
}
