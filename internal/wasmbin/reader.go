package wasmbin

import (
	"errors"
	"unicode/utf8"
)

// reader walks a byte slice that starts at absolute module offset base, so
// every error it makes names the absolute offset.
type reader struct {
	b    []byte
	pos  int
	base int
}

func (r *reader) off() int       { return r.base + r.pos }
func (r *reader) remaining() int { return len(r.b) - r.pos }

func (r *reader) lebErr(err error, what string) *Error {
	if errors.Is(err, ErrUnexpectedEnd) {
		return &Error{Offset: r.base + len(r.b), Msg: "unexpected end while reading " + what, Err: ErrUnexpectedEnd}
	}
	return &Error{Offset: r.off(), Msg: "bad " + what + ": " + err.Error(), Err: err}
}

func (r *reader) byte(what string) (byte, error) {
	if r.pos >= len(r.b) {
		return 0, &Error{Offset: r.off(), Msg: "unexpected end while reading " + what, Err: ErrUnexpectedEnd}
	}
	c := r.b[r.pos]
	r.pos++
	return c, nil
}

func (r *reader) u32(what string) (uint32, error) {
	if r.pos < len(r.b) && r.b[r.pos] < 0x80 {
		v := uint32(r.b[r.pos])
		r.pos++
		return v, nil
	}
	v, n, err := readUnsigned(r.b[r.pos:], 32)
	if err != nil {
		return 0, r.lebErr(err, what)
	}
	r.pos += n
	return uint32(v), nil
}

func (r *reader) u64(what string) (uint64, error) {
	v, n, err := ReadU64(r.b[r.pos:])
	if err != nil {
		return 0, r.lebErr(err, what)
	}
	r.pos += n
	return v, nil
}

func (r *reader) s33(what string) (int64, error) {
	if r.pos < len(r.b) && r.b[r.pos] < 0x80 {
		c := r.b[r.pos]
		r.pos++
		return int64(c) - int64(c&0x40)<<1, nil
	}
	v, n, err := readSigned(r.b[r.pos:], 33)
	if err != nil {
		return 0, r.lebErr(err, what)
	}
	r.pos += n
	return v, nil
}

func (r *reader) bytes(n int, what string) ([]byte, error) {
	if n < 0 || n > r.remaining() {
		return nil, &Error{Offset: r.off(), Msg: "unexpected end while reading " + what, Err: ErrUnexpectedEnd}
	}
	s := r.b[r.pos : r.pos+n : r.pos+n]
	r.pos += n
	return s, nil
}

// count reads a vector length and refuses one that the remaining bytes
// cannot hold (each item takes at least minSize bytes), so a forged count
// never drives an allocation.
func (r *reader) count(what string, minSize int) (int, error) {
	at := r.off()
	n, err := r.u32(what + " count")
	if err != nil {
		return 0, err
	}
	if uint64(n)*uint64(minSize) > uint64(r.remaining()) {
		return 0, errAt(at, ErrUnexpectedEnd, "%s count %d is larger than the %d bytes left can hold", what, n, r.remaining())
	}
	return int(n), nil
}

// countMax is count with an implementation limit: a vector longer than max
// is refused (wrapping ErrLimit) before anything is allocated for it.
func (r *reader) countMax(what string, minSize, max int) (int, error) {
	at := r.off()
	n, err := r.count(what, minSize)
	if err != nil {
		return 0, err
	}
	if n > max {
		return 0, errAt(at, ErrLimit, "%s count %d is above the limit of %d", what, n, max)
	}
	return n, nil
}

func (r *reader) name(what string) (string, error) {
	at := r.off()
	n, err := r.u32(what + " length")
	if err != nil {
		return "", err
	}
	b, err := r.bytes(int(n), what)
	if int(n) < 0 || err != nil {
		return "", errAt(at, ErrUnexpectedEnd, "%s length %d runs past the end", what, n)
	}
	if !utf8.Valid(b) {
		return "", errAt(at, nil, "%s is not valid UTF-8", what)
	}
	return string(b), nil
}
