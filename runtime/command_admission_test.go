package runtime

import (
	"context"
	"errors"
	"io"
	"strings"
	"sync"
	"testing"
	"time"
)

// overlapProbe watches commands from the host side: a command counts as
// running from its first stdout write (the guest answered, so it runs) to
// the moment its stdin reports end of file (it has not exited yet), a
// stretch strictly inside its instance's life.
type overlapProbe struct {
	rt    *Runtime
	total int
	ctx   context.Context

	mu       sync.Mutex
	running  int
	most     int
	finished int
}

// command returns one command's stdin and stdout. The stdin gives line,
// then end of file once the command has written (RunCommand copies stdin
// on a goroutine of its own, which asks for more at once: an end of file
// before the answer would close the stretch before it opened, and a probe
// that let it saw no command running at all) and release allows.
func (o *overlapProbe) command(line string) (stdin io.Reader, stdout io.Writer) {
	wrote := false // under o.mu
	stdout = writerFunc(func(p []byte) (int, error) {
		o.mu.Lock()
		defer o.mu.Unlock()
		if !wrote {
			wrote = true
			o.running++
			o.most = max(o.most, o.running)
		}
		return len(p), nil
	})
	sent := false
	stdin = readerFunc(func(p []byte) (int, error) {
		if !sent {
			sent = true
			return copy(p, line), nil
		}
		for !o.release(&wrote) {
			if o.ctx.Err() != nil {
				return 0, o.ctx.Err()
			}
			time.Sleep(time.Millisecond)
		}
		return 0, io.EOF
	})
	return stdin, stdout
}

// release reports whether a running command may end, and counts it ended
// if so: once it has written, when another runs beside it (the overlap the
// test looks for), or when every command not finished yet besides it
// waits in admission (so none could run beside it). Neither condition is a
// time.
func (o *overlapProbe) release(wrote *bool) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	if !*wrote || (o.running < 2 && o.rt.eng.Waiting() != int64(o.total-o.finished-1)) {
		return false
	}
	o.running--
	o.finished++
	return true
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

type readerFunc func([]byte) (int, error)

func (f readerFunc) Read(p []byte) (int, error) { return f(p) }

// TestRunCommandTakesItsTurn: commands pass admission as calls do. Six
// commands on a runtime with MaxInstances 1 run one after another, never
// two at once (RunCommand bypassed admission: six 1 s commands finished
// together). Without admission the first two overlap at once; with it,
// each command ends only after all the others queued behind it.
func TestRunCommandTakesItsTurn(t *testing.T) {
	t.Parallel()
	rt, err := New(context.Background(), Config{MaxInstances: 1, CompilationCacheDir: compiledCache, TempDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Close(context.Background()) })
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute) // a whole-test bound, not a margin
	defer cancel()
	const n = 6
	probe := &overlapProbe{rt: rt, total: n, ctx: ctx}
	line := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"greet","arguments":{"name":"Ada"}}}` + "\n"
	var wg sync.WaitGroup
	var queued sync.Map
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			stdin, stdout := probe.command(line)
			res, err := rt.RunCommand(ctx, "../testdata/packages/cgreet/module.wasm", Command{Stdin: stdin, Stdout: stdout})
			if err != nil || res.Crash != nil || res.ExitCode != 0 {
				t.Errorf("command %d: %+v, %v", i, res, err)
				return
			}
			queued.Store(i, res.Stats.Queued)
		}()
	}
	wg.Wait()
	if ctx.Err() != nil {
		t.Fatal("the commands did not end within the test's bound")
	}
	if probe.most != 1 {
		t.Fatalf("%d commands ran at once with MaxInstances 1", probe.most)
	}
	waited := 0
	queued.Range(func(_, v any) bool {
		if v.(int) > 0 {
			waited++
		}
		return true
	})
	if waited < n-1 {
		t.Errorf("%d commands report a queue wait, want at least %d", waited, n-1)
	}
}

// A command waiting for its turn ends with its context, naming the command
// and carrying the context's cause.
func TestRunCommandQueuedEndsWithItsContext(t *testing.T) {
	t.Parallel()
	rt, err := New(context.Background(), Config{MaxInstances: 1, CompilationCacheDir: compiledCache, TempDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Close(context.Background()) })
	held, _, err := rt.eng.Admit(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer held.Done()
	cause := errors.New("the operator gave up")
	ctx, cancel := context.WithCancelCause(context.Background())
	errc := make(chan error, 1)
	path := writeModule(t, emptyCommand)
	go func() {
		_, err := rt.RunCommand(ctx, path, Command{})
		errc <- err
	}()
	waitQueued(t, rt, 1)
	cancel(cause)
	err = <-errc
	if !errors.Is(err, context.Canceled) || !errors.Is(err, cause) || !strings.Contains(err.Error(), path) {
		t.Fatalf("queued command cancelled: %v; want context.Canceled, its cause and the module's path", err)
	}
}
