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

// Limits is every limit of docs/abi.md §9 for one call or discovery run.
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
	// WriteBudget is how many bytes of file data one call may write (1 GiB),
	// exactly: directory entries and link targets count against caps of
	// their own (MaxEntries, MaxLinkTarget), never against these bytes.
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
	// CompileTimeout bounds compiling a module to machine code at upload;
	// a module that takes longer is rejected as compile_timeout. The
	// default, 5 minutes, is generous: what a real module (the Go MCP
	// SDK's) takes, idle and under load, is measured in docs/security.md
	// (the compile-time row). The structural bounds (Structure) are what
	// keep a hostile module's compilation short; this is the backstop.
	CompileTimeout time.Duration
	// Structure bounds the shape of an uploaded module (module_too_complex).
	Structure Structure
}

// Structure bounds the shape of a module, checked in one linear pass
// before anything compiles it. The compiler's time and memory grow with
// these (some faster than linearly: wazero's optimising compiler is
// quadratic in a function's blocks), so without them a module of a few
// kilobytes can hold the host for minutes. The defaults are several times
// what real toolchains emit; the test behind each is in docs/security.md.
type Structure struct {
	// Functions is the most functions, imported and defined.
	Functions int
	// FunctionSize is the largest function body, in bytes.
	FunctionSize int64
	// CodeSize is the most bytes of function bodies in all.
	CodeSize int64
	// Nesting is the deepest nesting of blocks, loops, ifs and trys in a
	// function.
	Nesting int
	// LoopNesting is the deepest nesting of loops in a function: the
	// compiler's work grows faster than the square of it (10,000 nested
	// loops: 91 s of CPU, 1,000: 0.2 s).
	LoopNesting int
	// FunctionBlocks is the most blocks, loops, ifs and trys one function
	// may have.
	FunctionBlocks int
	// ControlCost bounds the sum over all functions of the square of
	// their block count, a loop counted twice: the superlinear part of the
	// compiler's work, about 3e-8 s of CPU a unit (so the default is some
	// 8 s of CPU at worst, metered).
	ControlCost int64
	// BrTableTargets is the most labels one br_table may list.
	BrTableTargets int
	// ElementEntries is the most entries of all element segments together
	// (each costs host memory in every instance).
	ElementEntries int
	// DataSegments is the most data segments (each costs host memory in
	// every instance). The decoder's own limit is 100,000.
	DataSegments int

	// The bounds below were found by a generator sweep over wazero 1.12's
	// compiler (internal/modcheck's TestCompileCostAtLimits); each cost
	// counts what the compiler does, not what the module spends bytes on,
	// because a few bytes of declaration multiply against the rest.

	// Globals is the most globals a module may define. Every instance
	// holds each one, and every function's compilation declares each one.
	Globals int
	// GlobalCost bounds the sum over functions of the globals they declare
	// (all of them) plus the mutable globals times the function's call
	// sites: wazero reloads every mutable global after every call (what a
	// module at the bound and one past it cost is measured in
	// docs/security.md, the global-cost row). The meter's two mutable
	// globals and its refuel call (one per loop and function entry) are
	// counted, since the metered module is what compiles.
	GlobalCost int64
	// Locals is the most locals, parameters included, of all functions
	// together: each is a zero constant at its function's entry (about
	// 0.2 µs and 70 bytes a local).
	Locals int64
	// LocalCost bounds the sum over functions of the square of their
	// locals (parameters and the meter's counter included) times their
	// blocks plus one: wazero's SSA construction puts a phi for every
	// local read after a merge and resolves them in time quadratic in the
	// locals (50,000 locals and 20 blocks in one function: 85 s). About
	// 2.4e-9 s of CPU a unit.
	LocalCost int64
	// BrTableCost bounds the sum over all br_tables of the square of
	// their label count: wazero lowers a br_table in time quadratic in its
	// labels (65,536 labels: 3.4 s each). About 1e-9 s a unit; the
	// default admits one br_table of BrTableTargets labels.
	BrTableCost int64
	// BranchValues bounds the values all branches carry together: the sum
	// over every branch (br, br_if, br_on_null, br_on_non_null, and each
	// label of a br_table, its default included) of its target's arity.
	// wazero passes each value on each edge (4,000 br_ifs out of a block
	// of 1,000 results: 16 KB, 10.7 s; a br_table of 16,000 labels to it:
	// 39 s). About 2.7e-9 s a value.
	BranchValues int64
	// Types is the most function types. The compiling Runtime keeps each
	// distinct one for its life, accepted or not (about 120 bytes a type
	// and 18 a value: docs/security.md, "Known gaps"), so with TypeValues
	// this bounds what one upload leaves behind.
	Types int
	// TypeArity is the most parameters, and the most results, of one
	// function type (1,000 in V8 and SpiderMonkey).
	TypeArity int
	// TypeValues is the most parameters and results of all function types
	// together: both of wazero's compilers work on each type in time that
	// grows faster than its arity (10,000 types of 1,000 parameters: 32 s
	// and 1 GB; 1,000 of them: 2.9 s).
	TypeValues int
	// TableElements is the most elements the module's tables may start
	// with, all tables together. wazero keeps a table on the Go heap (8
	// bytes an element), allocated at every instantiation, so without
	// this a 30M-element table made each call allocate 240 MB that the
	// garbage collector returned only later (60 calls: 4.25 GB of RSS
	// with 2 instances at a time). Growth at run time is charged to the
	// call's memory limit instead (TableElementBytes).
	TableElements int64
}

