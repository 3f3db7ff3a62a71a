package main

import (
	"bytes"
	"context"
	"io"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"unsafe"
)

// openPTY opens a pseudo-terminal pair (Linux: /dev/ptmx).
func openPTY(t *testing.T) (master, slave *os.File) {
	t.Helper()
	m, err := os.OpenFile("/dev/ptmx", os.O_RDWR, 0)
	if err != nil {
		t.Skipf("no pseudo-terminals here: %v", err)
	}
	var unlock int32
	if _, _, e := syscall.Syscall(syscall.SYS_IOCTL, m.Fd(), syscall.TIOCSPTLCK, uintptr(unsafe.Pointer(&unlock))); e != 0 {
		m.Close()
		t.Skipf("unlockpt: %v", e)
	}
	var n uint32
	if _, _, e := syscall.Syscall(syscall.SYS_IOCTL, m.Fd(), syscall.TIOCGPTN, uintptr(unsafe.Pointer(&n))); e != 0 {
		m.Close()
		t.Skipf("ptsname: %v", e)
	}
	s, err := os.OpenFile("/dev/pts/"+strconv.Itoa(int(n)), os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		m.Close()
		t.Skipf("opening the pty: %v", err)
	}
	t.Cleanup(func() { s.Close(); m.Close() })
	return m, s
}

// The real terminal check (golang.org/x/term on the stderr file): a pty
// gets the status line, and stdout (a pipe here) never does.
func TestProgressOnARealTerminal(t *testing.T) {
	pkg := pkgDir(t, "greet", nil)
	master, slave := openPTY(t)
	got := make(chan string, 1)
	go func() {
		var b bytes.Buffer
		io.Copy(&b, master) // until the slave side is closed
		got <- b.String()
	}()
	var stdout bytes.Buffer
	e := &env{stdin: strings.NewReader(""), stdout: &stdout, stderr: slave, getenv: func(string) string { return "" }}
	code := mainWith(context.Background(), e, []string{"discover", pkg})
	slave.Close()
	seen := <-got
	if code != exitOK || !strings.Contains(stdout.String(), "tool(s)") {
		t.Fatalf("exit %d, %q", code, stdout.String())
	}
	if !strings.Contains(seen, "compiling ") || !strings.Contains(seen, "discovering the tools of ") || !strings.HasSuffix(seen, "\r\x1b[K") {
		t.Errorf("the terminal saw %q", seen)
	}
	if strings.Contains(stdout.String(), "\x1b") {
		t.Errorf("stdout got terminal codes: %q", stdout.String())
	}
}
