package sandbox

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"unsafe"

	seccomp "github.com/elastic/go-seccomp-bpf"
	"github.com/elastic/go-seccomp-bpf/arch"
	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

// allowed are the syscalls a worker makes after Enter: the Go runtime
// (memory, threads, signals, timers, the netpoller), wazero's compiled
// code (mmap and mprotect with PROT_EXEC), WASI preview 1 on the
// directories Landlock leaves open (the *at family, on descriptors), and
// I/O on descriptors the worker already holds (its socketpair at fd 3).
// Every name exists on amd64 and arm64; legacy names are in
// allowedLegacy.
var allowed = []string{
	// memory
	"mmap", "munmap", "mprotect", "madvise", "mremap", "brk", "mincore",
	// threads and scheduling (clone, prctl and friends are in
	// conditional, below)
	"futex", "set_robust_list", "get_robust_list", "rseq", "set_tid_address",
	"sched_yield", "sched_getaffinity", "getcpu", "gettid", "getpid", "getppid",
	"exit", "exit_group", "restart_syscall",
	// signals, delivered within the process only (kill and tgkill are
	// conditional)
	"rt_sigaction", "rt_sigprocmask", "rt_sigreturn", "rt_sigpending",
	"rt_sigsuspend", "rt_sigtimedwait", "sigaltstack",
	// time
	"clock_gettime", "clock_getres", "gettimeofday", "nanosleep", "clock_nanosleep",
	"timer_create", "timer_settime", "timer_gettime", "timer_getoverrun", "timer_delete",
	"setitimer", "getitimer", "times", "getrusage",
	// the netpoller and other waits
	"epoll_create1", "epoll_ctl", "epoll_pwait", "epoll_pwait2", "eventfd2", "pipe2",
	"ppoll", "pselect6",
	// I/O on descriptors already held
	"read", "write", "readv", "writev", "pread64", "pwrite64",
	"preadv", "pwritev", "preadv2", "pwritev2",
	"sendmsg", "recvmsg", "sendto", "recvfrom", "sendmmsg", "recvmmsg", "shutdown",
	"getsockopt", "getsockname", "getpeername",
	"close", "close_range", "dup", "dup3", "fcntl", "lseek",
	"sendfile", "splice", "copy_file_range",
	// files, by descriptor or beneath the directories Landlock allows
	"openat", "openat2", "fstat", "statx", "fstatfs", "getdents64",
	"mkdirat", "unlinkat", "renameat", "renameat2", "linkat", "symlinkat",
	"readlinkat", "faccessat", "faccessat2", "fchmod", "utimensat",
	"ftruncate", "truncate", "fallocate", "fsync", "fdatasync", "flock", "getcwd",
	// identity and randomness
	"getrandom", "uname", "getuid", "geteuid", "getgid", "getegid", "getgroups",
	"getrlimit",
}

// allowedLegacy are the older forms of calls in allowed, kept by some
// architectures only (amd64 has them, arm64 does not), and calls whose
// name differs between architectures (fstatat is newfstatat on amd64).
// The Go runtime and glibc still use a few of the old forms (open,
// epoll_wait, pipe, dup2...); Landlock checks them exactly like their *at
// forms.
var allowedLegacy = []string{
	"newfstatat", "fstatat",
	"open", "stat", "lstat", "access", "readlink", "pipe", "dup2", "poll", "select",
	"epoll_wait", "epoll_create", "mkdir", "rmdir", "unlink", "rename", "link",
	"symlink", "getdents", "time", "arch_prctl",
}

// killed are the calls no worker makes unless it has been taken over:
// debugging and reading other processes, kernel modules and eBPF,
// mounts and namespaces, the keyring, io_uring (a second syscall
// interface seccomp cannot see into) and a few other kernel attack
// surfaces. They end the process (SIGSYS) at once, which the parent
// sees as a crash to log, instead of returning an error an exploit
// could probe and go on from.
var killed = []string{
	"ptrace", "process_vm_readv", "process_vm_writev", "pidfd_getfd", "kcmp",
	"kexec_load", "kexec_file_load", "init_module", "finit_module", "delete_module",
	"bpf", "perf_event_open", "userfaultfd",
	"mount", "umount2", "pivot_root", "chroot", "move_mount", "open_tree",
	"fsopen", "fsconfig", "fsmount", "fspick", "mount_setattr",
	"setns", "unshare",
	"keyctl", "add_key", "request_key",
	"io_uring_setup", "io_uring_enter", "io_uring_register",
	"swapon", "swapoff", "reboot", "acct", "quotactl", "syslog",
	"open_by_handle_at", "name_to_handle_at",
	"settimeofday", "clock_settime", "clock_adjtime", "adjtimex",
	"sethostname", "setdomainname", "vhangup",
}

