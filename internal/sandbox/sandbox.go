package sandbox

import (
	"strconv"
	"strings"
)

// Config says what the worker may still touch once it is locked down.
type Config struct {
	// ReadOnly are directories the worker may read: list, open and read
	// the files beneath them (the package store, package directories).
	ReadOnly []string
	// ReadWrite are directories the worker may read and write beneath:
	// make, write, truncate, rename, link and remove files and
	// directories (the compilation cache, the temp dir, volume roots).
	ReadWrite []string
	// MaxFiles is the RLIMIT_NOFILE the worker is left with; 0 means
	// 4096. The limit is only ever lowered, never raised.
	MaxFiles uint64

	// skipLandlock leaves Landlock out as if the kernel had none, so a
	// test can prove that the Report tells what is really in force. It
	// is unexported so that no embedder can turn a layer off.
	skipLandlock bool
	// skipSeccomp leaves seccomp out, so that a test can see what
	// Landlock alone refuses (its network rules, which seccomp would
	// otherwise hide by refusing socket first).
	skipSeccomp bool
}

// Report says which layers are in force, for the embedder to read and to
// refuse on: a worker whose Report is not Complete should not be handed
// untrusted code unless the operator chose so.
type Report struct {
	// NoNewPrivs is true when no_new_privs is set on every thread:
	// execve can no longer grant privileges (setuid, file capabilities).
	NoNewPrivs bool
	// Seccomp is true when the syscall allowlist is loaded on every
	// thread.
	Seccomp bool
	// SeccompSyscalls is the number of syscalls the allowlist lets
	// through (some only with restricted arguments); 0 without Seccomp.
	SeccompSyscalls int
	// Landlock is the Landlock ABI level enforced on every thread; 0
	// means none.
	Landlock int
	// LandlockNet is true when Landlock denies TCP bind and connect
	// (ABI 4 and later).
	LandlockNet bool
	// Rlimits is true when core dumps are off (RLIMIT_CORE 0, not
	// dumpable) and RLIMIT_NOFILE is bounded by Config.MaxFiles.
	Rlimits bool
	// Missing has one human-readable line per layer not in force,
	// saying why.
	Missing []string
}

// Complete reports whether every layer is in force: no_new_privs,
// rlimits, Landlock with its network rules, and seccomp. On an OS where
// this package has no sandbox at all it is false, since nothing is in
// force there.
func (r Report) Complete() bool {
	return len(r.Missing) == 0 && r.NoNewPrivs && r.Seccomp && r.Landlock > 0 && r.LandlockNet && r.Rlimits
}

// String is the Report on one line, for a worker's log.
func (r Report) String() string {
	var b strings.Builder
	b.WriteString("sandbox:")
	add := func(name string, on bool) {
		b.WriteString(" ")
		b.WriteString(name)
		if on {
			b.WriteString("=on")
		} else {
			b.WriteString("=off")
		}
	}
	add("no_new_privs", r.NoNewPrivs)
	add("rlimits", r.Rlimits)
	add("landlock", r.Landlock > 0)
	if r.Landlock > 0 {
		b.WriteString("(abi ")
		b.WriteString(strconv.Itoa(r.Landlock))
		b.WriteString(")")
	}
	add("landlock_net", r.LandlockNet)
	add("seccomp", r.Seccomp)
	if r.Seccomp {
		b.WriteString("(" + strconv.Itoa(r.SeccompSyscalls) + " syscalls)")
	}
	for _, m := range r.Missing {
		b.WriteString("; missing: ")
		b.WriteString(m)
	}
	return b.String()
}

// defaultMaxFiles is RLIMIT_NOFILE when Config.MaxFiles is 0.
const defaultMaxFiles = 4096
