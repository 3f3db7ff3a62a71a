// Package fuel meters WebAssembly guests with a deterministic instruction
// budget and gives the host a cheap, regular way back into Go.
//
// Instrument rewrites a module once, before compilation: it imports
// subako_fuel.refuel (i64) -> i64 (appended after the imported functions,
// so every defined function's index moves up one, and calls, ref.func,
// element segments, exports, the start function and the name section are
// remapped), and appends a mutable i64 global, exported as
// subako_fuel_counter, whose low half holds the fuel left in the current
// slice (the tick, below, is its high half). The static cost of each
// straight-line segment is subtracted from the counter when the segment
// is entered: at the function entry, a loop header, an
// else arm, the code after a loop's back-edge br_if, and the code after
// the end of a block that something branches to.
//
// The tick: the global is the meter, two counters in one i64. Its low
// 32 bits are the fuel counter; its high 32 bits the tick (no instruction
// of the module as uploaded can name the global, nor the local that
// caches it: Instrument refuses local, global and type indices past the
// module's own, ErrIndex). Every check tests both sign bits. The tick is
// charged by the code's structure rather than the cost model: at each
// check, the static cost of the check's region (what can run before that
// check is passed again, the callees that do not check on entry
// included), and the dynamic cost of bulk instructions and growths;
// refuel returns both halves anew, the tick's grant 16 times the fuel's.
// Fuel is the first line of the time limit, the tick the second: a guest
// whose fuel counter was fooled still returns to Go, where the host
// checks its context and deadline, within a tick's grant, and nothing on
// the host side has to run for that (a goroutine could not, while the
// spinning guest holds up a stop-the-world). One register for both makes
// a check one subtraction and one test (see tickShift in check.go).
//
// The counter is checked only where a guest could otherwise run long: at
// loop headers and at the entries of functions that make calls (every
// unbounded execution repeats one or the other), and after a call whose
// return can run more than maxUncheckedTail before the next check (an
// unwinding recursion repeats neither, and a call stack holds millions of
// frames: tail.go). A check whose segment runs straight (no conditional,
// no call) into a nested loop's header moves to that header, so loops
// nested directly share one check: every path round any of them passes
// it, and wazero, whose compile time is quadratic in a function's blocks,
// is not handed an if/else per loop. When either half is negative the
// guest calls refuel, where the host (Meter, via the context) checks the
// deadline and budget and grants the next slice or ends the instance. At
// a loop header (of a loop without parameters) the refuel arm then
// branches back to the header, having given back what the header charges
// again, rather than falling through: the straight path then joins no
// values after the check, which measured 4% on the C benchmark.
// Functions with loops keep the meter in a local (a register) and write
// it back around calls and exits; the others use the global directly.
//
// The cost model:
//   - every instruction costs 1, charged with its segment, except block,
//     loop, nop and the end of a block, loop or if, which cost nothing
//     (they only mark structure and compile to no code; Go's output
//     re-enters a nest of one block per call site at every iteration of a
//     function's loops, so charging them would bill a busy loop of a few
//     instructions hundreds); a function's final end is its return and
//     costs 1, and every loop iteration still pays for its branch;
//   - the pieces an if (its then arm) or a forward br_if (the code after
//     it) may skip get a charge of their own when they cost more than 8;
//     a smaller piece is charged with the code before it, skipped or not
//     (per-instruction exactness there costs 5% more code, 30% longer
//     compilation and a few percent of run time on Go guests);
//   - instructions after an unconditional branch, up to the end or else
//     of their block, are dead and cost nothing;
//   - memory.fill, memory.copy and memory.init cost 1 more per
//     BulkBytesPerFuel bytes, the table bulk instructions 1 per element,
//     charged after they ran (one that traps did no work and ends the
//     instance); memory.grow costs PageCost per page and table.grow 1 per
//     element only when the growth happened: a refused growth did no work,
//     and charging what it asked for would let a guest buy seconds of
//     fuel for microseconds of time;
//   - a direct call of an imported (host) function costs ImportCallCost
//     more;
//   - a small leaf (leaf.go: at most smallLeafBytes of code, no loop, no
//     call, nothing charged by size, neither exported nor the start
//     function) charges nothing itself: every call that can reach it pays
//     its whole body, each instruction once whether it runs or not, and
//     writes nothing back for it (a call through a reference pays the
//     dearest small leaf of its type).
//
// Segments are charged before they run. Same module, same input: same
// fuel, and the budget runs out at the same point, whatever the slicing.
// The one inexactness: a trap other than unreachable loses the charges its
// function made since its last call or entry when that function keeps the
// counter in a local (still deterministic).
//
// Tables: wazero has no allocator hook for them, so in a module that uses
// table.grow the rewriter also imports subako_fuel.grow_table and puts
// every table.grow behind it; when the host (a TableBudget in the context)
// refuses, the guest gets -1 without growing, as from a failed grow.
//
// Data: Instrument also joins each run of active data segments that lie a
// few zero bytes apart into one segment, the zeroes written out (data.go).
// wazero evaluates every segment's offset at every instantiation, and Go's
// linker writes tens of thousands of segments; the instance's initial
// memory stays byte for byte the same.
//
// DWARF (.debug_*), source maps and relocation sections locate code by
// byte offset and would lie after the rewrite, so they are always dropped;
// other custom sections are kept.
//
// Host calls (hostcall.go): a call through a table or a reference of a
// type some referenceable import has pays ImportCallCost as a direct call
// does, and every call that may reach the host leaves the tick at -1, so
// the guest is back in Go at its next check, before any further host
// call, and refuel grants the initial slice again.
//
// Call depth (depth.go): a third appended global, a mutable i32, holds
// the frames an instance's stack may still take (wazero keeps the stack
// on the Go heap, counted by no limit); every function that makes calls
// takes its frame's weight off on entry, and the call fails with
// ErrCallStackExhausted when it would go below zero.
//
// The files, by job:
//   - instrument.go: the module rewrite, section by section; names.go the
//     name section, data.go the data segments;
//   - code.go: the code section, and the scan of every function's shape;
//   - rewriter.go: the state of one function's rewrite, and where its
//     meter lives (a local or the global);
//   - body.go: the walk of one body, a method per class of instruction
//     (block structure, branches, exits, calls); bulk.go the instructions
//     charged by size, and table.grow behind the host;
//   - charge.go: segments, their charges, and the tick's regions;
//     check.go: the meter's two halves and the overdraft check;
//   - leaf.go, tail.go, hostcall.go, depth.go: small leaves, checks after
//     a call's return, host calls, call depth;
//   - meter.go, stop.go: the host side, refuel and the record of why an
//     instance ended; version.go: MeteringVersion.
//
// Every file but meter.go is pure Go; meter.go is the only one that
// imports wazero.
package fuel