// killedLegacy are the killed calls some architectures only have.
var killedLegacy = []string{"iopl", "ioperm", "modify_ldt", "uselib"}

// cloneNamespaces are the clone flags that make new namespaces (or
// join none but need CAP_SYS_ADMIN); a thread never needs them.
const cloneNamespaces = unix.CLONE_NEWNS | unix.CLONE_NEWCGROUP | unix.CLONE_NEWUTS |
	unix.CLONE_NEWIPC | unix.CLONE_NEWUSER | unix.CLONE_NEWPID | unix.CLONE_NEWNET |
	unix.CLONE_NEWTIME

// ioctls are the ioctl requests let through: is-a-terminal checks, and
// the descriptor flags the os and net packages may set. Not TIOCSTI and
// the like, which reach outside the worker.
var ioctls = []uint64{unix.TCGETS, ioctlFIONBIO, ioctlFIOCLEX, ioctlFIONCLEX, ioctlFIONREAD}

// The asm-generic numbers, which amd64 and arm64 use (x/sys/unix does
// not name them).
const (
	ioctlFIONREAD = 0x541b
	ioctlFIONBIO  = 0x5421
	ioctlFIONCLEX = 0x5450
	ioctlFIOCLEX  = 0x5451
)

// conditional are the calls let through only with safe arguments. pid is
// the worker's own.
func conditional(pid int) []seccomp.NameWithConditions {
	self := uint64(pid)
	c := []seccomp.NameWithConditions{
		// Threads only: CLONE_THREAD set, no namespace flags. A
		// fork (no CLONE_THREAD) is refused.
		{Name: "clone", Conditions: seccomp.ArgumentConditions{
			{Argument: 0, Operation: seccomp.BitsSet, Value: unix.CLONE_THREAD},
			{Argument: 0, Operation: seccomp.BitsNotSet, Value: cloneNamespaces},
		}},
		// Signals to the worker's own threads only (the runtime's
		// preemption, and re-raising a fatal signal).
		{Name: "tgkill", Conditions: seccomp.ArgumentConditions{{Argument: 0, Operation: seccomp.Equal, Value: self}}},
		{Name: "kill", Conditions: seccomp.ArgumentConditions{{Argument: 0, Operation: seccomp.Equal, Value: self}}},
		// Reading the worker's own limits; never setting any.
		{Name: "prlimit64", Conditions: seccomp.ArgumentConditions{
			{Argument: 0, Operation: seccomp.Equal, Value: 0},
			{Argument: 2, Operation: seccomp.Equal, Value: 0},
		}},
		{Name: "prlimit64", Conditions: seccomp.ArgumentConditions{
			{Argument: 0, Operation: seccomp.Equal, Value: self},
			{Argument: 2, Operation: seccomp.Equal, Value: 0},
		}},
		// Naming threads and reading the few flags glibc and the
		// race detector ask for.
		{Name: "prctl", Conditions: seccomp.ArgumentConditions{{Argument: 0, Operation: seccomp.Equal, Value: unix.PR_SET_NAME}}},
		{Name: "prctl", Conditions: seccomp.ArgumentConditions{{Argument: 0, Operation: seccomp.Equal, Value: unix.PR_GET_NAME}}},
		{Name: "prctl", Conditions: seccomp.ArgumentConditions{{Argument: 0, Operation: seccomp.Equal, Value: unix.PR_GET_DUMPABLE}}},
		{Name: "prctl", Conditions: seccomp.ArgumentConditions{{Argument: 0, Operation: seccomp.Equal, Value: unix.PR_GET_NO_NEW_PRIVS}}},
		{Name: "prctl", Conditions: seccomp.ArgumentConditions{{Argument: 0, Operation: seccomp.Equal, Value: unix.PR_SET_VMA}}},
		{Name: "prctl", Conditions: seccomp.ArgumentConditions{{Argument: 0, Operation: seccomp.Equal, Value: unix.PR_GET_SECCOMP}}},
	}
	for _, req := range ioctls {
		c = append(c, seccomp.NameWithConditions{Name: "ioctl", Conditions: seccomp.ArgumentConditions{
			{Argument: 1, Operation: seccomp.Equal, Value: req},
		}})
	}
	return c
}

