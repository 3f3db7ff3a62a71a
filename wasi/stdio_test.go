package wasi_test

import (
	"bufio"
	"context"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/subako/subako-runner/internal/abi"
	"github.com/subako/subako-runner/internal/devtools/testguest"
	"github.com/subako/subako-runner/wasi"
	"github.com/tetratelabs/wazero/sys"
)

// lineWriter hands every complete stdout line to a channel.
type lineWriter struct {
	pw *io.PipeWriter
}

func (w lineWriter) Write(p []byte) (int, error) { return w.pw.Write(p) }

// TestGoGuestAnswersWhileStdinOpen is the MCP Go SDK pattern: one goroutine
// reads stdin, others answer, and the host waits for each answer before
// writing the next line or closing stdin. Without non-blocking stdin and
// poll_oneoff, the reader would block the whole Go runtime and no answer
// would ever come.
func TestGoGuestAnswersWhileStdinOpen(t *testing.T) {
	wasm := testguest.Go(t, "../testdata/wasi/go/echo")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	stdin := wasi.NewStdin()
	pr, pw := io.Pipe()
	stderr := &syncBuffer{}
	type result struct {
		code uint32
		err  error
	}
	done := make(chan result, 1)
	go func() {
		code, err := run(t, ctx, wasm, wasi.Config{Stdin: stdin, Stdout: lineWriter{pw}, Stderr: stderr})
		pw.Close()
		done <- result{code, err}
	}()
	lines := bufio.NewScanner(pr)
	for _, req := range []string{"one", "two", "three"} {
		stdin.Write([]byte(req + "\n"))
		if !lines.Scan() {
			t.Fatalf("no answer to %q (stdin still open)", req)
		}
		if got, want := lines.Text(), "echo: "+req; got != want {
			t.Fatalf("got %q, want %q", got, want)
		}
	}
	stdin.CloseWrite()
	for lines.Scan() {
		t.Errorf("unexpected line %q", lines.Text())
	}
	res := <-done
	if res.err != nil || res.code != 0 {
		t.Fatalf("exit %d, err %v", res.code, res.err)
	}
	if got := stderr.String(); got != "bye\n" {
		t.Fatalf("stderr %q", got)
	}
}

func TestBlockedGuestEndsAtDeadline(t *testing.T) {
	wasm := testguest.Go(t, "../testdata/wasi/go/echo")
	tests := []struct {
		name string
		ctx  func() (context.Context, context.CancelFunc)
		want uint32
	}{
		{"deadline", func() (context.Context, context.CancelFunc) {
			return context.WithTimeout(context.Background(), 2*time.Second)
		}, sys.ExitCodeDeadlineExceeded},
		{"cancel", func() (context.Context, context.CancelFunc) {
			ctx, cancel := context.WithCancel(context.Background())
			time.AfterFunc(2*time.Second, cancel)
			return ctx, cancel
		}, sys.ExitCodeContextCanceled},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// Parallel: each waits 2 s for its deadline or cancellation.
			t.Parallel()
			ctx, cancel := tt.ctx()
			defer cancel()
			code, err := run(t, ctx, wasm, wasi.Config{Stdin: wasi.NewStdin()})
			if err != nil || code != tt.want {
				t.Fatalf("exit %#x, err %v; want %#x", code, err, tt.want)
			}
		})
	}
}

func TestStdoutErrorAbortsInstance(t *testing.T) {
	wasm := testguest.Go(t, "../testdata/wasi/go/basics")
	code, err := run(t, context.Background(), wasm, wasi.Config{Stdout: failWriter{}})
	if err != nil || code != wasi.ExitCodeAborted {
		t.Fatalf("exit %#x, err %v; want exitCodeAborted", code, err)
	}
}

type failWriter struct{}

func (failWriter) Write([]byte) (int, error) { return 0, errors.New("output limit") }

func TestBasics(t *testing.T) {
	wasm := testguest.Go(t, "../testdata/wasi/go/basics")
	tests := []struct {
		name string
		cfg  wasi.Config
		code uint32
		want []string
	}{
		{"defaults", wasi.Config{}, 0, []string{`args=["module.wasm"]`, `env=[]`}},
		{"configured", wasi.Config{Args: []string{"prog", "a b", "exit=3"}, Env: []string{"A=1", "B=x y"}}, 3,
			[]string{`args=["prog" "a b" "exit=3"]`, `env=["A=1" "B=x y"]`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out := &syncBuffer{}
			tt.cfg.Stdout = out
			code, err := run(t, context.Background(), wasm, tt.cfg)
			if err != nil || code != tt.code {
				t.Fatalf("exit %d, err %v\n%s", code, err, out)
			}
			want := append(tt.want, "slept_ms_at_least_20=true", "year_ok=true", "rand_nonzero_ok=true", "stdout_mode=true")
			for _, w := range want {
				if !strings.Contains(out.String(), w+"\n") {
					t.Errorf("missing %q in\n%s", w, out)
				}
			}
		})
	}
}

func TestMissingInstanceIsAnError(t *testing.T) {
	wasm := testguest.Go(t, "../testdata/wasi/go/basics")
	ctx := context.Background()
	_, err := runWithoutInstance(t, ctx, wasm)
	if !errors.Is(err, abi.ErrNoState) || !strings.Contains(err.Error(), "wasi.WithInstance") {
		t.Fatalf("got %v, want abi.ErrNoState naming wasi.WithInstance", err)
	}
}
