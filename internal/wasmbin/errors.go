package wasmbin

import (
	"errors"
	"fmt"
)

// Sentinel causes an *Error can wrap; test them with errors.Is.
var (
	// ErrNotWasm: the bytes do not start with a WebAssembly header (bad
	// magic, empty, or shorter than the 8-byte header).
	ErrNotWasm = errors.New("not a WebAssembly binary")
	// ErrComponent: the header is a component-model header (layer 1), not a
	// core module.
	ErrComponent = errors.New("WebAssembly component, not a core module")
	// ErrUnexpectedEnd: the input ends inside a construct.
	ErrUnexpectedEnd = errors.New("unexpected end")
	// ErrLEBTooLong: a LEB128 integer uses more bytes than its type allows.
	ErrLEBTooLong = errors.New("integer representation too long")
	// ErrLEBTooLarge: a LEB128 integer's final byte has bits beyond its type.
	ErrLEBTooLarge = errors.New("integer too large")
	// ErrUnknownOpcode: an instruction opcode this decoder does not know.
	ErrUnknownOpcode = errors.New("unknown opcode")
	// ErrLimit: the module is well formed but over one of the decoder's
	// implementation limits (see Max*): a count that would make the host
	// allocate far more than the module's own size.
	ErrLimit = errors.New("over an implementation limit")
)

// Error is a decoding failure at a byte offset of the module (offsets are
// absolute: 0 is the first byte of the magic).
type Error struct {
	Offset int
	Msg    string
	// Err is one of the sentinel errors above, or nil.
	Err error
}

// Error renders "at offset 0x1f: message".
func (e *Error) Error() string {
	return fmt.Sprintf("at offset 0x%x: %s", e.Offset, e.Msg)
}

// Unwrap lets errors.Is find the sentinel cause.
func (e *Error) Unwrap() error { return e.Err }

func errAt(off int, cause error, format string, args ...any) *Error {
	return &Error{Offset: off, Msg: fmt.Sprintf(format, args...), Err: cause}
}
