package wasmbin

import (
	"strings"
	"testing"
)

// A function may not declare more than MaxFunctionLocals locals: the count
// costs the module a few bytes and a compiler gigabytes.
func TestDecodeRefusesTooManyLocals(t *testing.T) {
	body := func(count uint32) []byte {
		b := []byte{1} // one group of locals
		b = AppendU32(b, count)
		b = append(b, 0x7f, 0x0b) // i32, end
		return b
	}
	module := func(count uint32) []byte {
		m := []byte("\x00asm\x01\x00\x00\x00")
		m = append(m, 1, 4, 1, 0x60, 0, 0) // type section: () -> ()
		m = append(m, 3, 2, 1, 0)          // function section
		b := body(count)
		code := AppendU32([]byte{1}, uint32(len(b)))
		code = append(code, b...)
		m = append(m, 10)
		m = AppendU32(m, uint32(len(code)))
		return append(m, code...)
	}
	if _, err := Decode(module(MaxFunctionLocals)); err != nil {
		t.Fatalf("%d locals refused: %v", MaxFunctionLocals, err)
	}
	_, err := Decode(module(1 << 31))
	if err == nil || !strings.Contains(err.Error(), "locals") {
		t.Fatalf("2^31 locals: %v", err)
	}
}
