// Package compile turns a module as uploaded into machine code the
// runtime can instantiate: it validates the module in full (wazero's
// validator, on the module before the fuel rewriter touches it), meters
// it (internal/fuel), and compiles the result on a goroutine of its own
// so that the caller's context and the compile timeout bound the wait. It
// also keeps the host's faults the host's: compilations of the same bytes
// take turns (wazero's file cache publishes a module half-built), and a
// damaged cache entry is replaced, never reported as the module's fault.
//
// It is apart from the runtime because it is one job with its own
// failure modes and tests; the runtime turns its Rejected into the
// embedder's *RejectedError.
package compile
