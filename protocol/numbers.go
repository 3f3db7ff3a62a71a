package protocol

import (
	"fmt"
	"strconv"
)

// Bounds on the JSON numbers the host hands to the schema validator. It
// converts every number it checks through big.Rat, whose decimal
// conversion is quadratic in the digits (a million digits: 2.8 s of host
// CPU) and linear in the exponent (1e999999: 64 ms, for 9 bytes of JSON);
// a module's structuredContent, or its schemas, could otherwise spend
// minutes of host CPU after the call's deadline. No JSON encoder writes a
// float64 longer than 25 characters or with an exponent beyond ±324, so
// the bounds refuse nothing a real tool sends.
const (
	maxNumberText     = 1000
	maxNumberExponent = 400
)

// checkNumbers finds the first number in the JSON text raw (valid or not)
// that is over the bounds, in one linear pass that skips strings.
func checkNumbers(raw []byte) error {
	inString := false
	for i := 0; i < len(raw); i++ {
		c := raw[i]
		if inString {
			switch c {
			case '\\':
				i++
			case '"':
				inString = false
			}
			continue
		}
		if c == '"' {
			inString = true
			continue
		}
		if c != '-' && !isDigit(c) {
			continue
		}
		j := i + 1
		for j < len(raw) && isNumberByte(raw[j]) {
			j++
		}
		tok := raw[i:j]
		if len(tok) > maxNumberText {
			return fmt.Errorf("a number of %d characters (starting %s) is longer than the %d the host checks", len(tok), quoteShort(string(tok), 24), maxNumberText)
		}
		if e, ok := exponent(tok); !ok || e > maxNumberExponent || e < -maxNumberExponent {
			return fmt.Errorf("the number %s has an exponent beyond ±%d, past any float64", quoteShort(string(tok), 40), maxNumberExponent)
		}
		i = j - 1
	}
	return nil
}

func isNumberByte(c byte) bool {
	return isDigit(c) || c == '.' || c == 'e' || c == 'E' || c == '+' || c == '-'
}

// exponent returns the exponent of a number token (0 without one, or when
// it is malformed: the JSON parser reports that); false when its magnitude
// is too large to convert.
func exponent(tok []byte) (int, bool) {
	for k := range tok {
		if tok[k] != 'e' && tok[k] != 'E' {
			continue
		}
		t := tok[k+1:]
		neg := len(t) > 0 && t[0] == '-'
		if len(t) > 0 && (t[0] == '-' || t[0] == '+') {
			t = t[1:]
		}
		for len(t) > 1 && t[0] == '0' {
			t = t[1:]
		}
		if len(t) > 9 {
			return 0, false
		}
		e, err := strconv.Atoi(string(t))
		if err != nil {
			return 0, true
		}
		if neg {
			e = -e
		}
		return e, true
	}
	return 0, true
}
