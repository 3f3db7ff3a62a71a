package worker

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"
)

// modeEnv picks how the re-executed test binary behaves as a worker.
const modeEnv = "SUBAKO_WORKER_TEST_MODE"

func TestMain(m *testing.M) {
	if ch, ok := Channel(); ok {
		os.Exit(testWorker(ch))
	}
	os.Exit(m.Run())
}

// testWorker is the worker the tests start: the stream's header picks what it does.
func testWorker(ch *os.File) int {
	switch os.Getenv(modeEnv) {
	case "garbage":
		ch.Write([]byte("this is not a frame, it is garbage"))
		select {}
	case "exit-before-hello":
		fmt.Fprintln(os.Stderr, "boom before hello")
		return 4
	case "raw":
		// Echoes bytes on the bare socket: the floor BenchmarkRawPingPong measures.
		io.Copy(ch, ch)
		return 0
	case "exit-after-hello":
		// The first process (it wins the file) serves; its replacements die.
		if f, err := os.OpenFile(os.Getenv("SUBAKO_WORKER_TEST_FIRST"), os.O_CREATE|os.O_EXCL, 0o600); err == nil {
			f.Close()
			break
		}
		var hb [headerSize]byte
		putHeader(hb[:], frameHeader{typ: frameHello})
		ch.Write(hb[:])
		return 5
	}
	var mu sync.Mutex
	canceled := map[string]chan struct{}{}
	canceledCh := func(key string) chan struct{} {
		mu.Lock()
		defer mu.Unlock()
		c := canceled[key]
		if c == nil {
			c = make(chan struct{})
			canceled[key] = c
		}
		return c
	}
	var retained [][]byte
	handle := func(ctx context.Context, header []byte, s *Stream) {
		cmd, arg, _ := strings.Cut(string(header), ":")
		switch cmd {
		case "echo":
			for {
				m, err := s.Recv()
				if err != nil {
					return
				}
				if err := s.Send(m); err != nil {
					return
				}
			}
		case "big":
			n, _ := strconv.Atoi(arg)
			if err := s.Send(pattern(n)); err != nil {
				s.Send([]byte("error: " + err.Error()))
			}
		case "ask":
			s.Send([]byte("question"))
			a, err := s.Recv()
			if err != nil {
				return
			}
			s.Send(append([]byte("answer was "), a...))
		case "sleep":
			<-ctx.Done()
			close(canceledCh(arg))
		case "canceled":
			select {
			case <-canceledCh(arg):
				s.Send([]byte("yes"))
			case <-ctx.Done():
			}
		case "hang":
			for {
			}
		case "alloc":
			n, _ := strconv.Atoi(arg)
			for range n {
				b := make([]byte, 1<<20)
				for i := 0; i < len(b); i += 4096 {
					b[i] = 1
				}
				retained = append(retained, b)
			}
			s.Send([]byte("allocated"))
			<-ctx.Done()
		case "exit":
			os.Exit(3)
		case "stderr":
			fmt.Fprintln(os.Stderr, "a line from the worker")
			s.Send([]byte("written"))
		case "flood":
			n, err := strconv.Atoi(arg)
			if err != nil {
				n = 1024
			}
			m := make([]byte, n)
			for s.Send(m) == nil {
			}
		case "garbage":
			var hb [headerSize]byte
			putHeader(hb[:], frameHeader{typ: 0xEE, id: 1})
			ch.Write(hb[:])
			<-ctx.Done()
		case "last":
			// Three messages and the stream's end in one write (SendLast).
			s.SendLast([]byte("one"), []byte("two"), []byte("three"))
		case "goid":
			if arg != "wait" {
				s.SendLast([]byte(goroutineID()))
				return
			}
			s.Send([]byte(goroutineID()))
			s.Recv() // until the parent's CloseSend
		case "liar":
			// Announces a message past the parent's MaxMessage, bypassing Send's check.
			var hb [headerSize]byte
			putHeader(hb[:], frameHeader{typ: frameData, flags: flagFirst, id: s.id, aux: maxMessageLimit})
			ch.Write(hb[:])
			<-ctx.Done()
		}
	}
	if err := Serve(context.Background(), ch, []byte("hello from "+strconv.Itoa(os.Getpid())), handle); err != nil {
		fmt.Fprintln(os.Stderr, "serve:", err)
		return 1
	}
	if os.Getenv(modeEnv) == "linger" {
		select {} // a worker that does not exit when the channel closes
	}
	return 0
}

