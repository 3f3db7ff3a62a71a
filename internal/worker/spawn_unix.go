//go:build unix

package worker

import (
	"io"
	"os"
	"os/exec"
	"syscall"
	"time"
)

const supported = true

// startProcess starts path with one end of a fresh socketpair as fd 3 and
// returns the other end, in blocking mode.
func startProcess(path string, args, env []string, stderr io.Writer) (*exec.Cmd, *os.File, error) {
	// ForkLock: no other fork may inherit the pair before close-on-exec is set
	// (SOCK_CLOEXEC is not on every unix).
	syscall.ForkLock.RLock()
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM, 0)
	if err == nil {
		syscall.CloseOnExec(fds[0])
		syscall.CloseOnExec(fds[1])
	}
	syscall.ForkLock.RUnlock()
	if err != nil {
		return nil, nil, os.NewSyscallError("socketpair", err)
	}
	// The parent's end stays in blocking mode, off the runtime's poller
	// (blockingReader says why).
	parent := os.NewFile(uintptr(fds[0]), "subako-worker-channel")
	child := os.NewFile(uintptr(fds[1]), "subako-worker-channel-child")
	defer child.Close()
	cmd := exec.Command(path, args...)
	cmd.Env = env
	cmd.Stderr = stderr
	cmd.ExtraFiles = []*os.File{child}
	cmd.SysProcAttr = sysProcAttr()
	// A grandchild holding stderr open must not keep Wait waiting.
	cmd.WaitDelay = time.Second
	if err := cmd.Start(); err != nil {
		parent.Close()
		return nil, nil, err
	}
	return cmd, parent, nil
}

// killProcess SIGKILLs the worker's process group (it leads one), then the
// worker itself in case it left the group.
func killProcess(cmd *exec.Cmd) {
	syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	cmd.Process.Kill()
}

// channelFile makes the inherited descriptor pollable.
func channelFile(fd int) (*os.File, bool) {
	if err := syscall.SetNonblock(fd, true); err != nil {
		return nil, false
	}
	return os.NewFile(uintptr(fd), "subako-worker-channel"), true
}
