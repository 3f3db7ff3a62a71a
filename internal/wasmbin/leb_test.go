package wasmbin

import (
	"bytes"
	"errors"
	"math"
	"math/rand/v2"
	"testing"
)

func TestReadLEBAcceptsSpecEncodings(t *testing.T) {
	tests := []struct {
		name string
		in   []byte
		u32  uint32
		s32  int32
		n    int
	}{
		{"zero", []byte{0x00}, 0, 0, 1},
		{"one byte max", []byte{0x7f}, 127, -1, 1},
		{"two bytes", []byte{0xe5, 0x8e, 0x26}, 624485, 624485, 3},
		{"padded zero", []byte{0x80, 0x80, 0x80, 0x80, 0x00}, 0, 0, 5},
		{"u32 max is no s32", []byte{0xff, 0xff, 0xff, 0xff, 0x0f}, math.MaxUint32, 0, 5},
		{"trailing bytes ignored", []byte{0x01, 0xff}, 1, 1, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			u, n, err := ReadU32(tt.in)
			if err != nil || u != tt.u32 || n != tt.n {
				t.Errorf("ReadU32 = %d, %d, %v; want %d, %d", u, n, err, tt.u32, tt.n)
			}
			if tt.u32 == math.MaxUint32 {
				return // its fifth byte is not a sign extension: see the malformed cases
			}
			s, n, err := ReadS32(tt.in)
			if err != nil || s != tt.s32 || n != tt.n {
				t.Errorf("ReadS32 = %d, %d, %v; want %d, %d", s, n, err, tt.s32, tt.n)
			}
		})
	}
}

func TestReadLEBRejectsMalformed(t *testing.T) {
	tests := []struct {
		name string
		read func([]byte) error
		in   []byte
		want error
	}{
		{"u32 empty", u32err, nil, ErrUnexpectedEnd},
		{"u32 truncated", u32err, []byte{0x80, 0x80}, ErrUnexpectedEnd},
		{"u32 six bytes", u32err, []byte{0x80, 0x80, 0x80, 0x80, 0x80, 0x00}, ErrLEBTooLong},
		{"u32 bit 32 set", u32err, []byte{0x80, 0x80, 0x80, 0x80, 0x10}, ErrLEBTooLarge},
		{"u64 eleven bytes", u64err, bytes.Repeat([]byte{0x80}, 11), ErrLEBTooLong},
		{"u64 bit 64 set", u64err, append(bytes.Repeat([]byte{0x80}, 9), 0x02), ErrLEBTooLarge},
		{"s32 unused bits not sign", s32err, []byte{0x80, 0x80, 0x80, 0x80, 0x70}, ErrLEBTooLarge},
		{"s32 sign set, unused bits clear", s32err, []byte{0xff, 0xff, 0xff, 0xff, 0x0f}, ErrLEBTooLarge},
		{"s32 -1 in five bytes", s32err, []byte{0xff, 0xff, 0xff, 0xff, 0x7f}, nil},
		{"s32 positive with sign garbage", s32err, []byte{0xff, 0xff, 0xff, 0xff, 0x4f}, ErrLEBTooLarge},
		{"s33 too large", s33err, []byte{0x80, 0x80, 0x80, 0x80, 0x20}, ErrLEBTooLarge},
		{"s64 last byte 0x01 not sign-extended", s64err, append(bytes.Repeat([]byte{0x80}, 9), 0x01), ErrLEBTooLarge},
		{"s64 last byte 0x7f ok", s64err, append(bytes.Repeat([]byte{0xff}, 9), 0x7f), nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.read(tt.in)
			if !errors.Is(err, tt.want) || (tt.want == nil) != (err == nil) {
				t.Fatalf("got %v, want %v", err, tt.want)
			}
		})
	}
}

func u32err(b []byte) error { _, _, err := ReadU32(b); return err }
func u64err(b []byte) error { _, _, err := ReadU64(b); return err }
func s32err(b []byte) error { _, _, err := ReadS32(b); return err }
func s33err(b []byte) error { _, _, err := ReadS33(b); return err }
func s64err(b []byte) error { _, _, err := ReadS64(b); return err }

func TestLEBRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	edge64 := []uint64{0, 1, 63, 64, 127, 128, math.MaxInt32, math.MaxUint32, 1 << 32, math.MaxInt64, math.MaxUint64, 1 << 63}
	for i := 0; i < 20000; i++ {
		var v uint64
		if i < len(edge64) {
			v = edge64[i]
		} else {
			v = rng.Uint64() >> rng.IntN(64)
		}
		if got, n, err := ReadU64(AppendU64(nil, v)); err != nil || got != v || n != len(AppendU64(nil, v)) {
			t.Fatalf("u64 %d: got %d, %d, %v", v, got, n, err)
		}
		u := uint32(v)
		if got, _, err := ReadU32(AppendU32(nil, u)); err != nil || got != u {
			t.Fatalf("u32 %d: got %d, %v", u, got, err)
		}
		if got, n, err := ReadU32(AppendU32Padded(nil, u)); err != nil || got != u || n != 5 {
			t.Fatalf("padded u32 %d: got %d, %d, %v", u, got, n, err)
		}
		s := int64(v)
		if got, _, err := ReadS64(AppendS64(nil, s)); err != nil || got != s {
			t.Fatalf("s64 %d: got %d, %v", s, got, err)
		}
		s32 := int32(v)
		if got, _, err := ReadS32(AppendS32(nil, s32)); err != nil || got != s32 {
			t.Fatalf("s32 %d: got %d, %v", s32, got, err)
		}
		s33 := int64(v<<31) >> 31
		if got, _, err := ReadS33(AppendS64(nil, s33)); err != nil || got != s33 {
			t.Fatalf("s33 %d: got %d, %v", s33, got, err)
		}
	}
}

func TestAppendLEBShortest(t *testing.T) {
	tests := []struct {
		got, want []byte
	}{
		{AppendU32(nil, 624485), []byte{0xe5, 0x8e, 0x26}},
		{AppendS64(nil, -123456), []byte{0xc0, 0xbb, 0x78}},
		{AppendS64(nil, -64), []byte{0x40}}, // the empty block type
		{AppendS64(nil, 64), []byte{0xc0, 0x00}},
		{AppendS32(nil, -1), []byte{0x7f}},
		{AppendU32Padded(nil, 1), []byte{0x81, 0x80, 0x80, 0x80, 0x00}},
	}
	for i, tt := range tests {
		if !bytes.Equal(tt.got, tt.want) {
			t.Errorf("case %d: got % x, want % x", i, tt.got, tt.want)
		}
	}
}
