// Package regfile opens the files a user or a package names (a manifest,
// a module, an arguments file) the one safe way: without blocking, whatever
// the name turns out to be, and only when it is a regular file. A FIFO put
// where a file is expected (a package archive can carry one) would make a
// plain open wait for a writer, and /dev/zero would be read forever.
package regfile

import (
	"bytes"
	"fmt"
	"io"
	"io/fs"
	"os"
	"syscall"
)

// NotRegularError is the error of a path that names something other than
// a regular file (a directory, a FIFO, a device, a socket).
type NotRegularError struct {
	Path string
	Mode fs.FileMode
}

func (e *NotRegularError) Error() string {
	return fmt.Sprintf("%s is not a regular file (it is %s)", e.Path, e.Kind())
}

// Kind names what the path is instead, e.g. "a FIFO".
func (e *NotRegularError) Kind() string {
	switch m := e.Mode; {
	case m.IsDir():
		return "a directory"
	case m&fs.ModeNamedPipe != 0:
		return "a FIFO"
	case m&fs.ModeCharDevice != 0:
		return "a character device"
	case m&fs.ModeDevice != 0:
		return "a device"
	case m&fs.ModeSocket != 0:
		return "a socket"
	}
	return "mode " + e.Mode.String()
}

// TooLargeError is the error of a file over the bound it is read with.
type TooLargeError struct {
	Path  string
	Size  int64 // at least this many bytes
	Limit int64
}

func (e *TooLargeError) Error() string {
	return fmt.Sprintf("%s is over %d bytes (at least %d)", e.Path, e.Limit, e.Size)
}

// Open opens path for reading, refusing with *NotRegularError anything but
// a regular file. The open never waits: O_NONBLOCK makes opening a FIFO
// return at once (a regular file's reads ignore the flag), and the type is
// checked on the open file (fstat), so it cannot change in between.
func Open(path string) (*os.File, fs.FileInfo, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, nil, err
	}
	info, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	if !info.Mode().IsRegular() {
		f.Close()
		return nil, nil, &NotRegularError{Path: path, Mode: info.Mode()}
	}
	return f, info, nil
}

// ReadFile reads the regular file at path whole, refusing with
// *TooLargeError one over limit bytes (from its size, or from what it
// yields when it grows while being read: never more than limit+1 bytes
// are read).
func ReadFile(path string, limit int64) ([]byte, error) {
	f, info, err := Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if info.Size() > limit {
		return nil, &TooLargeError{Path: path, Size: info.Size(), Limit: limit}
	}
	var buf bytes.Buffer
	buf.Grow(int(info.Size()) + bytes.MinRead)
	if _, err := buf.ReadFrom(io.LimitReader(f, limit+1)); err != nil {
		return nil, err
	}
	if int64(buf.Len()) > limit {
		return nil, &TooLargeError{Path: path, Size: int64(buf.Len()), Limit: limit}
	}
	return buf.Bytes(), nil
}
