package protocol

import (
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

type idKind uint8

const (
	idAbsent idKind = iota
	idNull
	idString
	idNumber
)

// ID is a JSON-RPC request id: a string or a number (or null, which only an
// error response may carry). Ids compare by JSON value, never by type
// conversion: the string "1" and the number 1 differ.
//
// Numbers compare by exact decimal value, so 1, 1.0, 10e-1 and 1E0 are the same
// id, and 12345678901234567890123 is kept digit for digit (never rounded
// through float64). This is the value a JSON parser of arbitrary precision
// sees; a module that echoes the id through such a parser therefore still
// matches. Strings compare by their decoded value ("\u0041" equals "A").
//
// The zero ID is "absent" (IsZero reports true) and cannot be marshalled.
type ID struct {
	kind idKind
	str  string // decoded string, or the number's JSON text
	key  string
}

// StringID returns the string id s.
func StringID(s string) ID { return stringIDFromKey("s" + s) }

// stringIDFromKey makes the string id whose key is key ("s" + the string):
// the string shares the key's bytes, one allocation instead of two.
func stringIDFromKey(key string) ID { return ID{kind: idString, str: key[1:], key: key} }

// IntID returns the integer id n.
func IntID(n int64) ID {
	t := strconv.FormatInt(n, 10)
	return ID{kind: idNumber, str: t, key: numberKey(t)}
}

// NumberID returns the number id written as the JSON number text (for
// example "12345678901234567890123" or "1.5e3"), or an error when text is not
// a JSON number.
func NumberID(text string) (ID, error) {
	if !isJSONNumber(text) {
		return ID{}, fmt.Errorf("protocol: %q is not a JSON number", text)
	}
	return ID{kind: idNumber, str: text, key: numberKey(text)}, nil
}

// NullID returns the null id, which JSON-RPC allows only in an error response
// to a request whose id could not be read.
func NullID() ID { return ID{kind: idNull, key: "null"} }

// maxSafeInt is the largest integer a float64 holds exactly: JavaScript
// servers parse ids as float64, so a larger id would come back changed.
const maxSafeInt = 1<<53 - 1

// MaxIntID is the largest integer id RandomIntID returns: 2^31-1, the
// largest signed 32-bit integer. A JSON library echoes such an id exactly
// whether it reads numbers into a 32-bit int (cJSON's valueint, a C int),
// an int64, a double (every JavaScript SDK), or prints them with 14
// significant digits (Lua's cjson); and none quotes it as a string, as
// Zig 0.11's std.json writer does from 2^52 on. Larger ids, up to 2^53-1
// and beyond, are probed by `check`, never sent in a call or discovery.
const MaxIntID = 1<<31 - 1

// RandomIntID returns an unpredictable integer id in [1, MaxIntID]: 31
// random bits, so ids still differ from call to call (docs/abi.md §3).
func RandomIntID() ID {
	var b [4]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(err) // crypto/rand never fails on supported platforms
	}
	return IntID(int64(binary.LittleEndian.Uint32(b[:])%MaxIntID) + 1)
}

// RandomStringID returns an unpredictable string id: prefix, "-", and 16 hex
// digits (for example "call-1f3a9c0d5e7b2468").
func RandomStringID(prefix string) ID {
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(err)
	}
	return StringID(prefix + "-" + hex.EncodeToString(b[:]))
}

// IsZero reports whether the id is absent (the zero ID).
func (id ID) IsZero() bool { return id.kind == idAbsent }

// IsNull reports whether the id is JSON null.
func (id ID) IsNull() bool { return id.kind == idNull }

// isString reports whether the id is a JSON string.
func (id ID) isString() bool { return id.kind == idString }

// isNumber reports whether the id is a JSON number.
func (id ID) isNumber() bool { return id.kind == idNumber }

// Key returns a canonical key for maps: two ids have the same key exactly
// when they are the same JSON value. The key is opaque; do not parse it.
func (id ID) Key() string { return id.key }

// Equal reports whether two ids are the same JSON value.
func (id ID) Equal(other ID) bool { return id.key == other.key }

// String renders the id as JSON text for messages: a quoted string, the
// number as it was written, "null", or "(no id)" for the zero ID.
func (id ID) String() string {
	switch id.kind {
	case idString:
		b, _ := json.Marshal(id.str)
		return string(b)
	case idNumber:
		return id.str
	case idNull:
		return "null"
	}
	return "(no id)"
}

// MarshalJSON renders the id as JSON; the zero ID is an error.
func (id ID) MarshalJSON() ([]byte, error) {
	switch id.kind {
	case idString:
		return json.Marshal(id.str)
	case idNumber:
		return []byte(id.str), nil
	case idNull:
		return []byte("null"), nil
	}
	return nil, errors.New("protocol: marshalling an absent id")
}

// UnmarshalJSON reads a string, number or null id; any other JSON value is an
// error.
func (id *ID) UnmarshalJSON(b []byte) error {
	v, err := parseID(b)
	if err != nil {
		return err
	}
	*id = v
	return nil
}