// policy builds the filter for this architecture and pid, and says how
// many distinct syscalls it lets through.
func policy(pid int) (seccomp.Policy, int, error) {
	info, err := arch.GetInfo("")
	if err != nil {
		return seccomp.Policy{}, 0, err
	}
	return policyFor(info, pid)
}

// policyFor builds the filter for one architecture. A name the
// architecture lacks is left out (riscv64 has no renameat, arm64 no
// open); a test checks that amd64 and arm64 have every name outside the
// legacy lists, so a misspelt name cannot go unnoticed.
func policyFor(info *arch.Info, pid int) (seccomp.Policy, int, error) {
	present := func(names ...[]string) []string {
		var out []string
		for _, list := range names {
			for _, n := range list {
				if _, ok := info.SyscallNames[n]; ok {
					out = append(out, n)
				}
			}
		}
		return out
	}
	allow := present(allowed, allowedLegacy)
	kill := present(killed, killedLegacy)
	var cond []seccomp.NameWithConditions
	for _, c := range conditional(pid) {
		if _, ok := info.SyscallNames[c.Name]; ok {
			cond = append(cond, c)
		}
	}
	if _, ok := info.SyscallNames["clone"]; !ok {
		return seccomp.Policy{}, 0, fmt.Errorf("no clone on %s: no filter for it", info.Name)
	}
	distinct := map[string]bool{}
	for _, n := range allow {
		distinct[n] = true
	}
	for _, c := range cond {
		distinct[c.Name] = true
	}
	groups := []seccomp.SyscallGroup{
		{Action: seccomp.ActionAllow, Names: allow, NamesWithCondtions: cond},
		{Action: seccomp.ActionKillProcess, Names: kill},
	}
	if _, ok := info.SyscallNames["clone3"]; ok {
		// clone3 passes its flags in memory, where a filter cannot
		// look: ENOSYS makes glibc fall back to clone, whose flags
		// are checked above.
		groups = append(groups, seccomp.SyscallGroup{Action: seccomp.ActionErrno | seccomp.Action(unix.ENOSYS), Names: []string{"clone3"}})
	}
	p := seccomp.Policy{
		// A call nobody listed fails with EPERM: a harmless call
		// forgotten here costs an error, not a dead worker.
		DefaultAction: seccomp.ActionErrno,
		Syscalls:      groups,
	}
	return p, len(distinct), nil
}

// enterSeccomp loads the allowlist on every thread (TSYNC), last of all
// layers since it refuses the calls the others are set up with. It
// returns the allowlist's size.
//
// The filter is assembled by go-seccomp-bpf but loaded here: with TSYNC
// the kernel reports a thread it could not synchronise as a positive
// return value (and loads nothing), which the library's loader ignores.
func enterSeccomp() (int, error) {
	p, n, err := policy(os.Getpid())
	if err != nil {
		return 0, err
	}
	if !seccomp.Supported() {
		return 0, errors.New("kernel has no seccomp filter mode")
	}
	insts, err := p.Assemble()
	if err != nil {
		return 0, fmt.Errorf("assembling the filter: %w", err)
	}
	raw, err := bpf.Assemble(insts)
	if err != nil {
		return 0, fmt.Errorf("assembling the filter: %w", err)
	}
	prog := make([]unix.SockFilter, len(raw))
	for i, in := range raw {
		prog[i] = unix.SockFilter{Code: in.Op, Jt: in.Jt, Jf: in.Jf, K: in.K}
	}
	fprog := unix.SockFprog{Len: uint16(len(prog)), Filter: &prog[0]}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	// Needed without CAP_SYS_ADMIN; TSYNC sets it on the other threads.
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return 0, fmt.Errorf("prctl(PR_SET_NO_NEW_PRIVS): %w", err)
	}
	r, _, errno := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER,
		unix.SECCOMP_FILTER_FLAG_TSYNC, uintptr(unsafe.Pointer(&fprog)))
	runtime.KeepAlive(prog)
	if errno != 0 {
		return 0, fmt.Errorf("seccomp(SET_MODE_FILTER, TSYNC): %w", errno)
	}
	if r != 0 {
		return 0, fmt.Errorf("seccomp(SET_MODE_FILTER, TSYNC): thread %d could not be synchronised, nothing loaded", r)
	}
	if mode, err := unix.PrctlRetInt(unix.PR_GET_SECCOMP, 0, 0, 0, 0); err != nil || mode != 2 {
		return 0, fmt.Errorf("filter not in force after loading (PR_GET_SECCOMP %d, %v)", mode, err)
	}
	return n, nil
}
