package runtime

import (
	"errors"
	"fmt"
	"time"
)

// Isolation says where a Runtime runs guest code: what decodes, validates,
// meters and compiles modules and runs their instances.
type Isolation int

const (
	// IsolationInProcess runs everything in the embedder's own process, as
	// every runtime did before workers existed. Nothing but the language
	// sandbox (wazero, metering, our host modules) stands between a guest
	// and the process.
	IsolationInProcess Isolation = iota
	// IsolationWorkers runs every module in a pool of worker processes,
	// each sandboxed (on Linux: no_new_privs, seccomp, Landlock, rlimits)
	// before it reads a module. The embedder's process keeps the API,
	// admission, the package set, the network and its credentials, and the
	// Observer; an engine bug then costs a worker, never the embedder
	// (docs/security.md, "The process layer").
	IsolationWorkers
)

// String names the isolation as the command line's flag does.
func (i Isolation) String() string {
	switch i {
	case IsolationInProcess:
		return "in-process"
	case IsolationWorkers:
		return "workers"
	}
	return fmt.Sprintf("Isolation(%d)", int(i))
}

// WorkerConfig configures the worker processes of IsolationWorkers.
type WorkerConfig struct {
	// Executable is the program started as a worker. Empty means this
	// process's own executable (os.Executable), whose main must call
	// ServeWorker first thing: the re-exec pattern, which also suits a test
	// binary (from TestMain). The subako-runner command is a worker
	// executable with Args ["worker"].
	Executable string
	// Args are the worker's arguments (argv[1:]).
	Args []string
	// Count is how many worker processes run; 0 means runtime.NumCPU().
	// A package stays with the worker that opened it (its compiled code
	// is held once), and a new package goes to the worker holding the
	// fewest estimated bytes.
	Count int
	// Grace is how long past a call's time limit the parent waits for the
	// worker to end the call itself before it kills the worker (SIGKILL);
	// 0 means 1 s.
	Grace time.Duration
	// MemoryMax bounds each worker's resident memory, in bytes: a worker
	// above it is killed, ending the calls it was running with a
	// *WorkerError. 0 means DefaultWorkerMemory; a negative value means no
	// bound.
	MemoryMax int64
	// ReadOnly are directories the workers may read: where the packages
	// the runtime loads and opens are (the package store), the skills. On
	// Linux, Landlock refuses the workers everything else, so a package
	// outside them fails to load with an error that says so.
	ReadOnly []string
	// ReadWrite are directories the workers may write: the roots of the
	// /volume/data directories calls mount. The runtime adds its TempDir
	// and compilation cache.
	ReadWrite []string
	// RequireSandbox makes New fail when a layer of the worker's sandbox
	// cannot be put in force on this machine (SandboxReport.Missing),
	// instead of running with the layers it has.
	RequireSandbox bool
}

// DefaultWorkerMemory is the resident-memory ceiling of a worker when
// WorkerConfig.MemoryMax is 0: room for a few instances at the default
// memory limit beside their compiled code.
const DefaultWorkerMemory = 8 << 30

// SandboxReport says which layers of the process sandbox the workers run
// under. The zero value is an in-process runtime's: no layer.
type SandboxReport struct {
	// Workers is true when guests run in worker processes.
	Workers bool `json:"workers"`
	// NoNewPrivs: the workers cannot gain privileges (setuid binaries,
	// file capabilities).
	NoNewPrivs bool `json:"noNewPrivs"`
	// Seccomp: a seccomp-bpf allowlist of SeccompSyscalls system calls is
	// in force on every thread of the worker.
	Seccomp         bool `json:"seccomp"`
	SeccompSyscalls int  `json:"seccompSyscalls"`
	// Landlock is the Landlock ABI level the worker's file-system rules
	// are enforced at; 0 means none. LandlockNet: TCP bind and connect are
	// denied by Landlock too (ABI 4 and later).
	Landlock    int  `json:"landlock"`
	LandlockNet bool `json:"landlockNet"`
	// Rlimits: core dumps are off and descriptors bounded.
	Rlimits bool `json:"rlimits"`
	// MemoryGuard is how a worker's memory ceiling is enforced: "rss"
	// (the parent watches each worker's resident set and kills one past
	// WorkerConfig.MemoryMax) or "none" (no ceiling, or no way to read a
	// process's resident set on this system).
	MemoryGuard string `json:"memoryGuard"`
	// Missing has one line per layer that is not in force, saying why.
	Missing []string `json:"missing,omitempty"`
}

// Complete reports whether every layer is in force.
func (r SandboxReport) Complete() bool { return r.Workers && len(r.Missing) == 0 }

// WorkerError is the error of a call, probe, upload or open that a worker
// process ended by dying: killed for its memory, crashed, or killed for
// breaking the channel's protocol. It is the host's failure, never a
// verdict on the package (a call killed at its time limit is a crashed
// Result with CrashTimeout instead): retry the call; the worker has been
// replaced. errors.Is(err, ErrWorkerExited) finds it.
type WorkerError struct {
	// Op is what was under way ("call greet", "load pkg").
	Op string
	// Reason is why the worker ended: "memory" (past MemoryMax),
	// "crashed" (on its own, signals included), "protocol" (killed for a
	// malformed message), "deadline" (killed for another operation's
	// overrun: an operation's own overrun is a crash "timeout"), or
	// "replaced" (a Checked whose worker was replaced before Discover). A
	// runtime that closes returns ErrClosed instead.
	Reason string
	// Status is how the process ended ("signal: killed",
	// "exit status 2").
	Status string
	// Pid is the worker's process id.
	Pid int
}

// ErrWorkerExited is what errors.Is finds in every *WorkerError.
var ErrWorkerExited = errors.New("subako worker process exited")

func (e *WorkerError) Error() string {
	return fmt.Sprintf("%s: the worker process (pid %d) ended: %s (%s)", e.Op, e.Pid, e.Reason, e.Status)
}

// Is makes errors.Is(err, ErrWorkerExited) true.
func (e *WorkerError) Is(target error) bool { return target == ErrWorkerExited }

// CodeWorkerExited is the Code of the CallEvent of a call a worker's end
// cut off (Outcome OutcomeError), and the rejection code of an upload
// whose checks ended their worker twice (each time on a fresh worker):
// the module crashed the engine or took more memory than a worker may.
const CodeWorkerExited = "worker_exited"