// parseID reads an id from JSON text already known (or not) to be valid.
func parseID(b []byte) (ID, error) {
	if p, ok := plainString(b); ok {
		return stringIDFromKey("s" + string(p)), nil
	}
	t := strings.TrimSpace(string(b))
	if t == "" {
		return ID{}, errors.New("the id is empty")
	}
	switch c := t[0]; {
	case c == '"':
		var s string
		if err := json.Unmarshal([]byte(t), &s); err != nil {
			return ID{}, fmt.Errorf("the id is not a valid JSON string: %v", err)
		}
		return StringID(s), nil
	case c == '-' || (c >= '0' && c <= '9'):
		return NumberID(t)
	case t == "null":
		return NullID(), nil
	case c == '{':
		return ID{}, errors.New("the id is an object; it must be a string or a number")
	case c == '[':
		return ID{}, errors.New("the id is an array; it must be a string or a number")
	case t == "true" || t == "false":
		return ID{}, errors.New("the id is a boolean; it must be a string or a number")
	}
	return ID{}, fmt.Errorf("the id %s is not a string or a number", quoteShort(t, 64))
}

// isJSONNumber checks the JSON number grammar:
// -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func isJSONNumber(s string) bool {
	i := 0
	if i < len(s) && s[i] == '-' {
		i++
	}
	switch {
	case i < len(s) && s[i] == '0':
		i++
	case i < len(s) && s[i] >= '1' && s[i] <= '9':
		for i < len(s) && isDigit(s[i]) {
			i++
		}
	default:
		return false
	}
	if i < len(s) && s[i] == '.' {
		i++
		if i == len(s) || !isDigit(s[i]) {
			return false
		}
		for i < len(s) && isDigit(s[i]) {
			i++
		}
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			i++
		}
		if i == len(s) || !isDigit(s[i]) {
			return false
		}
		for i < len(s) && isDigit(s[i]) {
			i++
		}
	}
	return i == len(s) && utf8.ValidString(s)
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// addToDecimal returns the decimal text of (-1 if neg) * digits + adjust,
// for digits without leading zeros and longer than 17 (so the value's
// magnitude, at least 10^17, is larger than any adjust and keeps its sign).
// The work is linear in len(digits), not big.Int's: big.Int's decimal
// conversion is quadratic in time and in allocated memory, and a guest's id
// "1e" followed by 8 million digits would cost 135 s of host CPU inside
// fd_write.
func addToDecimal(neg bool, digits string, adjust int64) string {
	// The magnitude changes by delta: away from zero when adjust has the
	// value's sign.
	delta := adjust
	if neg {
		delta = -adjust
	}
	d := make([]byte, 1, len(digits)+21)
	d[0] = '0' // room for a carry out of the top digit
	d = append(d, digits...)
	if delta >= 0 {
		c := delta
		for i := len(d) - 1; i >= 0 && c > 0; i-- {
			v := int64(d[i]-'0') + c
			d[i], c = byte('0'+v%10), v/10
		}
	} else {
		b := -delta // the magnitude is larger than b: no borrow out of the top
		for i := len(d) - 1; i >= 0 && b > 0; i-- {
			v := int64(d[i]-'0') - b
			b = 0
			if v < 0 {
				b = (-v + 9) / 10
				v += 10 * b
			}
			d[i] = byte('0' + v)
		}
	}
	out := strings.TrimLeft(string(d), "0")
	if neg {
		return "-" + out
	}
	return out
}

// numberKey canonicalises a valid JSON number to "n" + sign + significant
// digits (no leading or trailing zeros) + "e" + decimal exponent, so equal
// decimal values get equal keys. Zero (and -0) is "n0".
func numberKey(s string) string {
	neg := false
	if s[0] == '-' {
		neg = true
		s = s[1:]
	}
	mant, expText := s, ""
	if i := strings.IndexAny(s, "eE"); i >= 0 {
		mant, expText = s[:i], s[i+1:]
	}
	intPart, frac := mant, ""
	if i := strings.IndexByte(mant, '.'); i >= 0 {
		intPart, frac = mant[:i], mant[i+1:]
	}
	digits := strings.TrimLeft(intPart+frac, "0")
	if digits == "" {
		return "n0"
	}
	trimmed := strings.TrimRight(digits, "0")
	// value = digits * 10^(exp - len(frac)) = trimmed * 10^(exp - len(frac) + zeros)
	adjust := int64(len(digits)-len(trimmed)) - int64(len(frac))
	var exp string
	expNeg := strings.HasPrefix(expText, "-")
	expDigits := strings.TrimLeft(strings.TrimLeft(expText, "+-"), "0")
	if len(expDigits) <= 17 {
		var e int64
		if expDigits != "" { // ParseInt would allocate its error for ""
			e, _ = strconv.ParseInt(expDigits, 10, 64)
		}
		if expNeg {
			e = -e
		}
		exp = strconv.FormatInt(e+adjust, 10)
	} else {
		exp = addToDecimal(expNeg, expDigits, adjust)
	}
	var b strings.Builder
	b.Grow(len(trimmed) + len(exp) + 3)
	b.WriteByte('n')
	if neg {
		b.WriteByte('-')
	}
	b.WriteString(trimmed)
	b.WriteByte('e')
	b.WriteString(exp)
	return b.String()
}
