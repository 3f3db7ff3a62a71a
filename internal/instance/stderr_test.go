package instance

import (
	"fmt"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"
)

func TestStderrTailKeepsTheLastBytes(t *testing.T) {
	tail := newStderrTail(16, nil)
	for i := 0; i < 100; i++ {
		tail.Write([]byte("0123456789"))
	}
	tail.Write([]byte("END"))
	got := tail.String()
	if len(got) != 16 || !strings.HasSuffix(got, "END") {
		t.Fatalf("tail = %q, want the last 16 bytes ending in END", got)
	}
	big := newStderrTail(16, nil)
	big.Write([]byte(strings.Repeat("a", 100) + "0123456789abcdef"))
	if got := big.String(); got != "0123456789abcdef" {
		t.Fatalf("one large write: tail = %q", got)
	}
}

func TestStderrTailCutsOnAUTF8Boundary(t *testing.T) {
	// "é" is two bytes; the last 3 bytes of "xxxxéé" begin in the middle
	// of the first é, and the cut must drop the orphaned continuation byte.
	tail := newStderrTail(3, nil)
	tail.Write([]byte("xxxxéé"))
	got := tail.String()
	if !utf8.ValidString(got) || got != "é" {
		t.Fatalf("tail = %q, want %q", got, "é")
	}
}

func TestStderrLinesAreLoggedRateLimited(t *testing.T) {
	core, logs := observer.New(zap.DebugLevel)
	tail := newStderrTail(4096, zap.New(core))
	for i := 0; i < 500; i++ {
		tail.Write([]byte(fmt.Sprintf("line %d\n", i)))
	}
	tail.Write([]byte(strings.Repeat("y", 5000) + "\n"))
	got := logs.FilterMessage("module stderr").All()
	if len(got) != stderrLinesPerSecond {
		t.Fatalf("%d lines logged in one burst, want the limit %d", len(got), stderrLinesPerSecond)
	}
	if got[0].ContextMap()["line"] != "line 0" {
		t.Errorf("first logged line %v", got[0].ContextMap())
	}
	quiet := newStderrTail(64, zap.New(zapcore.NewNopCore()))
	quiet.Write([]byte("not logged\n"))
	if quiet.String() != "not logged\n" {
		t.Error("the tail is kept even when logging is off")
	}
}

// blockingCore is a zap core whose writes wait until release is closed.
type blockingCore struct {
	zapcore.LevelEnabler
	entered chan struct{}
	release chan struct{}
}

func (c blockingCore) With([]zapcore.Field) zapcore.Core { return c }
func (c blockingCore) Check(e zapcore.Entry, ce *zapcore.CheckedEntry) *zapcore.CheckedEntry {
	return ce.AddCore(e, c)
}
func (c blockingCore) Write(zapcore.Entry, []zapcore.Field) error {
	select {
	case c.entered <- struct{}{}:
	default:
	}
	<-c.release
	return nil
}
func (c blockingCore) Sync() error { return nil }

// A logger that blocks (a full pipe, a slow sink) holds up the guest's
// stderr writes, never the crash report: String returns while a write is
// stuck in the logger.
func TestStderrTailIsReadableWhileTheLoggerBlocks(t *testing.T) {
	core := blockingCore{zapcore.DebugLevel, make(chan struct{}, 1), make(chan struct{})}
	tail := newStderrTail(64, zap.New(core))
	wrote := make(chan struct{})
	go func() {
		defer close(wrote)
		tail.Write([]byte("panic: the guest is going down\n"))
	}()
	<-core.entered // the write is inside the logger now
	read := make(chan string, 1)
	go func() { read <- tail.String() }()
	select {
	case got := <-read:
		if got != "panic: the guest is going down\n" {
			t.Errorf("tail %q while the logger blocks", got)
		}
	case <-time.After(30 * time.Second): // a hang detector, not a timing: String waits for nothing
		t.Error("String waited for the blocked logger")
	}
	close(core.release)
	<-wrote
}
