package main

import (
	"fmt"
	"io"
	goruntime "runtime"
	"sync"
	"sync/atomic"
	"testing"
)

// overlapDetector is a stderr that counts Writes that began while another
// was still going on: two goroutines writing to a bytes.Buffer (a test's
// stderr) at once is a data race, and to a terminal interleaves lines.
type overlapDetector struct {
	writing  atomic.Int32
	overlaps atomic.Int32
	writes   atomic.Int32
}

func (d *overlapDetector) Write(p []byte) (int, error) {
	if d.writing.Add(1) > 1 {
		d.overlaps.Add(1)
	}
	d.writes.Add(1)
	goruntime.Gosched() // hold the write open for a while
	d.writing.Add(-1)
	return len(p), nil
}

// The command's own lines and the runtime's log (whose entries a worker's
// events goroutine writes) share stderr: every Write of either reaches it
// alone. (Before: the logger locked only its own writes, and mcp's report
// of a rejected package raced with a worker's relayed log line.)
func TestStderrWritesAreSerialized(t *testing.T) {
	det := &overlapDetector{}
	e := (&env{stderr: det}).lockStderr()
	h := &hostFlags{logLevel: "info", logFormat: "console"}
	log, err := h.logger(e.stderr)
	if err != nil {
		t.Fatal(err)
	}
	const writers, lines = 4, 200
	var wg sync.WaitGroup
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range lines {
				if w%2 == 0 {
					log.Info("worker stderr")
				} else {
					fmt.Fprintf(e.stderr, "subako-runner: line %d\n", i)
				}
			}
		}()
	}
	wg.Wait()
	if n := det.writes.Load(); n != writers*lines {
		t.Fatalf("%d writes reached stderr, want %d", n, writers*lines)
	}
	if n := det.overlaps.Load(); n != 0 {
		t.Fatalf("%d writes to stderr began while another was under way", n)
	}
	if again := e.lockStderr(); again.stderr != e.stderr {
		t.Fatal("locking a locked stderr wrapped it twice")
	}
}

// The terminal check looks through the lock at the writer it wraps.
func TestLockedStderrIsStillATerminal(t *testing.T) {
	det := &overlapDetector{}
	e := (&env{stderr: det, isTerminal: func(w io.Writer) bool { return w == io.Writer(det) }}).lockStderr()
	if !e.terminal(e.stderr) {
		t.Fatal("a locked terminal is not a terminal")
	}
}
