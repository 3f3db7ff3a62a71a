package runtime

import (
	"encoding/json"
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/subako/subako-runner/limits"
	"github.com/subako/subako-runner/protocol"
)

// Every message round-trips through its encoding, and a message of the
// wrong kind, with trailing data where none belongs, or cut short is
// refused as malformed.
func TestWireRoundTripAndRefusals(t *testing.T) {
	in := wireResult{Result: []byte(`{"content":[]}`), Crash: &Crash{Reason: CrashTrap, Message: "m", Stderr: "s"}, Stats: Stats{FuelUsed: 7}, Reuse: true,
		Responses: []wireMessage{toWireMessage(protocol.Message{Kind: protocol.KindResponse, ID: protocol.IntID(3), Result: []byte(`{}`)})}}
	m := encodeWire(wireReply, in)
	var out wireResult
	if err := decodeWire(m, wireReply, &out); err != nil {
		t.Fatal(err)
	}
	if string(out.Result) != string(in.Result) || out.Crash.Reason != CrashTrap || out.Stats.FuelUsed != 7 || !out.Reuse {
		t.Fatalf("round trip: %+v", out)
	}
	msg, err := out.Responses[0].message()
	if err != nil || !msg.ID.Equal(protocol.IntID(3)) {
		t.Fatalf("the response's id: %v %v", msg.ID, err)
	}
	for name, bad := range map[string]func() error{
		"wrong kind":            func() error { return decodeWire(m, wireError, &wireFailure{}) },
		"empty":                 func() error { return decodeWire(nil, wireReply, &out) },
		"kind zero":             func() error { return decodeWire([]byte{0}, wireReply, &out) },
		"kind past the last":    func() error { return decodeWire([]byte{byte(maxWireKind) + 1}, wireReply, &out) },
		"cut short":             func() error { return decodeWire(m[:len(m)/2], wireReply, &out) },
		"data on an empty kind": func() error { return decodeWire([]byte{byte(wireReply), 1}, wireReply, nil) },
		"bad id":                func() error { _, err := (wireMessage{ID: []byte("{")}).message(); return err },
	} {
		if err := bad(); !errors.Is(err, errMalformed) {
			t.Errorf("%s: %v; want errMalformed", name, err)
		}
	}
}

// FuzzWorkerReply feeds the parent's decoders what a worker taken over by
// its guest could send: any bytes, as any of the replies the parent reads.
// None may panic, and one that decodes a package must give one whose
// artifact checks out.
func FuzzWorkerReply(f *testing.F) {
	f.Add(encodeWire(wireReply, wireResult{Result: []byte(`{"content":[]}`)}))
	f.Add(encodeWire(wireError, wireFailure{Kind: "rejected", Rejections: []Rejection{{Code: "x", Message: "y"}}}))
	f.Add(encodeWire(wireReply, wirePackage{Handle: 1, Artifact: []byte(`{"format":2}`)}))
	f.Add(encodeWire(wireHTTP, wireHTTPMsg{Doc: []byte(`{}`), Used: 5}))
	f.Add(encodeWire(wireReply, wireResult{Responses: []wireMessage{{ID: []byte("1"), Error: &protocol.RPCError{Message: "x"}}}}))
	f.Add(encodeWire(wireCall, wireCallReq{Tool: "t", Messages: [][]byte{[]byte("m")}, Limits: &limits.Limits{}}))
	f.Add([]byte{byte(wireReply), 0xff, 0xff, 0xff, 0xff})
	// A real package's description, for the fuzzer to take apart.
	pkg := load(f, newRuntime(f, nil), "../testdata/packages/cgreet")
	a := pkg.Artifact()
	doc, err := json.Marshal(a)
	if err != nil {
		f.Fatal(err)
	}
	real := encodeWire(wireReply, wirePackage{Handle: 1, Artifact: doc, Metered: a.Metered})
	if _, err := parseRemotePackage(real); err != nil {
		f.Fatalf("a real package's description does not parse: %v", err)
	}
	f.Add(real)
	f.Fuzz(func(t *testing.T, m []byte) {
		var r wireResult
		if decodeWire(m, wireReply, &r) == nil {
			for _, w := range r.Responses {
				w.message()
			}
		}
		var fl wireFailure
		if decodeWire(m, wireError, &fl) == nil {
			_ = fl.err().Error()
		}
		var h wireHTTPMsg
		decodeWire(m, wireHTTP, &h)
		if r, err := parseRemotePackage(m); err == nil && r.tools == nil {
			t.Fatal("a package described without its tools")
		}
		var c wireChecked
		decodeWire(m, wireReply, &c)
		var q wireCallReq
		decodeWire(m, wireCall, &q)
		var seq wireSeq
		decodeWire(m, wireSync, &seq)
	})
}

