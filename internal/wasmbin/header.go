package wasmbin

import "bytes"

// Magic is the first four bytes of every WebAssembly binary.
const Magic = "\x00asm"

// HeaderSize is the length of the magic plus the version/layer field.
const HeaderSize = 8

// Header is the version and layer of a binary. A core module is version 1,
// layer 0; the component model uses layer 1 (currently version 0x0d).
type Header struct {
	Version uint16
	Layer   uint16
}

// ParseHeader reads the 8-byte header. It fails with ErrNotWasm for a bad
// magic or a short input, with ErrComponent for a component-model layer,
// and with a plain *Error for a core version other than 1.
func ParseHeader(b []byte) (Header, error) {
	if len(b) == 0 {
		return Header{}, errAt(0, ErrNotWasm, "the file is empty")
	}
	n := min(len(b), 4)
	if !bytes.Equal(b[:n], []byte(Magic)[:n]) {
		return Header{}, errAt(0, ErrNotWasm, "the file does not start with the WebAssembly magic bytes 00 61 73 6d (\\0asm)")
	}
	if len(b) < HeaderSize {
		return Header{}, errAt(len(b), ErrNotWasm, "the file ends inside the 8-byte WebAssembly header (%d bytes)", len(b))
	}
	h := Header{
		Version: uint16(b[4]) | uint16(b[5])<<8,
		Layer:   uint16(b[6]) | uint16(b[7])<<8,
	}
	if h.Layer == 1 {
		return h, errAt(4, ErrComponent, "component-model header (version 0x%x, layer 1)", h.Version)
	}
	if h.Layer != 0 || h.Version != 1 {
		return h, errAt(4, nil, "unsupported WebAssembly version %d (layer %d); a core module is version 1", h.Version, h.Layer)
	}
	return h, nil
}
