package protocol

import (
	"math/big"
	"runtime"
	"strconv"
	"strings"
	"testing"
)

// hugeExponentLine is a response whose id is 1e followed by n digits.
func hugeExponentLine(n int) []byte {
	return []byte(`{"jsonrpc":"2.0","id":1e` + strings.Repeat("7", n) + `,"result":{}}`)
}

// TestHugeExponentIDIsLinear: a response id of "1e" and 8 million digits
// (issue 17: 135 s of host CPU through big.Int, inside fd_write) is parsed
// as a response with a number id that is not the request's, so the host
// calls it unexpected_id, and parsing it allocates a small multiple of the
// line's size (big.Int's conversion allocated over 2,000 bytes a digit
// already at a million digits, growing with the length).
func TestHugeExponentIDIsLinear(t *testing.T) {
	const digits = 8 << 20
	line := hugeExponentLine(digits)
	sent := IntID(1)
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	msg, err := Classify(line)
	runtime.ReadMemStats(&after)
	if err != nil {
		t.Fatalf("Classify: %v", err)
	}
	if msg.Kind != KindResponse || !msg.ID.isNumber() {
		t.Fatalf("kind %v, id %s: want a response with a number id", msg.Kind, shortID(msg.ID))
	}
	if msg.ID.Equal(sent) {
		t.Fatal("1e<8M digits> equals the id 1")
	}
	if e := ErrUnexpectedIDFor(msg.ID, sent.Key(), false); e.Code != CodeUnexpectedID || len(e.Message) > 1024 {
		t.Fatalf("crash %s, %d bytes of message: want unexpected_id, bounded", e.Code, len(e.Message))
	}
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 32*uint64(len(line)) {
		t.Fatalf("parsing a %d-byte line allocated %d bytes", len(line), alloc)
	}
}

// TestHugeExponentsCompareExactly: over-long exponents are compared by
// exact value, not truncated or rounded.
func TestHugeExponentsCompareExactly(t *testing.T) {
	n := 100_000
	nines := strings.Repeat("9", n)
	tests := []struct {
		a, b  string
		equal bool
	}{
		{"1e1" + strings.Repeat("0", n), "10e" + nines, true}, // 10^(10^n) twice
		{"1e1" + strings.Repeat("0", n), "1e" + nines, false},
		{"1e-1" + strings.Repeat("0", n), "0.1e-" + nines, true},
		{"123.456e" + nines, "123456e" + nines[:n-1] + "6", true},
		{"1e+" + nines, "1e" + nines, true},
		{"1e-" + nines, "1e" + nines, false},
		{"1e" + strings.Repeat("0", n) + "5", "100000", true}, // leading zeros
	}
	for _, tt := range tests {
		a, err := NumberID(tt.a)
		if err != nil {
			t.Fatal(err)
		}
		b, err := NumberID(tt.b)
		if err != nil {
			t.Fatal(err)
		}
		if a.Equal(b) != tt.equal {
			t.Errorf("%.20s… vs %.20s…: equal %v, want %v", tt.a, tt.b, !tt.equal, tt.equal)
		}
	}
}

// FuzzAddToDecimal checks the linear exponent arithmetic against big.Int.
func FuzzAddToDecimal(f *testing.F) {
	f.Add(false, "100000000000000000000", int64(-1))
	f.Add(true, "100000000000000000000", int64(-1))
	f.Add(false, "999999999999999999999", int64(1))
	f.Add(true, "123456789012345678901234", int64(-98765))
	f.Add(false, "100000000000000000", int64(-99999999999999999))
	f.Fuzz(func(t *testing.T, neg bool, digits string, adjust int64) {
		digits = strings.TrimLeft(digits, "0")
		if len(digits) <= 17 || len(digits) > 2000 || strings.Trim(digits, "0123456789") != "" {
			return
		}
		if adjust <= -1e17 || adjust >= 1e17 {
			return // the precondition: adjust is smaller than the value
		}
		want, _ := new(big.Int).SetString(digits, 10)
		if neg {
			want.Neg(want)
		}
		want.Add(want, big.NewInt(adjust))
		if got := addToDecimal(neg, digits, adjust); got != want.String() {
			t.Fatalf("%v %s %+d: got %s, want %s", neg, digits, adjust, got, want)
		}
	})
}

// BenchmarkHugeExponentID parses ids of 1e and 1, 2, 4 and 8 million
// digits: ns/op doubles with the length (it was quadratic).
func BenchmarkHugeExponentID(b *testing.B) {
	for _, m := range []int{1, 2, 4, 8} {
		line := hugeExponentLine(m << 20)
		b.Run(strconv.Itoa(m)+"M", func(b *testing.B) {
			b.SetBytes(int64(len(line)))
			for b.Loop() {
				if _, err := Classify(line); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
