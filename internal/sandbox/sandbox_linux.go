package sandbox

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	llsys "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"golang.org/x/sys/unix"
)

// Enter locks the calling process down: rlimits, no_new_privs, Landlock
// and last seccomp, each on every OS thread and each as far as the
// kernel allows. Call it once, early, from the worker's main goroutine,
// before the worker reads anything untrusted; there is no way back.
//
// The contract lets Enter re-execute the binary to cover every thread;
// this implementation never needs to (libpsx, or the Go runtime's
// AllThreadsSyscall in a binary without cgo, applies the per-thread
// calls to every thread in place, and seccomp synchronises threads
// itself), so it always returns in the calling process.
//
// An error means Config is unusable (a directory that is not absolute
// or does not exist) and nothing was changed. Everything else that
// could not be put in force is a line in Report.Missing: the caller
// decides whether to run without it, and should refuse when the Report
// is not Complete.
func Enter(cfg Config) (Report, error) {
	if err := cfg.validate(); err != nil {
		return Report{}, err
	}
	var r Report

	// The runtime loads the local time zone on first use, from
	// /etc/localtime, which Landlock is about to refuse.
	time.Now().Zone()

	if err := setRlimits(cfg.maxFiles()); err != nil {
		r.Missing = append(r.Missing, "rlimits: "+err.Error())
	} else {
		r.Rlimits = true
	}

	// no_new_privs first and on its own, so it holds even where
	// Landlock is missing; seccomp would refuse to load without it
	// for a process lacking CAP_SYS_ADMIN.
	if err := llsys.AllThreadsPrctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		r.Missing = append(r.Missing, "no_new_privs: prctl on all threads: "+err.Error())
	} else if v, err := unix.PrctlRetInt(unix.PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0); err != nil || v != 1 {
		r.Missing = append(r.Missing, fmt.Sprintf("no_new_privs: not set after prctl (%d, %v)", v, err))
	} else {
		r.NoNewPrivs = true
	}

	if cfg.skipLandlock {
		r.Missing = append(r.Missing, "landlock: turned off for this test", "landlock_net: turned off for this test")
	} else {
		abi, err := enterLandlock(cfg)
		r.Landlock = abi
		r.LandlockNet = abi >= 4
		switch {
		case err != nil:
			r.Missing = append(r.Missing, "landlock: "+err.Error(), "landlock_net: no Landlock")
		case !r.LandlockNet:
			r.Missing = append(r.Missing, fmt.Sprintf("landlock_net: kernel Landlock ABI %d has no network rules (needs 4)", abi))
		}
	}

	// Not dumpable: no core file whatever RLIMIT_CORE says, and other
	// processes of the same user can no longer ptrace the worker or
	// open its /proc files. Done before seccomp, which refuses prctl
	// options other than the harmless ones.
	if err := unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0); err != nil {
		r.Rlimits = false
		r.Missing = append(r.Missing, "rlimits: prctl(PR_SET_DUMPABLE, 0): "+err.Error())
	}

	n, err := 0, errors.New("turned off for this test")
	if !cfg.skipSeccomp {
		n, err = enterSeccomp()
	}
	if err != nil {
		r.Missing = append(r.Missing, "seccomp: "+err.Error())
	} else {
		r.Seccomp = true
		r.SeccompSyscalls = n
		// TSYNC also sets no_new_privs on every thread it
		// synchronises, so seccomp alone makes it true.
		if !r.NoNewPrivs {
			r.NoNewPrivs = true
			r.Missing = dropLayer(r.Missing, "no_new_privs: ")
		}
	}
	return r, nil
}

// dropLayer removes the Missing lines of one layer, once a later step
// put it in force after all.
func dropLayer(missing []string, prefix string) []string {
	out := missing[:0]
	for _, m := range missing {
		if !strings.HasPrefix(m, prefix) {
			out = append(out, m)
		}
	}
	return out
}

// ErrConfig is wrapped by the errors Enter returns for an unusable
// Config.
var ErrConfig = errors.New("sandbox: bad config")

func (c Config) validate() error {
	for _, d := range append(append([]string(nil), c.ReadOnly...), c.ReadWrite...) {
		if !filepath.IsAbs(d) {
			return fmt.Errorf("%w: directory %q is not absolute", ErrConfig, d)
		}
		fi, err := os.Stat(d)
		if err != nil {
			return fmt.Errorf("%w: %v", ErrConfig, err)
		}
		if !fi.IsDir() {
			return fmt.Errorf("%w: %q is not a directory", ErrConfig, d)
		}
	}
	return nil
}

func (c Config) maxFiles() uint64 {
	if c.MaxFiles == 0 {
		return defaultMaxFiles
	}
	return c.MaxFiles
}

// setRlimits turns core dumps off and bounds descriptors. Limits are
// per process, so the calling thread is enough. RLIMIT_NPROC is left
// alone: it counts every process and thread of the real user ID, across
// the whole machine, so any value low enough to stop a fork bomb also
// stops the Go runtime from starting threads when other workers of the
// same user are busy; seccomp refuses fork instead.
func setRlimits(maxFiles uint64) error {
	if err := unix.Setrlimit(unix.RLIMIT_CORE, &unix.Rlimit{Cur: 0, Max: 0}); err != nil {
		return fmt.Errorf("RLIMIT_CORE: %w", err)
	}
	var cur unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &cur); err != nil {
		return fmt.Errorf("RLIMIT_NOFILE: %w", err)
	}
	lim := unix.Rlimit{Cur: min(cur.Cur, maxFiles), Max: min(cur.Max, maxFiles)}
	if err := unix.Setrlimit(unix.RLIMIT_NOFILE, &lim); err != nil {
		return fmt.Errorf("RLIMIT_NOFILE: %w", err)
	}
	return nil
}
