package worker

import (
	"syscall"
	"unsafe"
)

// recvNow reads what the socket fd holds without waiting: EAGAIN when it
// holds nothing. A raw system call: it cannot block, so the scheduler need
// not hear of it.
func recvNow(fd int, p []byte) (int, error) {
	for {
		n, _, errno := syscall.RawSyscall6(syscall.SYS_RECVFROM, uintptr(fd), uintptr(unsafe.Pointer(&p[0])), uintptr(len(p)), syscall.MSG_DONTWAIT, 0, 0)
		if errno == syscall.EINTR {
			continue
		}
		if errno != 0 {
			return 0, errno
		}
		return int(n), nil
	}
}

// recvWait reads from the socket fd, waiting in the kernel until it holds
// something (fd is in blocking mode).
func recvWait(fd int, p []byte) (int, error) {
	for {
		n, _, errno := syscall.Syscall6(syscall.SYS_RECVFROM, uintptr(fd), uintptr(unsafe.Pointer(&p[0])), uintptr(len(p)), 0, 0, 0)
		if errno == syscall.EINTR {
			continue
		}
		if errno != 0 {
			return 0, errno
		}
		return int(n), nil
	}
}

// yieldCPU offers this thread's CPU to any other thread ready to run.
func yieldCPU() { syscall.RawSyscall(syscall.SYS_SCHED_YIELD, 0, 0, 0) }

func fcntlGetfl(fd int) (int, error) {
	fl, _, errno := syscall.RawSyscall(syscall.SYS_FCNTL, uintptr(fd), syscall.F_GETFL, 0)
	if errno != 0 {
		return 0, errno
	}
	return int(fl), nil
}
