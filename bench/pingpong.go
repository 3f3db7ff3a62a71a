package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"syscall"
	"time"
)

// pingPong is the floor under any call through a worker process: round
// trips of a small message between this process and a child (this program
// re-executed with -child-pingpong) over a socketpair, each end on Go's
// poller as the worker channel's are, with a goroutine handing each
// message to another on both sides (the channel's reader and the caller or
// handler). A call through a worker makes one such round trip at least.
func pingPong(ctx context.Context, n int) ([]time.Duration, error) {
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	if err := syscall.SetNonblock(fds[0], true); err != nil {
		return nil, err
	}
	mine, theirs := os.NewFile(uintptr(fds[0]), "pingpong"), os.NewFile(uintptr(fds[1]), "pingpong-child")
	defer mine.Close()
	exe, err := os.Executable()
	if err != nil {
		theirs.Close()
		return nil, err
	}
	cmd := exec.CommandContext(ctx, exe, "-child-pingpong")
	cmd.ExtraFiles = []*os.File{theirs}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		theirs.Close()
		return nil, err
	}
	theirs.Close()
	defer func() {
		mine.Close() // the child's EOF
		cmd.Wait()
	}()
	in := handedOver(mine)
	msg := make([]byte, 64)
	var out []time.Duration
	for i := -50; i < n; i++ {
		start := time.Now()
		if _, err := mine.Write(msg); err != nil {
			return nil, err
		}
		if err := <-in; err != nil {
			return nil, err
		}
		if i >= 0 {
			out = append(out, time.Since(start))
		}
	}
	return out, nil
}

// handedOver reads 64-byte messages from f on a goroutine of its own and
// hands each over on the channel it returns (nil for a message).
func handedOver(f *os.File) <-chan error {
	ch := make(chan error)
	go func() {
		buf := make([]byte, 64)
		for {
			_, err := io.ReadFull(f, buf)
			ch <- err
			if err != nil {
				return
			}
		}
	}()
	return ch
}

// childPingPong is the child's side: it echoes every message, each handed
// from its reader goroutine to the one that answers, until EOF.
func childPingPong() error {
	if err := syscall.SetNonblock(3, true); err != nil {
		return err
	}
	f := os.NewFile(3, "pingpong")
	in := handedOver(f)
	msg := make([]byte, 64)
	for err := range in {
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		if _, err := f.Write(msg); err != nil {
			return fmt.Errorf("pingpong child: %w", err)
		}
	}
	return nil
}