// A worker's environment is its configuration and the Go runtime's
// settings: none of the embedder's variables (a database password, an API
// key) reaches a process a guest may take over.
func TestWorkerEnvironmentIsMinimal(t *testing.T) {
	t.Setenv("SUBAKO_TEST_EMBEDDER_SECRET", "hunter2")
	t.Setenv("GOGC", "321")
	env := workerEnviron([]byte(`{}`))
	want := map[string]bool{workerConfigEnv + "={}": true, "GOGC=321": true}
	for _, kv := range env {
		if strings.Contains(kv, "hunter2") {
			t.Fatalf("the worker's environment holds the embedder's secret: %v", env)
		}
		delete(want, kv)
	}
	if len(want) > 0 {
		t.Fatalf("the worker's environment %v lacks %v", env, want)
	}
	for _, kv := range env {
		k, _, _ := strings.Cut(kv, "=")
		if k != workerConfigEnv && !slices.Contains(workerEnvVars(), k) {
			t.Errorf("%s is not a variable a worker may inherit", k)
		}
	}
}

// The hand-written forms round-trip every field, and refuse a message cut
// anywhere or with bytes after it.
func TestWireCodecRoundTrip(t *testing.T) {
	lim := limits.Default()
	lim.CallTimeout = 7 * time.Second
	msgs := []any{
		wireCallReq{Handle: 9, Tool: "greet", Arguments: []byte(`{"a":1}`), Tmp: "/t", Data: "/d", Skills: "/s", Network: true, Discovery: true,
			Messages: [][]byte{[]byte("m1"), []byte("m2")}, Limits: &lim},
		wireResult{Result: []byte(`{}`), Crash: &Crash{Reason: "r", Message: "m", Stderr: "e"},
			Stats: Stats{Duration: 1, FuelUsed: 2, MemoryBytes: 3, BytesWritten: 4, HTTPRequests: 5, HTTPBytesSent: 6, HTTPBytesReceived: 7, ExitWait: 8, QueueWait: 9, Queued: 10},
			Reuse: true, Timing: wireTiming{InstanceStart: time.Unix(5, 6), Instantiate: 11, Run: 12},
			Responses: []wireMessage{{Kind: protocol.KindResponse, ID: []byte("1"), Result: []byte("{}"), Error: &protocol.RPCError{Code: -1, Message: "x", Data: []byte("2")}}},
			Notifs:    13, ExitAfter: 14, Stderr: "tail", ExitCode: 15},
		wireHTTPMsg{Doc: []byte("doc"), Used: 1, Entries: 2, LinkBytes: 3},
		wireSeq(42),
	}
	for _, in := range msgs {
		m := encodeWire(wireReply, in)
		out := reflect.New(reflect.TypeOf(in))
		if err := decodeWire(m, wireReply, out.Interface()); err != nil {
			t.Fatalf("%T: %v", in, err)
		}
		if !reflect.DeepEqual(out.Elem().Interface(), in) {
			t.Errorf("%T: round trip gave %+v, want %+v", in, out.Elem().Interface(), in)
		}
		for cut := 1; cut < len(m); cut++ {
			if err := decodeWire(m[:cut], wireReply, reflect.New(reflect.TypeOf(in)).Interface()); !errors.Is(err, errMalformed) {
				t.Errorf("%T cut at %d of %d: %v; want errMalformed", in, cut, len(m), err)
				break
			}
		}
		if err := decodeWire(append(append([]byte(nil), m...), 0), wireReply, reflect.New(reflect.TypeOf(in)).Interface()); !errors.Is(err, errMalformed) {
			t.Errorf("%T with a byte after it: %v", in, err)
		}
	}
}
