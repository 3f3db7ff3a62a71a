//go:build unix && !linux

package worker

import (
	"runtime"
	"syscall"
)

// recvNow reads what the socket fd holds without waiting: EAGAIN when it
// holds nothing.
func recvNow(fd int, p []byte) (int, error) {
	for {
		n, _, err := syscall.Recvfrom(fd, p, syscall.MSG_DONTWAIT)
		if err != syscall.EINTR {
			return n, err
		}
	}
}

// recvWait reads from the socket fd, waiting until it holds something.
func recvWait(fd int, p []byte) (int, error) {
	for {
		n, _, err := syscall.Recvfrom(fd, p, 0)
		if err != syscall.EINTR {
			return n, err
		}
	}
}

// yieldCPU lets the process's other goroutines run (the system's yield
// is not in package syscall here).
func yieldCPU() { runtime.Gosched() }

func fcntlGetfl(fd int) (int, error) {
	fl, _, errno := syscall.Syscall(syscall.SYS_FCNTL, uintptr(fd), syscall.F_GETFL, 0)
	if errno != 0 {
		return 0, errno
	}
	return int(fl), nil
}
