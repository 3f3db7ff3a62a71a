package protocol

import (
	"strings"
	"testing"
)

// unexpected_id says which id was sent and its type, and names the change
// a JSON library made when it is a known one (issue 28: a Zig package saw
// `the module answered id "4835258808700009"` and nothing else).
func TestUnexpectedIDNamesTheSentIDAndTheChange(t *testing.T) {
	num := func(s string) ID {
		id, err := NumberID(s)
		if err != nil {
			t.Fatal(err)
		}
		return id
	}
	tests := []struct {
		sent, got ID
		answered  bool
		want      string
	}{
		{num("4835258808700009"), StringID("4835258808700009"), false,
			`unexpected_id: the module answered id "4835258808700009" (a string), but the request's id was 4835258808700009 (a number): the number came back as a string. A JSON writer that quotes large integers does this (Zig 0.11's std.json writes every integer from 2^52 on as a string); copy the request's id unchanged into the response (keep it as the JSON text it came as)`},
		{num("9007199254740993"), num("9007199254740992"), false,
			`unexpected_id: the module answered id 9007199254740992 (a number), but the request's id was 9007199254740993 (a number): the JSON library read the integer as a float64 (a double), which holds integers exactly only up to 2^53, and the id changed; copy the request's id unchanged into the response (keep it as the JSON text it came as)`},
		{num("9007199254740991"), num("9.0071992547410e+15"), false,
			"the id was printed with fewer significant digits than it has (Lua's cjson prints 14), and lost some"},
		{num("4503599627370496"), IntID(2147483647), false,
			"the JSON library read the integer into 32 bits (a C int, cJSON's valueint)"},
		{num("4503599627370497"), IntID(1), false,
			"the JSON library read the integer into 32 bits"},
		{num("16777217"), num("16777216"), false,
			"read the integer as a float32"},
		{StringID("1234"), IntID(1234), false,
			"the string came back as a number"},
		{StringID(strings.Repeat("x", 300)), StringID(strings.Repeat("x", 255)), false,
			"the string was cut after 255 of its 300 bytes"},
		{StringID("quote \" ü"), StringID("quote ?"), false,
			"the string's escapes or non-ASCII characters changed"},
		// No known cause: both ids, nothing guessed.
		{StringID("subako-1"), StringID("other"), false,
			`unexpected_id: the module answered id "other" (a string), but the request's id was "subako-1" (a string); copy the request's id unchanged`},
		{IntID(7), IntID(7), true,
			"unexpected_id: the module answered id 7 (a number) a second time, while the host waited for the answer to id 7 (a number); answer each request exactly once"},
	}
	for _, tt := range tests {
		got := ErrUnexpectedIDFor(tt.got, tt.sent.Key(), tt.answered).Error()
		if !strings.Contains(got, tt.want) {
			t.Errorf("sent %s, got %s:\n%s\nwant it to contain\n%s", tt.sent, tt.got, got, tt.want)
		}
		if strings.Count(got, " (a number)")+strings.Count(got, " (a string)") != 2 {
			t.Errorf("the message does not give both ids with their types: %s", got)
		}
	}
	// Nothing in flight.
	if got := ErrUnexpectedIDFor(IntID(3), "", false).Error(); !strings.Contains(got, "id 3 (a number), which the host never sent, when no request was waiting") {
		t.Errorf("no request in flight: %s", got)
	}
}

func TestIDFromKeyRoundTrips(t *testing.T) {
	for _, text := range []string{`"a"`, `""`, `"\u00e9"`, "0", "-0", "7", "-12", "4835258808700009", "1e3", "1.5", "-2.5e-7", "12345678901234567890123", "1e400", "null"} {
		id, err := parseID([]byte(text))
		if err != nil {
			t.Fatal(err)
		}
		back, ok := idFromKey(id.Key())
		if !ok || !back.Equal(id) || back.isString() != id.isString() {
			t.Errorf("%s: key %q rebuilt as %v (%v)", text, id.Key(), back, ok)
		}
	}
	if _, ok := idFromKey(""); ok {
		t.Error(`idFromKey("") succeeded`)
	}
}