// DefaultStructure returns the default structural bounds. The official Go
// MCP SDK's 14 MB module, the largest real guest measured, has 7,678
// functions, 8.7 MB of code, a largest body of 79 KB, nesting 1,362 (loops
// never nested), 1,850 blocks in its largest function, a control cost of 2.9e7, a br_table of
// 2,188 labels, 7,678 element entries and 100,000 data segments (Go's
// linker stops there, at the limit V8 enforces); 8 globals, a global cost
// of 8.8e5, 41,620 locals, a local cost of 1.8e7, a br_table cost of
// 4.0e7, 17 types (64 parameters and results in all) and a table of
// 11,774 elements. No real guest's branches carry more than 119 values in
// all, and none has more than 132 type values. Each default is several times the largest real figure and
// costs at most a few seconds and under a gigabyte to compile
// (docs/security.md has the table).
func DefaultStructure() Structure {
	return Structure{
		Functions:      100_000,
		FunctionSize:   2 * MiB,
		CodeSize:       32 * MiB,
		Nesting:        10_000,
		LoopNesting:    1_000,
		FunctionBlocks: 20_000,
		ControlCost:    250_000_000,
		BrTableTargets: 65_536,
		ElementEntries: 1_000_000,
		DataSegments:   100_000,
		Globals:        10_000,
		GlobalCost:     4_000_000,
		Locals:         1_000_000,
		LocalCost:      1_000_000_000,
		BrTableCost:    5_000_000_000,
		BranchValues:   1_000_000,
		Types:          1_000,
		TypeArity:      1_000,
		TypeValues:     10_000,
		TableElements:  DefaultTableElements,
	}
}

// DefaultTableElements is the default of Structure.TableElements, and
// the most elements an instance's tables may grow to at run time, all
// grown tables together (table.grow beyond it gets -1): a table costs the
// host 8 bytes an element on the Go heap, times the collector's headroom
// (GOGC), which the memory limit cannot see.
const DefaultTableElements = 1_000_000

// TableElementBytes is what one table element costs the instance's memory
// budget: a table is a slice of 8-byte references in the host. Tables
// declared at upload and tables grown at run time are both charged.
const TableElementBytes = 8

// DefaultFuel is the default instruction budget: a well-behaved call
// never meets it, and a runaway loop stops within seconds even when its
// call timeout is long. What it is in seconds of computation and in calls
// of a real server is measured in docs/RATIONALE.md ("How is fuel
// injected, and why not WithCloseOnContextDone?").
const DefaultFuel uint64 = 100_000_000_000

// Default returns the limits of docs/abi.md §9.
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
		CompileTimeout:   5 * time.Minute,
		Structure:        DefaultStructure(),
	}
}

// DefaultMaxEntries is the default of MaxEntries: far more than a tool's
// scratch files need, and few enough that the volume's cleanup stays in
// the tens of milliseconds (a guest with no cap made 342,847 directories
// in 10 s, and removing a million took the host 110 s).
const DefaultMaxEntries = 10_000

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
		{"compile timeout", int64(l.CompileTimeout)},
		{"function count limit", int64(l.Structure.Functions)},
		{"function size limit", l.Structure.FunctionSize},
		{"code size limit", l.Structure.CodeSize},
		{"nesting limit", int64(l.Structure.Nesting)},
		{"loop nesting limit", int64(l.Structure.LoopNesting)},
		{"blocks per function limit", int64(l.Structure.FunctionBlocks)},
		{"control cost limit", l.Structure.ControlCost},
		{"br_table size limit", int64(l.Structure.BrTableTargets)},
		{"element entries limit", int64(l.Structure.ElementEntries)},
		{"data segments limit", int64(l.Structure.DataSegments)},
		{"globals limit", int64(l.Structure.Globals)},
		{"global cost limit", l.Structure.GlobalCost},
		{"locals limit", l.Structure.Locals},
		{"local cost limit", l.Structure.LocalCost},
		{"br_table cost limit", l.Structure.BrTableCost},
		{"branch values limit", l.Structure.BranchValues},
		{"types limit", int64(l.Structure.Types)},
		{"type arity limit", int64(l.Structure.TypeArity)},
		{"type values limit", int64(l.Structure.TypeValues)},
		{"table elements limit", l.Structure.TableElements},
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
