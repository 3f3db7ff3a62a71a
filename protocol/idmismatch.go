package protocol

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// ErrUnexpectedIDFor is the crash for a response whose id is not the one
// the host waits for, saying both ids with their JSON types and, when the
// change is one a JSON library is known to make, which. sentKey is the Key
// of the request in flight ("" when none); answered says got was answered
// before.
func ErrUnexpectedIDFor(got ID, sentKey string, answered bool) *Error {
	sent, ok := idFromKey(sentKey)
	if !ok {
		if answered {
			return errorf(CodeUnexpectedID, "the module answered id %s a second time, when no request was waiting; answer each request exactly once", typedID(got))
		}
		return errorf(CodeUnexpectedID, "the module answered id %s, which the host never sent, when no request was waiting; answer only requests, each once", typedID(got))
	}
	if answered {
		return errorf(CodeUnexpectedID, "the module answered id %s a second time, while the host waited for the answer to id %s; answer each request exactly once", typedID(got), typedID(sent))
	}
	msg := fmt.Sprintf("the module answered id %s, but the request's id was %s", typedID(got), typedID(sent))
	if why := idChange(sent, got); why != "" {
		msg += ": " + why
	}
	return errorf(CodeUnexpectedID, "%s; copy the request's id unchanged into the response (keep it as the JSON text it came as)", msg)
}

// typedID is the id for a message with its JSON type: 12 (a number).
func typedID(id ID) string {
	switch {
	case id.isString():
		return shortID(id) + " (a string)"
	case id.isNumber():
		return shortID(id) + " (a number)"
	}
	return shortID(id)
}

// idFromKey rebuilds the id whose Key is key; the number's text may be
// another spelling of the same value (1000 for 1e3).
func idFromKey(key string) (ID, bool) {
	switch {
	case key == "":
		return ID{}, false
	case key == "null":
		return NullID(), true
	case key[0] == 's':
		return stringIDFromKey(key), true
	case key == "n0":
		return IntID(0), true
	case key[0] == 'n':
		mant, exp, ok := strings.Cut(key[1:], "e")
		if !ok {
			return ID{}, false
		}
		text := mant + "e" + exp
		if e, err := strconv.Atoi(exp); err == nil && e >= 0 && e <= 40 {
			text = mant + strings.Repeat("0", e)
		}
		id, err := NumberID(text)
		return id, err == nil
	}
	return ID{}, false
}

// idChange names what turned sent into got when it is a change JSON
// libraries are known to make; "" otherwise.
func idChange(sent, got ID) string {
	switch {
	case sent.isNumber() && got.isString():
		if n, err := NumberID(got.str); err == nil && n.Equal(sent) {
			return "the number came back as a string. A JSON writer that quotes large integers does this (Zig 0.11's std.json writes every integer from 2^52 on as a string)"
		}
	case sent.isString() && got.isNumber():
		if n, err := NumberID(sent.str); err == nil && n.Equal(got) {
			return "the string came back as a number: the JSON reader or writer converted it"
		}
	case sent.isNumber() && got.isNumber():
		return numberChange(sent, got)
	case sent.isString() && got.isString():
		switch {
		case strings.HasPrefix(sent.str, got.str):
			return fmt.Sprintf("the string was cut after %d of its %d bytes, as by a fixed-size buffer", len(got.str), len(sent.str))
		case strings.ContainsAny(sent.str, "\"\\") || hasNonASCII(sent.str):
			return "the string's escapes or non-ASCII characters changed on the way: decode \\uXXXX escapes (surrogate pairs too) and write the string back escaped as JSON"
		}
	}
	return ""
}

// numberChange recognises a number read or written by a narrower type.
func numberChange(sent, got ID) string {
	if f, err := strconv.ParseFloat(sent.str, 64); err == nil && !math.IsInf(f, 0) {
		for _, text := range []string{strconv.FormatFloat(f, 'g', -1, 64), strconv.FormatFloat(f, 'f', -1, 64)} {
			if n, err := NumberID(text); err == nil && n.Equal(got) && !n.Equal(sent) {
				return "the JSON library read the integer as a float64 (a double), which holds integers exactly only up to 2^53, and the id changed"
			}
		}
		for digits := 6; digits <= 16; digits++ {
			if n, err := NumberID(strconv.FormatFloat(f, 'g', digits, 64)); err == nil && n.Equal(got) && !n.Equal(sent) {
				return "the id was printed with fewer significant digits than it has (Lua's cjson prints 14), and lost some"
			}
		}
	}
	if f, err := strconv.ParseFloat(sent.str, 32); err == nil && !math.IsInf(f, 0) {
		if n, err := NumberID(strconv.FormatFloat(f, 'g', -1, 32)); err == nil && n.Equal(got) && !n.Equal(sent) {
			return "the JSON library read the integer as a float32, which holds integers exactly only up to 2^24"
		}
	}
	if v, err := strconv.ParseInt(sent.str, 10, 64); err == nil && (v > math.MaxInt32 || v < math.MinInt32) {
		for _, narrow := range []int64{int64(int32(v)), int64(uint32(v)), math.MaxInt32, math.MinInt32} {
			if got.Equal(IntID(narrow)) {
				return "the JSON library read the integer into 32 bits (a C int, cJSON's valueint), which holds only up to 2^31-1"
			}
		}
	}
	return ""
}

func hasNonASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 || s[i] < 0x20 {
			return true
		}
	}
	return false
}
