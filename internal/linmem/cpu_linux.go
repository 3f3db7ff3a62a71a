package linmem

import (
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// currentCPU is the CPU the calling thread runs on (getcpu(2); a raw
// system call of about 100 ns, with no scheduler bookkeeping), or 0 if the
// kernel will not say.
func currentCPU() int {
	var cpu uint32
	if _, _, errno := syscall.RawSyscall(unix.SYS_GETCPU, uintptr(unsafe.Pointer(&cpu)), 0, 0); errno != 0 {
		return 0
	}
	return int(cpu)
}