// goroutineID is the running goroutine's number, from its stack's first
// line ("goroutine 42 [running]:").
func goroutineID() string {
	var b [64]byte
	f := strings.Fields(string(b[:runtime.Stack(b[:], false)]))
	if len(f) < 2 {
		return "?"
	}
	return f[1]
}

func pattern(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i*7 + i>>16)
	}
	return b
}

func testConfig(mode string) Config {
	return Config{
		Path:  os.Args[0],
		Args:  []string{"-test.run=^$"},
		Env:   append(os.Environ(), modeEnv+"="+mode),
		Count: 1,
	}
}

func startPool(t testing.TB, cfg Config) *Pool {
	t.Helper()
	p, err := Start(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		p.Close(ctx)
	})
	return p
}

func open(t testing.TB, s *Slot, header string) *Stream {
	t.Helper()
	st, _, err := s.Open(context.Background(), []byte(header))
	if err != nil {
		t.Fatal(err)
	}
	return st
}

func recvString(t testing.TB, st *Stream) string {
	t.Helper()
	m, err := st.Recv()
	if err != nil {
		t.Fatal(err)
	}
	return string(m)
}

func exitErr(t *testing.T, err error) *ExitError {
	t.Helper()
	var ee *ExitError
	if !errors.As(err, &ee) {
		t.Fatalf("error %v (%T), want *ExitError", err, err)
	}
	return ee
}

// recvExit reads until the stream fails and returns that ExitError.
func recvExit(t *testing.T, st *Stream) *ExitError {
	t.Helper()
	for {
		_, err := st.Recv()
		if err != nil {
			return exitErr(t, err)
		}
	}
}

func TestEcho(t *testing.T) {
	p := startPool(t, testConfig(""))
	s := p.Slot(0)
	if got, want := string(s.Hello()), "hello from "+strconv.Itoa(s.Pid()); got != want {
		t.Fatalf("hello %q, want %q", got, want)
	}
	st, gen, err := s.Open(context.Background(), []byte("echo"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if gen != 1 || s.Generation() != 1 || s.Index() != 0 || p.Len() != 1 {
		t.Fatalf("gen %d/%d index %d len %d", gen, s.Generation(), s.Index(), p.Len())
	}
	for _, m := range []string{"one", "", "three", strings.Repeat("x", maxFrame+1)} {
		if err := st.Send([]byte(m)); err != nil {
			t.Fatal(err)
		}
		if got := recvString(t, st); got != m {
			t.Fatalf("echo of %d bytes gave %d", len(m), len(got))
		}
	}
	if err := st.CloseSend(); err != nil {
		t.Fatal(err)
	}
	if err := st.Send([]byte("late")); !errors.Is(err, ErrSendClosed) {
		t.Fatalf("send after CloseSend: %v", err)
	}
	if _, err := st.Recv(); err != io.EOF {
		t.Fatalf("after CloseSend: %v, want io.EOF", err)
	}
	st.Close()
	if _, err := st.Recv(); !errors.Is(err, ErrStreamClosed) {
		t.Fatalf("after Close: %v", err)
	}
}

func TestAsk(t *testing.T) {
	p := startPool(t, testConfig(""))
	st := open(t, p.Slot(0), "ask")
	defer st.Close()
	if q := recvString(t, st); q != "question" {
		t.Fatalf("got %q", q)
	}
	if err := st.Send([]byte("42")); err != nil {
		t.Fatal(err)
	}
	if a := recvString(t, st); a != "answer was 42" {
		t.Fatalf("got %q", a)
	}
	if _, err := st.Recv(); err != io.EOF {
		t.Fatalf("after the handler returned: %v, want io.EOF", err)
	}
}

func TestConcurrentStreams(t *testing.T) {
	cfg := testConfig("")
	cfg.Count = 2
	p := startPool(t, cfg)
	const n = 1000
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Go(func() {
			st, _, err := p.Slot(i%2).Open(context.Background(), []byte("echo"))
			if err != nil {
				errs <- err
				return
			}
			defer st.Close()
			for j := range 3 {
				want := fmt.Sprintf("stream %d message %d", i, j)
				if err := st.Send([]byte(want)); err != nil {
					errs <- err
					return
				}
				got, err := st.Recv()
				if err != nil || string(got) != want {
					errs <- fmt.Errorf("got %q, %v; want %q", got, err, want)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

func TestBigMessage(t *testing.T) {
	p := startPool(t, testConfig(""))
	const size = 40 << 20
	st := open(t, p.Slot(0), "big:"+strconv.Itoa(size))
	defer st.Close()
	m, err := st.Recv()
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(m, pattern(size)) {
		t.Fatalf("big message of %d bytes differs", len(m))
	}

	echo := open(t, p.Slot(0), "echo")
	defer echo.Close()
	big := pattern(size - 3)
	go echo.Send(big)
	if m, err := echo.Recv(); err != nil || !bytes.Equal(m, big) {
		t.Fatalf("echo of a big message: %d bytes, %v", len(m), err)
	}
}

func TestMaxMessage(t *testing.T) {
	cfg := testConfig("")
	cfg.MaxMessage = 1 << 20
	p := startPool(t, cfg)
	// The worker knows the parent's limit: its Send refuses.
	st := open(t, p.Slot(0), "big:"+strconv.Itoa(2<<20))
	defer st.Close()
	if m := recvString(t, st); m != "error: "+ErrTooLarge.Error() {
		t.Fatalf("got %q", m)
	}
	// A worker that announces more anyway is killed.
	liar := open(t, p.Slot(0), "liar")
	defer liar.Close()
	if ee := recvExit(t, liar); ee.Reason != ExitProtocol {
		t.Fatalf("reason %q, want %q", ee.Reason, ExitProtocol)
	}
}

// A stream whose receiver does not read holds back neither the other
// streams nor unbounded memory, in either direction.
func TestNoHeadOfLineBlocking(t *testing.T) {
	p := startPool(t, testConfig(""))
	s := p.Slot(0)

	flood := open(t, s, "flood")
	defer flood.Close()
	sink := open(t, s, "sleep:sink")
	defer sink.Close()
	var sent atomic.Int64
	sendDone := make(chan error, 1)
	go func() {
		m := make([]byte, 1<<20)
		for range 64 {
			if err := sink.Send(m); err != nil {
				sendDone <- err
				return
			}
			sent.Add(1)
		}
		sendDone <- nil
	}()

	// Wait until both the flood has filled its window here and the sender
	// to the sink ran out of credit.
	for {
		flood.mu.Lock()
		q := flood.qbytes
		flood.mu.Unlock()
		sink.mu.Lock()
		credit := sink.credit
		sink.mu.Unlock()
		if q >= window/2 && credit == 0 {
			break
		}
		time.Sleep(time.Millisecond)
	}
	echo := open(t, s, "echo")
	defer echo.Close()
	for i := range 10 {
		m := []byte("ping " + strconv.Itoa(i))
		if err := echo.Send(m); err != nil {
			t.Fatal(err)
		}
		if got := recvString(t, echo); got != string(m) {
			t.Fatalf("got %q", got)
		}
	}
	flood.mu.Lock()
	q := flood.qbytes
	flood.mu.Unlock()
	if q > window+maxFrame {
		t.Fatalf("%d bytes buffered for a stream nobody reads (window %d)", q, window)
	}
	select {
	case err := <-sendDone:
		t.Fatalf("64 MiB sent to a handler that does not read (%v)", err)
	default:
	}
	if n := sent.Load(); n > window/(1<<20)+2 {
		t.Fatalf("%d MiB sent to a handler that does not read", n)
	}
	// Reading again drains the flood.
	for range 1000 {
		if _, err := flood.Recv(); err != nil {
			t.Fatal(err)
		}
	}
	// Close unblocks the blocked sender.
	sink.Close()
	if err := <-sendDone; !errors.Is(err, ErrStreamClosed) {
		t.Fatalf("blocked Send after Close: %v", err)
	}
}

// Empty messages cost credit too: a flood of them is bounded like any other.
func TestEmptyMessagesAreBounded(t *testing.T) {
	p := startPool(t, testConfig(""))
	flood := open(t, p.Slot(0), "flood:0")
	defer flood.Close()
	queued := func() int {
		flood.mu.Lock()
		defer flood.mu.Unlock()
		return len(flood.queue)
	}
	for queued() < window/msgCost/2 {
		time.Sleep(time.Millisecond)
	}
	echo := open(t, p.Slot(0), "echo")
	defer echo.Close()
	for range 10 {
		echo.Send([]byte("x"))
		recvString(t, echo)
	}
	if n := queued(); n > window/msgCost+1 {
		t.Fatalf("%d empty messages queued (window %d, %d each)", n, window, msgCost)
	}
	if m, err := flood.Recv(); err != nil || len(m) != 0 {
		t.Fatalf("got %q, %v", m, err)
	}
}

func TestCloseCancelsHandler(t *testing.T) {
	p := startPool(t, testConfig(""))
	s := p.Slot(0)
	sl := open(t, s, "sleep:k1")
	sl.Close()
	w := open(t, s, "canceled:k1")
	defer w.Close()
	if got := recvString(t, w); got != "yes" {
		t.Fatalf("got %q", got)
	}
}

func TestDeadline(t *testing.T) {
	cfg := testConfig("")
	cfg.Grace = 10 * time.Millisecond
	exits := make(chan *ExitError, 4)
	cfg.OnExit = func(e *ExitError) { exits <- e }
	p := startPool(t, cfg)
	s := p.Slot(0)
	pid := s.Pid()
	st := open(t, s, "hang")
	defer st.Close()
	st.SetDeadline(time.Now())
	ee := recvExit(t, st)
	if ee.Reason != ExitDeadline || ee.Status != "signal: killed" || ee.Generation != 1 || ee.Pid != pid || ee.Slot != 0 {
		t.Fatalf("got %+v", ee)
	}
	if e := <-exits; *e != *ee {
		t.Fatalf("OnExit got %+v, want %+v", e, ee)
	}
	echo, gen, err := s.Open(context.Background(), []byte("echo"))
	if err != nil {
		t.Fatal(err)
	}
	defer echo.Close()
	if gen != 2 || s.Generation() != 2 || s.Pid() == pid {
		t.Fatalf("after the kill: generation %d/%d pid %d (was %d)", gen, s.Generation(), s.Pid(), pid)
	}
	echo.Send([]byte("x"))
	if got := recvString(t, echo); got != "x" {
		t.Fatalf("got %q", got)
	}
	// A deadline cleared, or set on a stream that is over, kills nothing.
	echo.SetDeadline(time.Now())
	echo.SetDeadline(time.Time{})
	done := open(t, s, "ask")
	recvString(t, done)
	done.Send([]byte("1"))
	recvString(t, done)
	if _, err := done.Recv(); err != io.EOF {
		t.Fatal(err)
	}
	done.SetDeadline(time.Now())
	// Not a timing assertion: a wrong kill would show as a new generation.
	time.Sleep(100 * time.Millisecond)
	echo.Send([]byte("y"))
	if got := recvString(t, echo); got != "y" {
		t.Fatalf("got %q", got)
	}
	if s.Generation() != 2 {
		t.Fatalf("generation %d after deadlines that should not fire", s.Generation())
	}
}

func TestKill(t *testing.T) {
	cfg := testConfig("")
	cfg.Count = 2
	p := startPool(t, cfg)
	var doomed []*Stream
	for i := range 3 {
		doomed = append(doomed, open(t, p.Slot(0), "sleep:"+strconv.Itoa(i)))
	}
	other := open(t, p.Slot(1), "echo")
	defer other.Close()
	p.Slot(0).Kill()
	for _, st := range doomed {
		ee := recvExit(t, st)
		if ee.Reason != ExitCrashed || ee.Status != "signal: killed" || ee.Slot != 0 {
			t.Fatalf("got %+v", ee)
		}
		if err := st.Send([]byte("x")); exitErr(t, err) != ee {
			t.Fatalf("send on a dead stream: %v", err)
		}
		st.Close()
	}
	other.Send([]byte("still here"))
	if got := recvString(t, other); got != "still here" {
		t.Fatalf("got %q", got)
	}
	if g := p.Slot(1).Generation(); g != 1 {
		t.Fatalf("other slot generation %d", g)
	}
}

func TestMemoryMax(t *testing.T) {
	if !rssSupported {
		t.Skip("no RSS guard here")
	}
	cfg := testConfig("")
	cfg.MemoryMax = 256 << 20
	p := startPool(t, cfg)
	if g := p.MemoryGuard(); g != "rss" {
		t.Fatalf("MemoryGuard %q", g)
	}
	st := open(t, p.Slot(0), "alloc:1024")
	defer st.Close()
	if ee := recvExit(t, st); ee.Reason != ExitMemory || ee.Status != "signal: killed" {
		t.Fatalf("got %+v", ee)
	}
}

func TestExitCrashed(t *testing.T) {
	cfg := testConfig("")
	exits := make(chan *ExitError, 4)
	cfg.OnExit = func(e *ExitError) { exits <- e }
	p := startPool(t, cfg)
	st := open(t, p.Slot(0), "exit")
	defer st.Close()
	ee := recvExit(t, st)
	if ee.Reason != ExitCrashed || ee.Status != "exit status 3" {
		t.Fatalf("got %+v", ee)
	}
	if e := <-exits; e != ee {
		t.Fatalf("OnExit got %+v", e)
	}
}

func TestProtocolViolation(t *testing.T) {
	p := startPool(t, testConfig(""))
	st := open(t, p.Slot(0), "garbage")
	defer st.Close()
	if ee := recvExit(t, st); ee.Reason != ExitProtocol || ee.Status != "signal: killed" {
		t.Fatalf("got %+v", ee)
	}
	// The replacement works.
	echo := open(t, p.Slot(0), "echo")
	defer echo.Close()
	echo.Send([]byte("x"))
	if got := recvString(t, echo); got != "x" {
		t.Fatalf("got %q", got)
	}
}

func TestStartErrors(t *testing.T) {
	for _, tc := range []struct {
		name, mode, path, want string
	}{
		{"bad executable", "", "/nonexistent/subako-worker", "no such file"},
		{"garbage before hello", "garbage", "", "protocol"},
		{"exit before hello", "exit-before-hello", "", "boom before hello"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := testConfig(tc.mode)
			cfg.Count = 2
			if tc.path != "" {
				cfg.Path = tc.path
			}
			p, err := Start(context.Background(), cfg)
			if err == nil {
				p.Close(context.Background())
				t.Fatal("Start succeeded")
			}
			var se *StartError
			if !errors.As(err, &se) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want a *StartError with %q", err, tc.want)
			}
		})
	}
}

// Processes that keep dying right after their hello: Open ends up
// returning the failure instead of waiting for ever.
func TestCrashLoop(t *testing.T) {
	cfg := testConfig("exit-after-hello")
	cfg.Env = append(cfg.Env, "SUBAKO_WORKER_TEST_FIRST="+t.TempDir()+"/first")
	p := startPool(t, cfg)
	p.Slot(0).Kill()
	for {
		st, _, err := p.Slot(0).Open(context.Background(), []byte("echo"))
		if err == nil {
			st.Close()
			continue
		}
		var se *StartError
		if errors.As(err, &se) {
			var ee *ExitError
			if !errors.As(err, &ee) || ee.Status != "exit status 5" {
				t.Fatalf("start error %v does not carry the last exit", err)
			}
			return
		}
		exitErr(t, err)
	}
}

func TestPoolClose(t *testing.T) {
	cfg := testConfig("")
	cfg.Count = 2
	var exits atomic.Int32
	cfg.OnExit = func(*ExitError) { exits.Add(1) }
	p, err := Start(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	a := open(t, p.Slot(0), "sleep:a")
	b := open(t, p.Slot(1), "hang")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := p.Close(ctx); err != nil {
		t.Fatal(err)
	}
	for _, st := range []*Stream{a, b} {
		_, err := st.Recv()
		if ee := exitErr(t, err); ee.Reason != ExitClosed || !errors.Is(err, ErrClosed) {
			t.Fatalf("got %+v", ee)
		}
	}
	if _, _, err := p.Slot(0).Open(context.Background(), []byte("echo")); !errors.Is(err, ErrClosed) {
		t.Fatalf("Open after Close: %v", err)
	}
	if n := exits.Load(); n != 0 {
		t.Fatalf("OnExit called %d times for the pool's own ends", n)
	}
	if err := p.Close(ctx); err != nil {
		t.Fatal(err)
	}
}

// Close kills what does not exit by the end of its ctx.
func TestPoolCloseKills(t *testing.T) {
	p, err := Start(context.Background(), testConfig("linger"))
	if err != nil {
		t.Fatal(err)
	}
	st := open(t, p.Slot(0), "sleep:x")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := p.Close(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("Close: %v", err)
	}
	_, err = st.Recv()
	if ee := exitErr(t, err); ee.Reason != ExitClosed || ee.Status != "signal: killed" {
		t.Fatalf("got %+v", ee)
	}
}

func TestKillProtocol(t *testing.T) {
	p := startPool(t, testConfig(""))
	st := open(t, p.Slot(0), "sleep:p")
	defer st.Close()
	p.Slot(0).KillProtocol()
	if ee := recvExit(t, st); ee.Reason != ExitProtocol {
		t.Fatalf("got %+v", ee)
	}
}

func TestStderrToLog(t *testing.T) {
	core, logs := observer.New(zap.WarnLevel)
	cfg := testConfig("")
	cfg.Log = zap.New(core)
	p := startPool(t, cfg)
	st := open(t, p.Slot(0), "stderr")
	defer st.Close()
	recvString(t, st)
	for {
		for _, e := range logs.All() {
			if e.Message == "worker stderr" && e.ContextMap()["line"] == "a line from the worker" {
				return
			}
		}
		time.Sleep(time.Millisecond)
	}
}
