// Package sandbox locks a worker process down before it reads any
// untrusted module: the parent starts the worker, hands it a socketpair
// at fd 3, and the worker calls Enter first thing. What is left is what
// a wazero-compiled guest needs to run (memory, threads, timers, the
// files beneath the directories of Config, the descriptors the worker
// already holds) and nothing else.
//
// # Layers
//
// Enter puts four layers in force on Linux, each as far as the kernel
// allows, each on every OS thread, in this order, and says in its
// Report which ones hold:
//
//  1. rlimits: RLIMIT_CORE 0 and the process not dumpable (no core
//     file, and other processes of the same user can neither ptrace the
//     worker nor open its /proc files); RLIMIT_NOFILE lowered to
//     Config.MaxFiles. RLIMIT_NPROC is not used: it counts every thread
//     of the user machine-wide, so a value that stops a fork bomb also
//     stops the Go runtime from starting threads. Seccomp refuses fork
//     instead.
//  2. no_new_privs on every thread: execve can no longer grant
//     privileges (setuid binaries, file capabilities). Seccomp refuses
//     execve anyway; this is also what lets an unprivileged process
//     load Landlock and seccomp at all.
//  3. Landlock (ABI 1 and later, best effort down to what the kernel
//     has): the file system is reduced to Config.ReadOnly (list and
//     read) and Config.ReadWrite (also write, truncate, make and remove
//     files, directories and symlinks, rename and link across
//     directories from ABI 2). Everything else is refused with EACCES:
//     /etc, /proc (other processes' mem, environ, fds), /dev, /sys,
//     executing any file, making devices, FIFOs or sockets. From ABI 4
//     every TCP bind and connect is refused (no rule allows a port);
//     from ABI 6 signals and abstract UNIX sockets cannot reach outside
//     the worker. The Go runtime needs nothing from the file system
//     after start (its cgroup files stay open from start-up); time.Local
//     is loaded by Enter before the lock-down.
//  4. seccomp-bpf, last, on every thread (SECCOMP_FILTER_FLAG_TSYNC): an
//     allowlist of about 140 syscalls (Report.SeccompSyscalls). Any other
//     call fails with EPERM: socket, socketpair, connect, bind, listen,
//     accept, execve, execveat, fork (clone without CLONE_THREAD, or with
//     namespace flags), chmod and chown by path, xattrs, mknod, setrlimit
//     and prlimit64 that sets, kill and tgkill outside the worker, ioctl
//     other than a handful of descriptor and terminal queries,
//     personality, memfd_create. clone3 fails with ENOSYS, so that glibc
//     falls back to clone, whose flags the filter can see. Calls with no
//     use but an attack end the process with SIGSYS: ptrace,
//     process_vm_readv/writev, mount and the new mount API, pivot_root,
//     chroot, setns, unshare, bpf, perf_event_open, userfaultfd,
//     io_uring_*, the keyring, kernel modules, kexec, swapon, reboot,
//     setting the clock.
//
// # Every thread
//
// landlock_restrict_self and prctl(PR_SET_NO_NEW_PRIVS) act on the
// calling thread only, and a Go process has several before main runs.
// go-landlock applies both to every thread through psx: with cgo linked
// (every -race binary, and a binary whose net package uses cgo) that is
// libpsx, which signals each thread listed in /proc/self/task until two
// sweeps in a row find none new; without cgo it is the runtime's
// syscall.AllThreadsSyscall. Threads started later inherit the state of
// the thread that starts them. Seccomp synchronises every thread itself
// (TSYNC) and sets no_new_privs on each. Enter therefore never has to
// re-execute the binary, although its contract allows it.
//
// # What is left
//
// A worker keeps what it needs, and so does whoever takes it over: its
// own memory and descriptors (the channel to the parent included), CPU
// time, reading and writing beneath Config's directories, and the
// syscalls on the allowlist. Landlock checks a file when it is opened,
// so a descriptor the worker inherits (or opened before Enter) keeps the
// access it was opened with: the parent should hand a worker only fds 0,
// 1, 2 and the channel at 3. Landlock does not govern stat, readlink,
// utimensat and access by path, so file names and metadata outside the
// allowed directories can be probed, and timestamps changed where the
// user may. The kernel itself is the remaining attack surface: a bug in
// an allowed syscall (futex, mmap, epoll, the file systems beneath the
// allowed directories) defeats every layer. Side channels (timing,
// caches, speculative execution) across processes on the same cores
// are not addressed; nor are memory and CPU limits, which are the
// parent's (cgroups, or the runtime's own metering). A worker that runs
// as root keeps its capabilities: Landlock and seccomp bind root too,
// but the parent should still start workers as an unprivileged user.
//
// Outside Linux Enter puts nothing in force and says so.
package sandbox
