package protocol

import (
	"encoding/json"
	"math/big"
	"strings"
	"testing"
)

func mustID(t testing.TB, text string) ID {
	t.Helper()
	var id ID
	if err := json.Unmarshal([]byte(text), &id); err != nil {
		t.Fatalf("unmarshal %s: %v", text, err)
	}
	return id
}

func TestIDEqualityIsByJSONValue(t *testing.T) {
	tests := []struct {
		a, b  string
		equal bool
	}{
		{`1`, `1`, true},
		{`1`, `"1"`, false},
		{`"a"`, `"a"`, true},
		{`"A"`, `"\u0041"`, true},
		{`"a"`, `"A"`, false},
		{`""`, `0`, false},
		{`1`, `1.0`, true},
		{`1`, `1e0`, true},
		{`1`, `10e-1`, true},
		{`100`, `1E2`, true},
		{`100`, `1e+2`, true},
		{`0`, `-0`, true},
		{`0`, `0.000`, true},
		{`0`, `0e99`, true},
		{`-1`, `1`, false},
		{`1.5`, `15e-1`, true},
		{`1.5`, `1.50`, true},
		{`1.5`, `1.05`, false},
		{`12345678901234567890123`, `12345678901234567890123`, true},
		{`12345678901234567890123`, `12345678901234567890124`, false},
		{`12345678901234567890123`, `1.2345678901234567890123e22`, true},
		// Equal as float64, different as numbers: must differ.
		{`9007199254740993`, `9007199254740992`, false},
		{`1e400`, `1e400`, true},
		{`1e400`, `1e401`, false},
		{`1e99999999999999999999`, `10e99999999999999999998`, true},
		{`1e99999999999999999999`, `1e99999999999999999998`, false},
		{`null`, `null`, true},
		{`null`, `"null"`, false},
	}
	for _, tt := range tests {
		a, b := mustID(t, tt.a), mustID(t, tt.b)
		if got := a.Key() == b.Key(); got != tt.equal {
			t.Errorf("%s vs %s: equal = %v, want %v (keys %q %q)", tt.a, tt.b, got, tt.equal, a.Key(), b.Key())
		}
		if a.Equal(b) != tt.equal {
			t.Errorf("%s.Equal(%s) disagrees with Key", tt.a, tt.b)
		}
	}
}

func TestIDConstructorsMatchParsedIDs(t *testing.T) {
	if IntID(42).Key() != mustID(t, "42").Key() {
		t.Error("IntID(42) differs from parsed 42")
	}
	if IntID(-7).Key() != mustID(t, "-7.0").Key() {
		t.Error("IntID(-7) differs from parsed -7.0")
	}
	if StringID("42").Key() == IntID(42).Key() {
		t.Error(`StringID("42") equals IntID(42)`)
	}
	big, err := NumberID("12345678901234567890123")
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := big.MarshalJSON(); string(got) != "12345678901234567890123" {
		t.Errorf("big id marshals as %s", got)
	}
	if NullID().Key() != mustID(t, "null").Key() || !NullID().IsNull() {
		t.Error("NullID does not match parsed null")
	}
}

func TestIDRejectsNonScalarJSON(t *testing.T) {
	for _, in := range []string{`{}`, `[]`, `[1]`, `true`, `false`, `01`, `1.`, `.5`, `+1`, `1e`, `0x10`, `"\x"`, ``, `NaN`} {
		var id ID
		if err := id.UnmarshalJSON([]byte(in)); err == nil {
			t.Errorf("UnmarshalJSON(%s) = %v, want error", in, id)
		}
	}
	if _, err := NumberID("1 "); err == nil {
		t.Error(`NumberID("1 ") accepted trailing space`)
	}
}

func TestIDMarshalRoundTrip(t *testing.T) {
	for _, id := range []ID{StringID("call-1"), StringID("é\"\n<&>"), IntID(0), IntID(-9223372036854775808), NullID(), mustID(t, "1.5e3")} {
		b, err := json.Marshal(id)
		if err != nil {
			t.Fatalf("marshal %v: %v", id, err)
		}
		back := mustID(t, string(b))
		if back.Key() != id.Key() {
			t.Errorf("%v round-trips to %v", id, back)
		}
		if id.String() != string(b) && !strings.Contains(string(b), `\u003c`) {
			t.Errorf("String() = %s, JSON = %s", id.String(), b)
		}
	}
	if _, err := json.Marshal(ID{}); err == nil {
		t.Error("marshalling the zero ID succeeded")
	}
}

func TestRandomIDsAreSafeAndDistinct(t *testing.T) {
	seen := map[string]bool{}
	ints := map[string]bool{}
	high := 0
	for range 1000 {
		id := RandomIntID()
		n, err := id.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		v, ok := new(big.Int).SetString(string(n), 10)
		if !ok || v.Sign() <= 0 || v.Cmp(big.NewInt(MaxIntID)) > 0 {
			t.Fatalf("RandomIntID() = %s, want 1..2^31-1", n)
		}
		if v.Cmp(big.NewInt(1<<30)) > 0 {
			high++
		}
		ints[id.Key()] = true
		s := RandomStringID("call")
		if !strings.HasPrefix(s.String(), `"call-`) {
			t.Fatalf("RandomStringID = %s", s)
		}
		if seen[s.Key()] {
			t.Fatalf("repeated id %v", s)
		}
		seen[s.Key()] = true
	}
	// 31 random bits: two of 1000 draws are alike about once in 4,300
	// runs, ten never; and the top bit is used.
	if len(ints) < 990 || high == 0 {
		t.Errorf("1000 integer ids: %d distinct, %d above 2^30", len(ints), high)
	}
}

// FuzzIDKey checks that number keys agree with exact rational comparison.
func FuzzIDKey(f *testing.F) {
	for _, p := range [][2]string{{"1", "1.0"}, {"1e2", "100"}, {"-0", "0"}, {"12345678901234567890123", "1.2345678901234567890123e22"}, {"0.1", "1e-1"}, {"5", "6"}} {
		f.Add(p[0], p[1])
	}
	f.Fuzz(func(t *testing.T, a, b string) {
		ia, errA := NumberID(a)
		ib, errB := NumberID(b)
		if errA != nil || errB != nil {
			return
		}
		if len(a) > 200 || len(b) > 200 || hugeExp(a) || hugeExp(b) {
			return // big.Rat would take too long; the key itself is fine
		}
		ra, okA := new(big.Rat).SetString(a)
		rb, okB := new(big.Rat).SetString(b)
		if !okA || !okB {
			t.Fatalf("big.Rat rejects a valid JSON number %q or %q", a, b)
		}
		if (ra.Cmp(rb) == 0) != (ia.Key() == ib.Key()) {
			t.Fatalf("%s vs %s: rat equal %v, keys %q %q", a, b, ra.Cmp(rb) == 0, ia.Key(), ib.Key())
		}
	})
}

func hugeExp(s string) bool {
	i := strings.IndexAny(s, "eE")
	return i >= 0 && len(strings.TrimLeft(s[i+1:], "+-0")) > 3
}
