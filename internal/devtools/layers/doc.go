// Package layers holds the test that keeps the import rule of
// docs/ARCHITECTURE.md true: imports flow down the layers of the layout
// (cmd → its front-ends → conformance, otelobserver → runtime → the
// machinery under internal/ → the host modules and binary tools → the pure-Go
// leaves protocol, limits, abi, wasmbin, text), the leaves never reach
// wazero, no package under internal/ imports runtime even in its tests, and
// only tests and the dev tools import the dev tools.
//
// It reads the import graph with go list, so it judges what the compiler
// sees (build tags and all) and needs no list of files kept by hand. It is a
// dev tool: nothing imports it.
package layers
