package sandbox

import (
	"errors"
	"fmt"
	"syscall"

	"github.com/landlock-lsm/go-landlock/landlock"
	llsys "github.com/landlock-lsm/go-landlock/landlock/syscall"
)

// landlockNewest is the newest Landlock ABI that go-landlock's newest
// preset (landlock.V11) describes: a kernel that knows more is used at
// this level.
const landlockNewest = 11

// Rights beneath a Config.ReadOnly directory: list and read, nothing
// else (no execute: the worker runs wasm it compiles itself, never a
// file it finds).
const landlockRO = llsys.AccessFSReadFile | llsys.AccessFSReadDir

// Rights beneath a Config.ReadWrite directory: everything WASI
// preview 1 can ask of a file system. Left out on purpose: execute,
// ioctl on devices, making devices, FIFOs and sockets, and connecting to
// pathname UNIX sockets.
const landlockRW = landlockRO |
	llsys.AccessFSWriteFile |
	llsys.AccessFSRemoveDir |
	llsys.AccessFSRemoveFile |
	llsys.AccessFSMakeDir |
	llsys.AccessFSMakeReg |
	llsys.AccessFSMakeSym |
	llsys.AccessFSTruncate

// enterLandlock restricts every thread to cfg's directories, denies TCP
// (and, from ABI 10, UDP) bind and connect outright, and scopes signals
// and abstract UNIX sockets to the worker itself (ABI 6). It returns
// the ABI level in force; an error means none.
//
// go-landlock applies landlock_restrict_self, a per-thread call, to
// every thread through psx: libpsx when the binary links cgo (every
// -race binary, and any whose net package links cgo), the runtime's
// AllThreadsSyscall otherwise. Kernels with ABI 8 synchronise threads
// themselves (TSYNC) and go-landlock uses that instead.
func enterLandlock(cfg Config) (int, error) {
	abi, err := llsys.LandlockGetABIVersion()
	if err != nil || abi < 1 {
		if errors.Is(err, syscall.ENOSYS) || errors.Is(err, syscall.EOPNOTSUPP) {
			return 0, fmt.Errorf("kernel has no Landlock (not built in, or not in the lsm= boot list): %w", err)
		}
		return 0, fmt.Errorf("landlock_create_ruleset(VERSION): %d, %v", abi, err)
	}
	abi = min(abi, landlockNewest)

	rw := landlock.AccessFSSet(landlockRW)
	if abi >= 2 {
		// Renames and links across directories (ABI 1 refuses them
		// all, with EXDEV, whatever the rules say).
		rw |= llsys.AccessFSRefer
	}
	var rules []landlock.Rule
	if len(cfg.ReadOnly) > 0 {
		rules = append(rules, landlock.PathAccess(landlockRO, cfg.ReadOnly...))
	}
	if len(cfg.ReadWrite) > 0 {
		rules = append(rules, landlock.PathAccess(rw, cfg.ReadWrite...))
	}
	// No network rule: with the network rights handled, every TCP bind
	// and connect is refused. BestEffort drops what this kernel does
	// not know, which is what abi above reports.
	if err := landlock.V11.BestEffort().Restrict(rules...); err != nil {
		return 0, err
	}
	return abi, nil
}
