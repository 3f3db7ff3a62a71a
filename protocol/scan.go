package protocol

import (
	"encoding/json"
	"unicode/utf8"
)

// The scanner below reads a JSON object's or array's top level in one pass,
// validating the whole text as encoding/json does, so that the call path
// does not decode every response three times through reflection. It only
// ever says yes or "don't know": on anything it rejects (a syntax error, or
// nesting deeper than maxScanDepth) the callers run json.Unmarshal instead,
// which gives the result or the error message the code always gave.

// maxScanDepth bounds the nesting the scanner follows (a bit per level in a
// uint64); deeper documents go through encoding/json, whose limit is 10000.
const maxScanDepth = 64

// member is one member of a JSON object: the decoded key and the value
// exactly as written (no surrounding whitespace), as encoding/json gives it
// to a json.RawMessage.
type member struct {
	key []byte
	val json.RawMessage
}

// memberList is an object's members in document order, duplicates included;
// lookups take the last one, as decoding into a map does.
type memberList []member

// get returns the value of the last member called name.
func (ms memberList) get(name string) (json.RawMessage, bool) {
	for i := len(ms) - 1; i >= 0; i-- {
		if string(ms[i].key) == name {
			return ms[i].val, true
		}
	}
	return nil, false
}

// value is get without the flag: nil when there is no such member.
func (ms memberList) value(name string) json.RawMessage {
	v, _ := ms.get(name)
	return v
}

// has reports whether the object has a member called name.
func (ms memberList) has(name string) bool {
	_, ok := ms.get(name)
	return ok
}

// membersOf turns a decoded map into members (the fallback path).
func membersOf(m map[string]json.RawMessage) memberList {
	ms := make(memberList, 0, len(m))
	for k, v := range m {
		ms = append(ms, member{key: []byte(k), val: v})
	}
	return ms
}

// scanObject appends the members of the JSON object that is all of data
// (whitespace around allowed) to buf. ok is false when data is not exactly
// one valid JSON object or nests deeper than maxScanDepth. Keys and values
// alias data unless a key has escapes or invalid UTF-8.
func scanObject(data []byte, buf memberList) (memberList, bool) {
	i := skipSpace(data, 0)
	if i >= len(data) || data[i] != '{' {
		return buf, false
	}
	i = skipSpace(data, i+1)
	if i < len(data) && data[i] == '}' {
		return buf, skipSpace(data, i+1) == len(data)
	}
	for {
		ks, ke, flags := scanString(data, i)
		if flags == strBad {
			return buf, false
		}
		i = skipSpace(data, ke)
		if i >= len(data) || data[i] != ':' {
			return buf, false
		}
		vs := skipSpace(data, i+1)
		ve, ok := skipValue(data, vs, 1)
		if !ok {
			return buf, false
		}
		key := data[ks+1 : ke-1]
		if flags != strPlain {
			var ok bool
			if key, ok = decodeKey(data[ks:ke]); !ok {
				return buf, false
			}
		}
		buf = append(buf, member{key: key, val: data[vs:ve:ve]})
		i = skipSpace(data, ve)
		if i >= len(data) {
			return buf, false
		}
		switch data[i] {
		case ',':
			i = skipSpace(data, i+1)
		case '}':
			return buf, skipSpace(data, i+1) == len(data)
		default:
			return buf, false
		}
	}
}

// scanArray appends the elements of the JSON array that is all of data to
// buf, as scanObject does for objects.
func scanArray(data []byte, buf []json.RawMessage) ([]json.RawMessage, bool) {
	i := skipSpace(data, 0)
	if i >= len(data) || data[i] != '[' {
		return buf, false
	}
	i = skipSpace(data, i+1)
	if i < len(data) && data[i] == ']' {
		return buf, skipSpace(data, i+1) == len(data)
	}
	for {
		e, ok := skipValue(data, i, 1)
		if !ok {
			return buf, false
		}
		buf = append(buf, data[i:e:e])
		i = skipSpace(data, e)
		if i >= len(data) {
			return buf, false
		}
		switch data[i] {
		case ',':
			i = skipSpace(data, i+1)
		case ']':
			return buf, skipSpace(data, i+1) == len(data)
		default:
			return buf, false
		}
	}
}

// validJSON is json.Valid, in one pass of the scanner for all but deeply
// nested text.
func validJSON(data []byte) bool {
	i := skipSpace(data, 0)
	if end, ok := skipValue(data, i, 0); ok && skipSpace(data, end) == len(data) {
		return true
	}
	return json.Valid(data)
}

// decodeKey unescapes a quoted key the way encoding/json does (invalid
// UTF-8 and lone surrogates become U+FFFD) by letting it do the work.
func decodeKey(quoted []byte) ([]byte, bool) {
	var s string
	if json.Unmarshal(quoted, &s) != nil {
		return nil, false
	}
	return []byte(s), true
}

// skipSpace returns the index of the first byte at or after i that is not
// JSON whitespace.
func skipSpace(data []byte, i int) int {
	for i < len(data) {
		switch data[i] {
		case ' ', '\t', '\r', '\n':
			i++
		default:
			return i
		}
	}
	return i
}

// String flags: what scanString saw.
const (
	strPlain   = iota // no escapes, ASCII only or valid UTF-8
	strEscaped        // has a backslash escape or invalid UTF-8
	strBad            // not a valid JSON string
)

