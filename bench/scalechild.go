package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	goruntime "runtime"
	"runtime/debug"
	"strconv"
	"sync"

	"github.com/subako/subako-runner/runtime"
)

// The machine control of benchScale runs this program again as children
// (-child-scale): each loads the greet package at GOMAXPROCS 1, says
// "ready", then runs one round of calls for every line it reads and answers
// each with its measured, as JSON on a line of its own. A child lives for all the rounds, so a round
// measures calls, not process start and compilation.

// childScale is the child side.
type childScale struct {
	pkg, cache string
	gc         int
}

func (c *childScale) run(ctx context.Context, o options, in io.Reader, w io.Writer) error {
	goruntime.GOMAXPROCS(1)
	debug.SetGCPercent(c.gc)
	pkg, closeAll, err := loadIn(ctx, runtime.Config{CompilationCacheDir: c.cache}, c.pkg)
	if err != nil {
		return err
	}
	defer closeAll()
	once := greetOnce(ctx, pkg, []byte(`{"name":"Ada"}`))
	for range 10 {
		if err := once(); err != nil {
			return err
		}
	}
	fmt.Fprintln(w, "ready")
	enc := json.NewEncoder(w)
	lines := bufio.NewScanner(in)
	for lines.Scan() {
		m, err := callRate(ctx, once, o.scaleCallers, o.scaleRound)
		if err != nil {
			return err
		}
		if err := enc.Encode(m); err != nil {
			return err
		}
	}
	return lines.Err()
}

// scaleChild is the parent's handle on one child.
type scaleChild struct {
	cmd    *exec.Cmd
	in     io.WriteCloser
	out    *bufio.Scanner
	stderr *tailBuffer
}

// startScaleChildren starts n children on the package at dir and waits
// until every one is ready. They share a compilation cache in the work
// directory.
func startScaleChildren(ctx context.Context, o options, dir string, gc, n int) ([]*scaleChild, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	cache := filepath.Join(o.work, "scale-cache")
	var kids []*scaleChild
	for range n {
		cmd := exec.CommandContext(ctx, exe, "-child-scale", dir, "-child-cache", cache,
			"-child-gc", strconv.Itoa(gc),
			"-scale-callers", strconv.Itoa(o.scaleCallers), "-scale-round", o.scaleRound.String())
		k := &scaleChild{cmd: cmd, stderr: &tailBuffer{}}
		cmd.Stderr = k.stderr
		if k.in, err = cmd.StdinPipe(); err != nil {
			stopScaleChildren(kids)
			return nil, err
		}
		out, err := cmd.StdoutPipe()
		if err != nil {
			stopScaleChildren(kids)
			return nil, err
		}
		k.out = bufio.NewScanner(out)
		if err := cmd.Start(); err != nil {
			stopScaleChildren(kids)
			return nil, err
		}
		kids = append(kids, k)
	}
	for _, k := range kids {
		if line, err := k.line(); err != nil || line != "ready" {
			stopScaleChildren(kids)
			return nil, fmt.Errorf("child did not get ready (%q, %v): %s", line, err, k.stderr)
		}
	}
	return kids, nil
}

// line reads the child's next line.
func (k *scaleChild) line() (string, error) {
	if !k.out.Scan() {
		if err := k.out.Err(); err != nil {
			return "", err
		}
		return "", io.ErrUnexpectedEOF
	}
	return k.out.Text(), nil
}

// scaleRound runs one round in every child of kids at once: their calls
// and CPU time add up over the longest child's wall time; steal is the
// machine's, so it is the first child's.
func scaleRound(kids []*scaleChild) (measured, error) {
	for _, k := range kids {
		if _, err := io.WriteString(k.in, "go\n"); err != nil {
			return measured{}, err
		}
	}
	var sum measured
	for i, k := range kids {
		line, err := k.line()
		if err != nil {
			return measured{}, fmt.Errorf("child: %w: %s", err, k.stderr)
		}
		var rep measured
		if err := json.Unmarshal([]byte(line), &rep); err != nil {
			return measured{}, fmt.Errorf("child report %q: %w", line, err)
		}
		sum.Calls += rep.Calls
		sum.CPU += rep.CPU
		sum.Wall = max(sum.Wall, rep.Wall)
		if i == 0 {
			sum.Steal = rep.Steal
		}
	}
	return sum, nil
}

// stopScaleChildren closes the children's stdin, which ends them, and
// waits for them.
func stopScaleChildren(kids []*scaleChild) {
	for _, k := range kids {
		k.in.Close()
	}
	for _, k := range kids {
		if err := k.cmd.Wait(); err != nil {
			logf("   scale child: %v: %s", err, k.stderr)
		}
	}
}

// tailBuffer keeps the last 4 KiB written to it: a child's stderr, for the
// error that says why it failed.
type tailBuffer struct {
	mu sync.Mutex // exec copies into it on a goroutine of its own
	b  []byte
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if len(t.b) > 4096 {
		t.b = append(t.b[:0], t.b[len(t.b)-4096:]...)
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.b)
}
