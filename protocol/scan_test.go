package protocol

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

// scanSeeds are the inputs where a JSON scanner goes wrong if it goes wrong
// anywhere; testdata/fuzz holds them (and more) for the fuzz targets too.
var scanSeeds = []string{
	`{"a":1}`, `{}`, ` { } `, "\r\n\t{\"a\" :\r1 ,\n\"b\"\t: [ ] }\r\n",
	`{"a\u0062":1}`, `{"a":1,"a":2}`, `{"a":1,"\u0061":2}`, `{"\ud800":1}`, `{"\udc00\ud800x":1}`, `{"\/":1}`,
	`{"n":-0}`, `{"n":1e5}`, `{"n":01}`, `{"n":-}`, `{"n":1.}`, `{"n":.5}`, `{"n":1E+5}`, `{"n":-0.0e-0}`, `{"n":1e}`, `{"n":1e+}`, `{"n":00}`, `{"n":-01}`, `{"n":+1}`,
	`{"s":"\u0000"}`, `{"s":"\ud800"}`, `{"s":"\u12"}`, `{"s":"\u12g4"}`, `{"s":"\q"}`, "{\"s\":\"\x01\"}", "{\"s\":\"\x7f\"}", "{\"\xff\":1}", "{\"s\":\"\xff\"}", "{\"s\":\"\xed\xa0\x80\"}",
	"\xef\xbb\xbf{}", `{"a":1,}`, `[1,]`, `{,}`, `{"a"}`, `{"a":}`, `{"a":1 "b":2}`, `{"a":1} x`, `{"a":1}{}`, "{\"a\":1}\x00", "\f{}", "{\"a\":1}\v",
	`{"a":tru}`, `{"a":nul}`, `{"a":truex}`, `{"a":true,"b":false,"c":null}`, `{"a":[}`, `{"a":{]}`, `{"a":{"b":1,}}`, `{"a":[1 2]}`, `{"a":{"b" 1}}`, `{"a":[1,[2],{"b":[]}],"c":{}}`,
	`null`, `[]`, `[1,[2],{"a":3}]`, `""`, ``, `{`, `{"a":"`, `{"a":"\`, `{"a":"\u`,
	strings.Repeat(`{"a":`, maxScanDepth) + `1` + strings.Repeat(`}`, maxScanDepth),
	strings.Repeat(`[`, maxScanDepth+1) + strings.Repeat(`]`, maxScanDepth+1),
	`{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"hi"}],"isError":false}}`,
	`{"jsonrpc":"2.0","id":"x","error":{"code":-1,"message":"m","data":null}}`,
	`{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info"}}`,
	`{"jsonrpc":"2.0","id":1,"result":{"resultType":"incomplete"}}`,
}

// checkMembers fails unless got holds exactly the members of want, the
// last duplicate winning.
func checkMembers(t *testing.T, got memberList, want map[string]json.RawMessage) {
	t.Helper()
	seen := map[string]bool{}
	for _, m := range got {
		seen[string(m.key)] = true
	}
	if len(seen) != len(want) {
		t.Fatalf("%d distinct members, encoding/json has %d", len(seen), len(want))
	}
	for k, v := range want {
		g, ok := got.get(k)
		if !ok || !bytes.Equal(g, v) {
			t.Fatalf("member %q = %q (present %v), encoding/json has %q", k, g, ok, v)
		}
	}
}

// nesting is the deepest nesting of valid JSON text.
func nesting(data []byte) int {
	depth, deepest, inString := 0, 0, false
	for i := 0; i < len(data); i++ {
		switch c := data[i]; {
		case inString && c == '\\':
			i++
		case c == '"':
			inString = !inString
		case inString:
		case c == '{' || c == '[':
			depth++
			deepest = max(deepest, depth)
		case c == '}' || c == ']':
			depth--
		}
	}
	return deepest
}

func checkScanMatchesEncodingJSON(t *testing.T, data []byte) {
	var want map[string]json.RawMessage
	werr := json.Unmarshal(data, &want)
	got, ok := scanObject(data, nil)
	switch {
	case ok && (werr != nil || want == nil):
		t.Fatalf("scanner accepted %q; encoding/json: %v (map %v)", data, werr, want)
	case ok:
		checkMembers(t, got, want)
	case werr == nil && want != nil && nesting(data) <= maxScanDepth:
		t.Fatalf("scanner refused the valid object %q", data)
	}

	var wantItems []json.RawMessage
	ierr := json.Unmarshal(data, &wantItems)
	items, ok := scanArray(data, nil)
	switch {
	case ok && (ierr != nil || wantItems == nil):
		t.Fatalf("scanner accepted the array %q; encoding/json: %v", data, ierr)
	case ok:
		if len(items) != len(wantItems) {
			t.Fatalf("%d items, encoding/json has %d", len(items), len(wantItems))
		}
		for i := range items {
			if !bytes.Equal(items[i], wantItems[i]) {
				t.Fatalf("item %d = %q, encoding/json has %q", i, items[i], wantItems[i])
			}
		}
	case ierr == nil && wantItems != nil && nesting(data) <= maxScanDepth:
		t.Fatalf("scanner refused the valid array %q", data)
	}

	// With the encoding/json fallback, objectMembers answers as it always did.
	ms, err := objectMembers(data, nil)
	lm, lerr := legacyObjectMembers(data)
	if (err == nil) != (lerr == nil) || err != nil && err.Error() != lerr.Error() {
		t.Fatalf("objectMembers(%q): error %v, before %v", data, err, lerr)
	}
	if err == nil {
		checkMembers(t, ms, lm)
	}
	if validJSON(data) != json.Valid(data) {
		t.Fatalf("validJSON(%q) = %v", data, !json.Valid(data))
	}
	s, ok := jsonString(data)
	ls, lok := legacyJSONString(data)
	if s != ls || ok != lok {
		t.Fatalf("jsonString(%q) = %q, %v; before %q, %v", data, s, ok, ls, lok)
	}
}

// FuzzMembersMatchEncodingJSON checks the scanner against encoding/json:
// what one accepts the other accepts, with the same members and raw values.
func FuzzMembersMatchEncodingJSON(f *testing.F) {
	for _, s := range scanSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(checkScanMatchesEncodingJSON)
}

// deepSeeds are at and over encoding/json's nesting limit: too big for the
// fuzz corpus (minimising them stalls the fuzzer), so only tests read them.
var deepSeeds = []string{
	`{"a":` + strings.Repeat(`[`, 9999) + strings.Repeat(`]`, 9999) + `}`,
	`{"a":` + strings.Repeat(`[`, 10000) + strings.Repeat(`]`, 10000) + `}`,
	`{"a":` + strings.Repeat(`{"a":`, 9999) + `1` + strings.Repeat(`}`, 9999) + `}`,
}

func TestScanMatchesEncodingJSON(t *testing.T) {
	for _, s := range append(scanSeeds, deepSeeds...) {
		checkScanMatchesEncodingJSON(t, []byte(s))
	}
}

func TestScanAcceptsAndRefuses(t *testing.T) {
	for _, tt := range []struct {
		in string
		ok bool
	}{
		{`{"a":1}`, true}, {"\r\n{\"a\":1}\r\n", true}, {`{"a\u0062":1}`, true},
		{`{"n":-0}`, true}, {`{"n":1e5}`, true}, {`{"n":01}`, false}, {`{"s":"\u0000"}`, true},
		{`{"s":"\ud800"}`, true}, {"\xef\xbb\xbf{}", false}, {`{"a":1,}`, false}, {"{\"s\":\"\x01\"}", false},
		{`{"a":1}x`, false}, {"\f{}", false},
		{strings.Repeat(`[`, maxScanDepth) + strings.Repeat(`]`, maxScanDepth), false}, // an array, not an object
		{`{"a":` + strings.Repeat(`[`, maxScanDepth-1) + strings.Repeat(`]`, maxScanDepth-1) + `}`, true},
		{`{"a":` + strings.Repeat(`[`, maxScanDepth+1) + strings.Repeat(`]`, maxScanDepth+1) + `}`, false}, // to encoding/json
	} {
		if _, ok := scanObject([]byte(tt.in), nil); ok != tt.ok {
			t.Errorf("scanObject(%.40q) ok = %v, want %v", tt.in, ok, tt.ok)
		}
	}
	ms, _ := scanObject([]byte(`{"\u0061":1,"a":2,"\ud800":3}`), nil)
	if v := ms.value("a"); string(v) != "2" {
		t.Errorf("a = %s, want the last duplicate", v)
	}
	if v := ms.value("\uFFFD"); string(v) != "3" {
		t.Errorf("a lone surrogate key is not U+FFFD: %v", ms)
	}
}

// checkDecodersMatchLegacy runs the three decoders of the call path and
// their versions from before the scanner on data: same results, same errors.
func checkDecodersMatchLegacy(t *testing.T, data []byte) {
	m, err := Classify(data)
	lm, lerr := legacyClassify(data)
	if !reflect.DeepEqual(err, lerr) || !reflect.DeepEqual(m, lm) {
		t.Fatalf("Classify(%q) = %+v, %v\nbefore %+v, %v", data, m, err, lm, lerr)
	}
	if err == nil && m.Result != nil && len(data) > 0 && &m.Result[0] == &data[bytes.Index(data, m.Result)] {
		t.Fatal("the Message aliases the line")
	}
	if err, lerr := CheckComplete(data), legacyCheckComplete(data); !reflect.DeepEqual(err, lerr) {
		t.Fatalf("CheckComplete(%q) = %v, before %v", data, err, lerr)
	}
	r, err := ParseCallToolResult(data)
	lr, lerr := legacyParseCallToolResult(data)
	if !reflect.DeepEqual(err, lerr) {
		t.Fatalf("ParseCallToolResult(%q): error %v, before %v", data, err, lerr)
	}
	if err != nil {
		return
	}
	same := func(a, b json.RawMessage) bool { return (a == nil) == (b == nil) && bytes.Equal(a, b) }
	if r.IsError != lr.IsError || !same(r.StructuredContent, lr.StructuredContent) || !same(r.Meta, lr.Meta) || !same(r.Raw, lr.Raw) || len(r.Content) != len(lr.Content) {
		t.Fatalf("ParseCallToolResult(%q) = %+v, before %+v", data, r, lr)
	}
	for i, b := range r.Content {
		if b.Type != lr.Content[i].Type || !same(b.Raw, lr.Content[i].Raw) {
			t.Fatalf("block %d = %+v, before %+v", i, b, lr.Content[i])
		}
		checkMembers(t, b.members, lr.Content[i].members)
	}
}

// FuzzDecodersMatchLegacy checks that Classify, CheckComplete and
// ParseCallToolResult behave exactly as they did on encoding/json alone.
func FuzzDecodersMatchLegacy(f *testing.F) {
	for _, s := range scanSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(checkDecodersMatchLegacy)
}

func TestDecodersMatchLegacy(t *testing.T) {
	for _, s := range append(append(scanSeeds, deepSeeds...),
		`{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"a"},{"type":"image","data":"x","data":"y"},{"type":"\u0074ext"}],"structuredContent":{"a":[1]},"_meta":{},"isError":true}}`,
		`{"content":[{"type":"text","text":"a"},{"type":"image","data":"x","data":"y"},{"type":"\u0074ext","text":"\ud800"}],"structuredContent":{"a":[1]},"_meta":{},"isError":true}`,
		`{"content":[{"type":"text"}],"resultType":"complete"}`, `{"content":[],"resultType":null}`, `{"content":[{}]}`, `{"content":[{"type":1}]}`,
		`{"content":[`+strings.Repeat(`{"type":"text","text":"x"},`, 20)+`{"type":"t"}]}`,
		`{"content":[{"type":"text","deep":`+strings.Repeat(`[`, 100)+strings.Repeat(`]`, 100)+`}]}`,
		`{"jsonrpc":"2.0","id":7,"error":{"code":1,"message":"\u00e9","data":{"x":[]}}}`,
		`{"jsonrpc":"2.0","id":null,"error":{"code":1.5,"message":"m"}}`, `{"jsonrpc":"2.0","id":"a\"b","method":"m","params":[1]}`,
	) {
		checkDecodersMatchLegacy(t, []byte(s))
	}
}

func TestValidJSONMatchesEncodingJSON(t *testing.T) {
	for _, s := range append(append(scanSeeds, deepSeeds...), `1`, ` "x" `, `[1,{"a":[]}]`, `nul`, `1 2`, strings.Repeat("[", 10001)+strings.Repeat("]", 10001)) {
		if got, want := validJSON([]byte(s)), json.Valid([]byte(s)); got != want {
			t.Errorf("validJSON(%.40q) = %v, json.Valid %v", s, got, want)
		}
	}
}
