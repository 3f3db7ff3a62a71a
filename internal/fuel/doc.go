// Package fuel meters WebAssembly guests with a deterministic instruction
// budget and gives the host a cheap, regular way back into Go.
//
// Instrument rewrites a module once, before compilation: it imports
// subako_fuel.refuel (i64) -> i64, adds a mutable i64 global exported as
// subako_fuel_counter, and charges the static cost of every straight-line
// segment at the segment's start (function entry, loop header, if/else arms,
// after every block end and br_if). Each charge subtracts from the counter;
// when the counter goes negative the guest calls refuel, which is where the
// host checks the call's deadline and budget and either grants the next
// slice or ends the instance. memory.grow, memory.fill, memory.copy,
// memory.init and the table bulk instructions are also charged by size, at
// run time, before they execute.
//
// The cost model: every instruction executed costs 1; an instruction
// skipped by a taken branch costs nothing (the end a br jumps past is not
// executed). Additionally memory.fill/copy/init cost 1 per BulkBytesPerFuel
// bytes, memory.grow costs PageCost per page asked for (even when the grow
// fails), and table.grow/fill/copy/init cost 1 per element. A segment is
// charged whole before it runs, so a trap in the middle of a segment has
// paid for the rest of it: same module, same input, same fuel.
//
// The rewriter files (instrument.go, code.go, names.go) are pure Go; the
// host side (meter.go) is the only file that imports wazero.
package fuel
