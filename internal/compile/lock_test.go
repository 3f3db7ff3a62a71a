package compile

import (
	"testing"
	"time"
)

// Compilations of the same bytes take turns; of other bytes, they do not
// wait; and the table forgets a module once nobody holds or waits for it.
func TestCompileLocks(t *testing.T) {
	var l compileLocks
	unlockA := l.lock([]byte("a"))
	unlockB := l.lock([]byte("b")) // other bytes: no wait
	second := make(chan func())
	go func() { second <- l.lock([]byte("a")) }()
	select {
	case <-second:
		t.Fatal("a second compilation of the same bytes did not wait for the first")
	case <-time.After(50 * time.Millisecond): // a negative check: it must still be waiting
	}
	unlockA()
	unlockA2 := <-second
	unlockA2()
	unlockB()
	if n := len(l.m); n != 0 {
		t.Fatalf("%d entries left in the table, want 0", n)
	}
}