// scanString reads the string starting at data[i] (which must be '"') and
// returns its start, the index just past its closing quote, and a flag.
func scanString(data []byte, i int) (start, end, flags int) {
	if i >= len(data) || data[i] != '"' {
		return i, i, strBad
	}
	start, flags = i, strPlain
	nonASCII := false
	for j := i + 1; j < len(data); {
		c := data[j]
		switch {
		case c == '"':
			if nonASCII && flags == strPlain && !utf8.Valid(data[start+1:j]) {
				flags = strEscaped
			}
			return start, j + 1, flags
		case c == '\\':
			if j+1 >= len(data) {
				return start, j, strBad
			}
			switch data[j+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				j += 2
			case 'u':
				if j+5 >= len(data) || !isHexDigit(data[j+2]) || !isHexDigit(data[j+3]) || !isHexDigit(data[j+4]) || !isHexDigit(data[j+5]) {
					return start, j, strBad
				}
				j += 6
			default:
				return start, j, strBad
			}
			flags = strEscaped
		case c < 0x20:
			return start, j, strBad
		default:
			if c >= utf8.RuneSelf {
				nonASCII = true
			}
			j++
		}
	}
	return start, len(data), strBad
}

func isHexDigit(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

// skipValue returns the index just past the JSON value that starts at
// data[i], validating all of it. depth is the nesting of the container the
// value is in (1 for a member of a top-level object).
func skipValue(data []byte, i, depth int) (int, bool) {
	var objects uint64 // bit k: the container at nesting level k is an object
	base := depth
	for {
		// A value starts at i.
		if i >= len(data) {
			return i, false
		}
		closed := true
		switch c := data[i]; c {
		case '{', '[':
			if depth-base >= maxScanDepth {
				return i, false
			}
			i = skipSpace(data, i+1)
			end := byte(']')
			if c == '{' {
				end = '}'
			}
			if i < len(data) && data[i] == end {
				i++
				break
			}
			bit := uint64(1) << (depth - base)
			depth++
			if c == '[' {
				objects &^= bit
				closed = false
				break
			}
			objects |= bit
			var ok bool
			if i, ok = skipKey(data, i); !ok {
				return i, false
			}
			closed = false
		case '"':
			_, e, flags := scanString(data, i)
			if flags == strBad {
				return i, false
			}
			i = e
		case 't':
			if !hasLiteral(data, i, "true") {
				return i, false
			}
			i += 4
		case 'f':
			if !hasLiteral(data, i, "false") {
				return i, false
			}
			i += 5
		case 'n':
			if !hasLiteral(data, i, "null") {
				return i, false
			}
			i += 4
		default:
			e, ok := skipNumber(data, i)
			if !ok {
				return i, false
			}
			i = e
		}
		// After a complete value: close containers until one continues.
		for closed {
			if depth == base {
				return i, true
			}
			i = skipSpace(data, i)
			if i >= len(data) {
				return i, false
			}
			inObject := objects>>(depth-1-base)&1 == 1
			switch c := data[i]; {
			case c == ',':
				i = skipSpace(data, i+1)
				if inObject {
					var ok bool
					if i, ok = skipKey(data, i); !ok {
						return i, false
					}
				}
				closed = false
			case inObject && c == '}', !inObject && c == ']':
				i++
				depth--
			default:
				return i, false
			}
		}
	}
}

// skipKey reads `"key" :` and the whitespace after it, returning where the
// value starts.
func skipKey(data []byte, i int) (int, bool) {
	_, e, flags := scanString(data, i)
	if flags == strBad {
		return i, false
	}
	i = skipSpace(data, e)
	if i >= len(data) || data[i] != ':' {
		return i, false
	}
	return skipSpace(data, i+1), true
}

func hasLiteral(data []byte, i int, lit string) bool {
	return len(data)-i >= len(lit) && string(data[i:i+len(lit)]) == lit
}

// skipNumber reads -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)? at i.
func skipNumber(data []byte, i int) (int, bool) {
	if i < len(data) && data[i] == '-' {
		i++
	}
	switch {
	case i < len(data) && data[i] == '0':
		i++
	case i < len(data) && data[i] >= '1' && data[i] <= '9':
		i = skipDigits(data, i+1)
	default:
		return i, false
	}
	if i < len(data) && data[i] == '.' {
		j := skipDigits(data, i+1)
		if j == i+1 {
			return i, false
		}
		i = j
	}
	if i < len(data) && (data[i] == 'e' || data[i] == 'E') {
		i++
		if i < len(data) && (data[i] == '+' || data[i] == '-') {
			i++
		}
		j := skipDigits(data, i)
		if j == i {
			return i, false
		}
		i = j
	}
	return i, true
}

func skipDigits(data []byte, i int) int {
	for i < len(data) && isDigit(data[i]) {
		i++
	}
	return i
}

// plainString returns the contents of raw when raw is one JSON string
// (whitespace around allowed) that decodes to its own bytes: no escapes, no
// control characters, valid UTF-8. Otherwise ok is false and the caller
// decodes with encoding/json.
func plainString(raw []byte) ([]byte, bool) {
	t := trimSpace(raw)
	if len(t) < 2 || t[0] != '"' || t[len(t)-1] != '"' {
		return nil, false
	}
	s := t[1 : len(t)-1]
	nonASCII := false
	for _, c := range s {
		if c == '"' || c == '\\' || c < 0x20 {
			return nil, false
		}
		if c >= utf8.RuneSelf {
			nonASCII = true
		}
	}
	if nonASCII && !utf8.Valid(s) {
		return nil, false
	}
	return s, true
}
