package protocol

import (
	"encoding/json"
	"slices"
	"unicode/utf8"
)

// appendRequest writes the request line encodeRequestJSON writes, byte for
// byte, without reflection or map copies: every request on the call path
// goes through here. ok is false when a value is of a type it does not
// render (or raw JSON it cannot vouch for); EncodeRequest then uses
// encoding/json, which also produces the errors.
func appendRequest(id ID, method string, params, meta map[string]any, client ClientInfo) ([]byte, bool) {
	size := 256 + len(method) + len(id.str)
	for _, v := range params {
		switch v := v.(type) {
		case string:
			size += len(v)
		case json.RawMessage:
			size += len(v)
		}
	}
	b := make([]byte, 0, size)
	b = append(b, `{"jsonrpc":"2.0","id":`...)
	switch id.kind {
	case idString:
		b = appendJSONString(b, id.str, true) // ID.MarshalJSON is json.Marshal: HTML escaped
	case idNumber:
		b = append(b, id.str...)
	default:
		return nil, false
	}
	b = append(b, `,"method":`...)
	b = appendJSONString(b, method, false)
	b = append(b, `,"params":`...)

	var keyBuf [8]string
	keys := keyBuf[:0]
	for k := range params {
		if k != "_meta" {
			keys = append(keys, k)
		}
	}
	keys = append(keys, "_meta")
	b, ok := appendMembers(b, keys, func(b []byte, k string) ([]byte, bool) {
		if k == "_meta" {
			return appendMeta(b, meta, client)
		}
		return appendValue(b, params[k], 0)
	})
	if !ok {
		return nil, false
	}
	return append(b, "}\n"...), true
}

// appendMembers writes an object of keys, sorted as encoding/json sorts a
// map's, each value written by value.
func appendMembers(b []byte, keys []string, value func(b []byte, key string) ([]byte, bool)) ([]byte, bool) {
	slices.Sort(keys)
	b = append(b, '{')
	for i, k := range keys {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendJSONString(b, k, false)
		b = append(b, ':')
		var ok bool
		if b, ok = value(b, k); !ok {
			return nil, false
		}
	}
	return append(b, '}'), true
}

// appendMeta writes the request's _meta: the caller's members with the
// three host keys set over them.
func appendMeta(b []byte, meta map[string]any, client ClientInfo) ([]byte, bool) {
	var keyBuf [8]string
	keys := append(keyBuf[:0], MetaClientCapabilities, MetaClientInfo, MetaProtocolVersion)
	for k := range meta {
		if k != MetaClientCapabilities && k != MetaClientInfo && k != MetaProtocolVersion {
			keys = append(keys, k)
		}
	}
	return appendMembers(b, keys, func(b []byte, k string) ([]byte, bool) {
		switch k {
		case MetaClientCapabilities:
			return append(b, "{}"...), true
		case MetaClientInfo:
			return appendClientInfo(b, client), true
		case MetaProtocolVersion:
			return appendJSONString(b, Version, false), true
		}
		return appendValue(b, meta[k], 1)
	})
}

func appendClientInfo(b []byte, c ClientInfo) []byte {
	b = append(b, `{"name":`...)
	b = appendJSONString(b, c.Name, false)
	b = append(b, `,"version":`...)
	b = appendJSONString(b, c.Version, false)
	return append(b, '}')
}

// maxEncodeDepth bounds the maps appendValue follows; deeper (or cyclic)
// values go to encoding/json, which reports the cycle.
const maxEncodeDepth = 32

// appendValue writes v as encoding/json would (HTML characters unescaped)
// for the types params hold; ok is false for any other type.
func appendValue(b []byte, v any, depth int) ([]byte, bool) {
	switch v := v.(type) {
	case nil:
		return append(b, "null"...), true
	case string:
		return appendJSONString(b, v, false), true
	case bool:
		if v {
			return append(b, "true"...), true
		}
		return append(b, "false"...), true
	case json.RawMessage:
		if v == nil {
			return append(b, "null"...), true
		}
		return appendCompactJSON(b, v)
	case ClientInfo:
		return appendClientInfo(b, v), true
	case struct{}:
		return append(b, "{}"...), true
	case map[string]any:
		if v == nil {
			return append(b, "null"...), true
		}
		if depth >= maxEncodeDepth {
			return nil, false
		}
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		return appendMembers(b, keys, func(b []byte, k string) ([]byte, bool) {
			return appendValue(b, v[k], depth+1)
		})
	}
	return nil, false
}

// appendCompactJSON appends raw without its insignificant whitespace, which
// is what encoding/json does with a json.RawMessage; ok is false when the
// scanner does not vouch for raw being one JSON value.
func appendCompactJSON(b []byte, raw json.RawMessage) ([]byte, bool) {
	start := skipSpace(raw, 0)
	end, ok := skipValue(raw, start, 0)
	if !ok || skipSpace(raw, end) != len(raw) {
		return nil, false
	}
	inString := false
	from := 0
	for i := 0; i < len(raw); i++ {
		switch c := raw[i]; {
		case inString && c == '\\':
			i++
		case c == '"':
			inString = !inString
		case !inString && (c == ' ' || c == '\t' || c == '\r' || c == '\n'):
			b = append(b, raw[from:i]...)
			from = i + 1
		}
	}
	return append(b, raw[from:]...), true
}

// appendJSONString quotes s as encoding/json does: invalid UTF-8 becomes
// \ufffd, U+2028 and U+2029 are always escaped, and <, > and & are escaped
// only with escapeHTML (json.Marshal; an Encoder with SetEscapeHTML(false)
// leaves them).
func appendJSONString(b []byte, s string, escapeHTML bool) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		if c := s[i]; c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' && (!escapeHTML || c != '<' && c != '>' && c != '&') {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '\\', '"':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hex[r&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}
