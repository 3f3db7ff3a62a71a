package regfile

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// TestRefusesWhatIsNotARegularFile: a FIFO (without a writer: a plain open
// waits forever), a directory and /dev/zero (read forever) are refused at
// once, by type; a regular file is read up to its bound and no further.
func TestRefusesWhatIsNotARegularFile(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	for _, p := range []string{fifo, dir, "/dev/zero"} {
		_, err := ReadFile(p, 1<<20)
		var nr *NotRegularError
		if !errors.As(err, &nr) || nr.Path != p {
			t.Errorf("ReadFile(%s): %v, want a NotRegularError", p, err)
		}
	}
	file := filepath.Join(dir, "f")
	if err := os.WriteFile(file, []byte("0123456789"), 0o600); err != nil {
		t.Fatal(err)
	}
	if b, err := ReadFile(file, 10); err != nil || string(b) != "0123456789" {
		t.Errorf("ReadFile at its bound: %q %v", b, err)
	}
	var tl *TooLargeError
	if _, err := ReadFile(file, 9); !errors.As(err, &tl) || tl.Size != 10 || tl.Limit != 9 {
		t.Errorf("ReadFile over its bound: %v", err)
	}
	if _, err := ReadFile(filepath.Join(dir, "missing"), 9); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a missing file: %v", err)
	}
}
