// Package limits holds the resource limits of one subako-runner call or
// discovery run, with the defaults of ABI 1, the bounds of an upload (the
// module's size, its structure and its compile time), and the per-call
// accounts that enforce them across the host modules (the write budget).
//
// It is pure Go: no package here imports wazero, so the limits can be parsed,
// stored and compared by code that never runs a module.
package limits
