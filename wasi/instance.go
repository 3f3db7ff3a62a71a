package wasi

import (
	"io"
	"os"
	"sync"
	"time"

	"github.com/subako/subako-runner/fsmount"
	"github.com/subako/subako-runner/limits"
)

// Config is what one module instance sees.
type Config struct {
	// Args are the command-line arguments; nil means ["module.wasm"].
	Args []string
	// Env holds "NAME=VALUE" entries; nil is an empty environment.
	Env []string
	// Stdin feeds fd 0; nil is an immediate end of file.
	Stdin *Stdin
	// Stdout and Stderr receive fd 1 and fd 2. They are called synchronously
	// from fd_write with views of guest memory, valid only during the
	// Write (which, as io.Writer says, must not retain them): one Write per
	// iovec, or per MiB of a larger one. A Write error ends the instance
	// with exit code 0xfffffffe (which the guest never sees). nil discards.
	Stdout, Stderr io.Writer
	// MaxStdioWrite caps the bytes one fd_write moves to Stdout or Stderr;
	// the rest is a short write, which wasi-libc, Go and Rust retry. 0
	// means 16 MiB, the default stdout line limit. It bounds the host's work per call when
	// a guest passes many overlapping iovecs.
	MaxStdioWrite int64
	// Mounts are the preopens, fd 3 onwards in Set order; nil is none. The
	// Instance does not close the Set.
	Mounts *fsmount.Set
	// Budget is charged for file writes; nil is unlimited.
	Budget *limits.WriteBudget
	// MaxFiles caps the descriptors open at once (stdio and preopens
	// included); 0 means DefaultMaxFiles. Beyond it path_open fails with
	// EMFILE.
	MaxFiles int
}

// DefaultMaxFiles is Config.MaxFiles's default, and the cap every call of
// the runtime has (docs/abi.md §9): it is fixed, not one of limits.Limits,
// because a guest that needs more than a thousand files open at once is
// broken, and each descriptor costs the host only a map entry and an
// os.File.
const DefaultMaxFiles = 1024

// defaultMaxStdioWrite is Config.MaxStdioWrite's default: 16 MiB, the
// default longest stdout line (limits.Default().StdoutLine), so a guest
// that writes a whole response line in one fd_write never sees a short
// write.
const defaultMaxStdioWrite = 16 << 20

type fdKind uint8

const (
	kindStdin fdKind = iota
	kindStdout
	kindStderr
	kindFile
	kindDir
)

// fdEntry is one open descriptor of the guest.
type fdEntry struct {
	kind    fdKind
	base    uint64 // rights
	inherit uint64
	flags   uint16

	file *os.File // files
	// sub is the root of a directory the guest opened. A preopen has
	// none: its root is the Set's, asked for at each use (dirRoot), so
	// that the Set sees every use of the mount.
	sub *os.Root

	mount    int    // index in the Set
	rel      string // path relative to the mount root, as opened
	readOnly bool
	preopen  string // guest path of a preopen; "" otherwise

	dir *dirReader // directories: fd_readdir's position, opened lazily
}

// Instance is the per-instance state: fd table, args, environment, clocks.
type Instance struct {
	cfg   Config
	start time.Time

	mu     sync.Mutex
	fds    map[uint32]*fdEntry
	max    int
	closed chan struct{}
	once   sync.Once

	// beforePollWait, when set (by tests), runs in poll_oneoff between
	// the readiness check and the wait: the window of a lost wake-up.
	beforePollWait func()
	// beforeLinkAct, when set (by tests), runs in path_symlink,
	// path_link and path_rename between the link rule's check and the
	// act: the window another call's change of names could use.
	beforeLinkAct func()
}

// NewInstance makes the state of one module instance.
func NewInstance(cfg Config) *Instance {
	if cfg.Args == nil {
		cfg.Args = []string{"module.wasm"}
	}
	if cfg.Stdout == nil {
		cfg.Stdout = io.Discard
	}
	if cfg.Stderr == nil {
		cfg.Stderr = io.Discard
	}
	in := &Instance{cfg: cfg, start: time.Now(), fds: map[uint32]*fdEntry{}, max: cfg.MaxFiles, closed: make(chan struct{})}
	if in.max <= 0 {
		in.max = DefaultMaxFiles
	}
	in.fds[0] = &fdEntry{kind: kindStdin, base: stdinRights}
	in.fds[1] = &fdEntry{kind: kindStdout, base: stdoutRights}
	in.fds[2] = &fdEntry{kind: kindStderr, base: stdoutRights}
	if cfg.Mounts != nil {
		for i, m := range cfg.Mounts.Mounts() {
			in.fds[uint32(3+i)] = &fdEntry{
				kind: kindDir, base: dirRights, inherit: dirRights | fileRights,
				mount: i, rel: ".", readOnly: m.ReadOnly, preopen: m.Guest,
			}
		}
	}
	return in
}

// Close closes every descriptor the guest opened and wakes a guest waiting
// on stdin or poll_oneoff (it then ends with exit code 0xfffffffe). The Set of
// the Config stays open.
func (in *Instance) Close() error {
	in.once.Do(func() { close(in.closed) })
	in.mu.Lock()
	defer in.mu.Unlock()
	var first error
	for fd, e := range in.fds {
		if err := e.close(); err != nil && first == nil {
			first = err
		}
		delete(in.fds, fd)
	}
	return first
}

// close releases the host handles. The fields stay set: a host function
// still holding the entry (Close racing a running guest) then gets
// os.ErrClosed from them, which the guest sees as EBADF.
func (e *fdEntry) close() error {
	var err error
	if e.file != nil {
		err = e.file.Close()
	}
	e.dir.close()
	if e.sub != nil {
		if rerr := e.sub.Close(); err == nil {
			err = rerr
		}
	}
	return err
}

// get returns the entry of fd, or EBADF.
func (in *Instance) get(fd uint32) (*fdEntry, errnum) {
	in.mu.Lock()
	defer in.mu.Unlock()
	e := in.fds[fd]
	if e == nil {
		return nil, errnoBadf
	}
	return e, errnoSuccess
}

// add puts e at the lowest free descriptor number.
func (in *Instance) add(e *fdEntry) (uint32, errnum) {
	in.mu.Lock()
	defer in.mu.Unlock()
	if len(in.fds) >= in.max {
		return 0, errnoMfile
	}
	for fd := uint32(3); ; fd++ {
		if in.fds[fd] == nil {
			in.fds[fd] = e
			return fd, errnoSuccess
		}
	}
}

func (in *Instance) stdin() *Stdin { return in.cfg.Stdin }
