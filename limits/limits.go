package limits

import (
	"fmt"
	"time"
)

// Sizes in bytes, for readability of the defaults and of callers' code.
const (
	KiB int64 = 1 << 10
	MiB int64 = 1 << 20
	GiB int64 = 1 << 30
)

// Limits is every limit of host-contract §9 for one call or discovery run.
//
// The zero value is not useful; start from Default and change fields:
//
//	l := limits.Default()
//	l.Memory = 64 * limits.MiB
//	l.CallTimeout = 5 * time.Second
//
// # Notes
//
//   - Limits is a plain value: copying it is how a caller gives one call
//     different limits without affecting others.
//   - Fuel 0 means unlimited; every other field must be positive (Validate).
type Limits struct {
	// ModuleSize is the largest module.wasm accepted at upload, in bytes.
	ModuleSize int64
	// Memory is the most linear memory one instance may have, in bytes.
	// The host refuses memory.grow beyond it.
	Memory int64
	// Fuel is the instruction budget of one instance; 0 is unlimited.
	Fuel uint64
	// DiscoveryTimeout bounds the whole discovery run (ABI 1: 10 s).
	DiscoveryTimeout time.Duration
	// CallTimeout bounds one tools/call, from instantiation to exit.
	CallTimeout time.Duration
	// ExitTimeout is how long a module may run after its stdin closed (1 s).
	ExitTimeout time.Duration
	// WriteBudget is how many bytes one call may write to files (1 GiB).
	// Every directory entry the call creates is charged EntryCost bytes of
	// it, and a symbolic link its target's length on top.
	WriteBudget int64
	// MaxEntries is how many directory entries (files, directories,
	// symbolic and hard links) one call may create; beyond it the guest
	// gets EDQUOT. Removing entries does not give them back.
	MaxEntries int
	// StdoutLine is the longest stdout line accepted, in bytes.
	StdoutLine int64
	// StdoutTotal is the most stdout one run may produce, in bytes.
	StdoutTotal int64
	// StderrTail is how many trailing bytes of stderr a crash report keeps.
	StderrTail int
	// HTTPRequest is the largest subako_http request document, in bytes.
	HTTPRequest int64
	// HTTPInline is the largest response body returned inline, in bytes.
	HTTPInline int64
	// HTTPRedirects is how many redirects one request may follow.
	HTTPRedirects int
	// MaxPages is how many tools/list pages discovery requests.
	MaxPages int
	// MaxTools is how many tools a package may declare in all.
	MaxTools int
}

// DefaultFuel is the default instruction budget, about a dozen seconds of
// pure computation: measured here, CPU-bound Go and C guests spend 7 to 8
// billion fuel a second, and a Go MCP server answering one call a few
// million. A well-behaved call never meets it, and a runaway loop stops
// within seconds even when its call timeout is long.
const DefaultFuel uint64 = 100_000_000_000

// Default returns the limits of host-contract §9.
func Default() Limits {
	return Limits{
		ModuleSize:       64 * MiB,
		Memory:           256 * MiB,
		Fuel:             DefaultFuel,
		DiscoveryTimeout: 10 * time.Second,
		CallTimeout:      60 * time.Second,
		ExitTimeout:      time.Second,
		WriteBudget:      GiB,
		MaxEntries:       DefaultMaxEntries,
		StdoutLine:       16 * MiB,
		StdoutTotal:      64 * MiB,
		StderrTail:       4 * int(KiB),
		HTTPRequest:      8 * MiB,
		HTTPInline:       256 * KiB,
		HTTPRedirects:    10,
		MaxPages:         16,
		MaxTools:         1024,
	}
}

// DefaultMaxEntries is the default of MaxEntries: far more than a tool's
// scratch files need, and few enough that the volume's cleanup stays in
// the tens of milliseconds (a guest with no cap made 342,847 directories
// in 10 s, and removing a million took the host 110 s).
const DefaultMaxEntries = 10_000

// EntryCost is what creating one directory entry charges to the write
// budget: one file system block, roughly what an inode or a directory
// costs the host's disk even when it holds no bytes.
const EntryCost = 4 * KiB

// WasmPageSize is the size of one WebAssembly memory page.
const WasmPageSize = 64 * KiB

// MemoryPages is Memory in whole WebAssembly pages, rounded down.
func (l Limits) MemoryPages() uint32 {
	pages := l.Memory / WasmPageSize
	if pages > 65536 {
		pages = 65536
	}
	return uint32(pages)
}

// Validate reports the first field that cannot work, so that a bad flag or a
// bad embedder setting fails before any module runs.
func (l Limits) Validate() error {
	positive := []struct {
		name string
		v    int64
	}{
		{"module size", l.ModuleSize},
		{"memory", l.Memory},
		{"discovery timeout", int64(l.DiscoveryTimeout)},
		{"call timeout", int64(l.CallTimeout)},
		{"exit timeout", int64(l.ExitTimeout)},
		{"write budget", l.WriteBudget},
		{"entries per call", int64(l.MaxEntries)},
		{"stdout line limit", l.StdoutLine},
		{"stdout total limit", l.StdoutTotal},
		{"stderr tail", int64(l.StderrTail)},
		{"HTTP request limit", l.HTTPRequest},
		{"HTTP inline limit", l.HTTPInline},
		{"tools/list pages", int64(l.MaxPages)},
		{"tool count", int64(l.MaxTools)},
	}
	for _, p := range positive {
		if p.v <= 0 {
			return fmt.Errorf("limits: %s must be positive, got %d", p.name, p.v)
		}
	}
	if l.HTTPRedirects < 0 {
		return fmt.Errorf("limits: HTTP redirects must not be negative, got %d", l.HTTPRedirects)
	}
	if l.Memory < WasmPageSize {
		return fmt.Errorf("limits: memory must be at least one 64 KiB page, got %d bytes", l.Memory)
	}
	if l.Memory > 4*GiB {
		return fmt.Errorf("limits: memory above 4 GiB cannot be addressed by a 32-bit module, got %d bytes", l.Memory)
	}
	return nil
}
