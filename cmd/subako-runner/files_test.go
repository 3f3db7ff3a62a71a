package main

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestFilesMustBeRegular: an --args-file, an --examples file, a manifest
// or a module that is a FIFO or a device is refused by type, at once (a
// FIFO hung the command with SIGINT and SIGTERM ignored; /dev/zero as the
// args file grew the process to 24 GB).
func TestFilesMustBeRegular(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	pkg := pkgDir(t, "greet", nil)
	fifoPkg := func(name string) string {
		d := t.TempDir()
		for _, f := range []string{"subako-package.json", "module.wasm"} {
			b, err := os.ReadFile(filepath.Join(pkg, f))
			if err != nil {
				t.Fatal(err)
			}
			if f == name {
				if err := syscall.Mkfifo(filepath.Join(d, f), 0o600); err != nil {
					t.Fatal(err)
				}
				continue
			}
			if err := os.WriteFile(filepath.Join(d, f), b, 0o600); err != nil {
				t.Fatal(err)
			}
		}
		return d
	}
	for _, tt := range []struct {
		name string
		args []string
		code int
		want string
	}{
		{"args file FIFO", []string{"call", "--args-file", fifo, pkg, "greet"}, 2, "is not a regular file (it is a FIFO)"},
		{"args file /dev/zero", []string{"call", "--args-file", "/dev/zero", pkg, "greet"}, 2, "/dev/zero is not a regular file (it is a character device)"},
		{"examples FIFO", []string{"check", "--examples", fifo, pkg}, 2, "is not a regular file (it is a FIFO)"},
		{"manifest FIFO", []string{"validate", fifoPkg("subako-package.json")}, 4, "subako-package.json is not a regular file (it is a FIFO)"},
		{"module FIFO", []string{"validate", fifoPkg("module.wasm")}, 4, "module.wasm is not a regular file (it is a FIFO)"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			type result struct {
				code        int
				out, errOut string
			}
			done := make(chan result, 1)
			go func() {
				code, out, errOut := cli(t, "", tt.args...)
				done <- result{code, out, errOut}
			}()
			select {
			case r := <-done:
				if r.code != tt.code || !strings.Contains(r.out+r.errOut, tt.want) {
					t.Errorf("exit %d, want %d; output lacks %q:\n%s%s", r.code, tt.code, tt.want, r.out, r.errOut)
				}
			case <-time.After(time.Minute): // a bound on a hang, not a measure
				t.Fatal("the command waited on the file")
			}
		})
	}
}

// zeros is /dev/zero as a reader: endless.
type zeros struct{}

func (zeros) Read(p []byte) (int, error) { clear(p); return len(p), nil }

// blocked is a stdin that never yields a byte.
type blocked struct{}

func (blocked) Read([]byte) (int, error) { select {} }

// TestArgsOnStdinBounded: ARGS_JSON on stdin is read up to maxArgs (an
// endless stdin was read without bound), and the read ends when the
// command is interrupted, however long stdin takes.
func TestArgsOnStdinBounded(t *testing.T) {
	_, err := readArgs(context.Background(), &env{stdin: zeros{}}, "-", nil)
	if err == nil || !strings.Contains(err.Error(), "ARGS_JSON on stdin is over 16 MiB") {
		t.Errorf("endless stdin: %v", err)
	}
	b, err := readArgs(context.Background(), &env{stdin: io.LimitReader(zeros{}, maxArgs)}, "-", nil)
	if err != nil || len(b) != maxArgs {
		t.Errorf("stdin of exactly the bound: %d bytes, %v", len(b), err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	go func() { time.Sleep(10 * time.Millisecond); cancel() }()
	if _, err := readArgs(ctx, &env{stdin: blocked{}}, "-", nil); !errors.Is(err, context.Canceled) {
		t.Errorf("an interrupted read: %v", err)
	}
}
