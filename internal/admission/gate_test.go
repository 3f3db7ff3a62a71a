package admission

import (
	"context"
	"errors"
	"runtime"
	"testing"
)

var errClosed = errors.New("closed")

// The gate, both sides of its bound and of its close: the place beyond
// the bound waits until one is given back; Close sends a waiting call away
// with the closed error, ends the contexts of those admitted with it as
// their cause, and reports idle once they are done; nothing is admitted
// after it.
func TestGate(t *testing.T) {
	g := New(1, errClosed)
	first, fctx, err := g.Admit(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if first.Queued != 0 || first.Wait != 0 {
		t.Fatalf("the first place waited: %d queued, %v", first.Queued, first.Wait)
	}
	second := make(chan error, 1)
	go func() {
		p, _, err := g.Admit(context.Background())
		if err == nil {
			p.Done()
			p.End()
		}
		second <- err
	}()
	for g.Waiting() != 1 {
		select {
		case err := <-second:
			t.Fatalf("the place beyond the bound was not made to wait: %v", err)
		default:
			runtime.Gosched()
		}
	}
	first.Done() // the waiting call takes the place
	if err := <-second; err != nil {
		t.Fatal(err)
	}
	first.End()
	if fctx.Err() == nil {
		t.Fatal("End did not end the admitted context")
	}

	held, hctx, err := g.Admit(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	waiting := make(chan error, 1)
	go func() {
		_, _, err := g.Admit(context.Background())
		waiting <- err
	}()
	for g.Waiting() != 1 {
		runtime.Gosched()
	}
	idle := g.Close()
	if err := <-waiting; !errors.Is(err, errClosed) {
		t.Fatalf("a waiting call left with %v, want the closed error", err)
	}
	if !errors.Is(context.Cause(hctx), errClosed) {
		t.Fatalf("the admitted context ended with %v, want the closed error", context.Cause(hctx))
	}
	select {
	case <-idle:
		t.Fatal("idle before the admitted instance was done")
	default:
	}
	held.Done()
	held.End()
	<-idle
	if !g.IsClosed() {
		t.Fatal("IsClosed is false after Close")
	}
	if _, _, err := g.Admit(context.Background()); !errors.Is(err, errClosed) {
		t.Fatalf("Admit after Close: %v", err)
	}
	// A caller whose context ended is refused with its own error.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, _, err := New(1, errClosed).Admit(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("Admit with an ended context: %v", err)
	}
}
