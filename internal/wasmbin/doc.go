// Package wasmbin decodes WebAssembly binaries: the header, the section
// sequence with offsets, the module's sections into plain structs, and the
// instructions of function bodies one at a time.
//
// It exists because the upload checks need precise answers wazero does not
// give (a component, a reactor, legacy exception handling), and because the
// fuel rewriter needs every instruction's offset and immediates to insert
// code at block boundaries. It decodes; it does not type-check: validation
// stays with wazero's compiler.
//
// Untrusted input is the normal case: no input makes it panic, every error is
// an *Error carrying the byte offset where decoding stopped, and allocations
// are bounded by the input's size (a vector count is never trusted beyond the
// bytes that could hold it) and by the implementation limits (Max*, wrapped
// as ErrLimit) for vectors whose decoded entries are many times larger than
// their encoding.
package wasmbin
