//go:build unix && !linux

package worker

import "syscall"

// No Pdeathsig outside linux: a worker notices its parent's death by the
// channel's EOF instead.
func sysProcAttrOS() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }
