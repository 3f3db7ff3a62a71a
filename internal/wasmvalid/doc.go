// Package wasmvalid validates a WebAssembly module with wazero's own
// decoder and validator, without compiling it.
//
// wazero validates a module only as the first step of compiling it, and
// the host needs the verdict on the module as uploaded, whose compilation
// it would throw away (it runs the metered module). Validate stops
// wazero's compilation once the module is validated, before the engine
// lowers a single function (what that saves is measured in
// docs/RATIONALE.md, "Why two lines for the time limit…").
// It does so on a wazero runtime made for the one module and closed after,
// so that nothing of an upload stays behind. Both are wazero's internal
// order, not its API: TestWazeroVersionIsTheOneValidated fails when go.mod
// moves to another wazero, and says what to re-check.
//
// It is a package of its own because both the upload (internal/compile)
// and the compile-cost sweep (internal/modcheck's tests) must validate
// exactly alike, and the sweep cannot import the compiler.
package wasmvalid
