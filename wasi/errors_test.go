package wasi

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// TestEscapeErrorText pins the text of os.Root's unexported escape error,
// which errnoOf matches: a Go release that changes it fails here.
func TestEscapeErrorText(t *testing.T) {
	dir := t.TempDir()
	os.Symlink("/", filepath.Join(dir, "abs"))
	os.Mkdir(filepath.Join(dir, "a"), 0o755)
	root, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	for _, p := range []string{"../x", "a/../../x", "abs/etc"} {
		_, err := root.Open(p)
		if got := errnoOf(err); got != errnoNotcapable {
			t.Errorf("Open(%q): %v -> errno %d, want ENOTCAPABLE", p, err, got)
		}
	}
}

func TestErrnoOfHostErrors(t *testing.T) {
	tests := []struct {
		err  error
		want errnum
	}{
		{nil, errnoSuccess},
		{&os.PathError{Op: "open", Path: "x", Err: syscall.ENOENT}, errnoNoent},
		{&os.PathError{Op: "open", Path: "x", Err: syscall.EDQUOT}, errnoDquot},
		{&os.PathError{Op: "open", Path: "x", Err: syscall.EROFS}, errnoRofs},
		{&os.PathError{Op: "open", Path: "x", Err: syscall.EOPNOTSUPP}, errnoNotsup},
		{&os.LinkError{Op: "rename", Old: "a", New: "b", Err: syscall.EXDEV}, errnoXdev},
		{syscall.Errno(0x7fff), errnoIo},
		{os.ErrClosed, errnoBadf},
	}
	for _, tt := range tests {
		if got := errnoOf(tt.err); got != tt.want {
			t.Errorf("errnoOf(%v) = %d, want %d", tt.err, got, tt.want)
		}
	}
}
