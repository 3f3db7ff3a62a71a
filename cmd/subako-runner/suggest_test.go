package main

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/subako/subako-runner/limits"
	"github.com/subako/subako-runner/runtime"
)

// Issue 28: a mistake on the command line names its fix.

func TestUnknownFlagSuggestsTheNearestFlag(t *testing.T) {
	pkg := pkgDir(t, "greet", nil)
	tests := []struct {
		args []string
		want string // the first stderr line
	}{
		{[]string{"call", "--alow-host", "x", pkg, "greet"}, "subako-runner: unknown flag: --alow-host (did you mean --allow-host?)"},
		{[]string{"call", "--allow-hosts", "x", pkg, "greet"}, "subako-runner: unknown flag: --allow-hosts (did you mean --allow-host?)"},
		{[]string{"call", "--timout=5s", pkg, "greet"}, "subako-runner: unknown flag: --timout (did you mean --timeout?)"},
		{[]string{"check", "--exampels", "f.json", pkg}, "subako-runner: unknown flag: --exampels (did you mean --examples?)"},
		{[]string{"call", "--jsno", pkg, "greet"}, "subako-runner: unknown flag: --jsno (did you mean --json?)"},
		// Nothing near: no suggestion, as before.
		{[]string{"discover", "--bogus", pkg}, "subako-runner: unknown flag: --bogus"},
		// A flag of another command is not offered.
		{[]string{"validate", "--alow-host", "x", pkg}, "subako-runner: unknown flag: --alow-host"},
	}
	for _, tt := range tests {
		code, _, errOut := cli(t, "", tt.args...)
		first, _, _ := strings.Cut(errOut, "\n")
		if code != exitUsage || first != tt.want {
			t.Errorf("%q: exit %d, stderr %q; want %q", tt.args, code, first, tt.want)
		}
	}
}

func TestEditDistance(t *testing.T) {
	for _, tt := range []struct {
		a, b string
		d    int
	}{{"", "", 0}, {"a", "", 1}, {"timout", "timeout", 1}, {"alow-host", "allow-host", 1}, {"jsno", "json", 2}, {"kitten", "sitting", 3}} {
		if got := editDistance(tt.a, tt.b); got != tt.d {
			t.Errorf("editDistance(%q, %q) = %d, want %d", tt.a, tt.b, got, tt.d)
		}
	}
}

func TestBadArgumentsNameTheParserMessageAndOffset(t *testing.T) {
	pkg := pkgDir(t, "greet", nil)
	tests := []struct {
		args string
		want string // the stderr line, up to the "Run …" hint
	}{
		{`{text: "a"}`, `subako-runner: ARGS_JSON is not valid JSON: invalid character 't' looking for beginning of object key string, at byte 1: {▸text: "a"}; object keys are strings in double quotes, as in {"name": "Ada"}`},
		{`{'text': 'a'}`, `subako-runner: ARGS_JSON is not valid JSON: invalid character '\'' looking for beginning of object key string, at byte 1: {▸'text': 'a'}; JSON strings take double quotes`},
		{`{"name": "Ada"`, `subako-runner: ARGS_JSON is not valid JSON: unexpected end of JSON input, at byte 14: {"name": "Ada"▸; the text ends before the JSON does (a quote or a brace missing? the shell may have eaten a quote)`},
		{`name=hello`, `subako-runner: ARGS_JSON is not valid JSON: invalid character 'a' in literal null (expecting 'u'), at byte 1: n▸ame=hello; ARGS_JSON is a JSON object: write '{"name":"hello"}'`},
		{`"Ada"`, `subako-runner: ARGS_JSON must be a JSON object such as '{"name": "Ada"}', not a string`},
		{`[1]`, `subako-runner: ARGS_JSON must be a JSON object such as '{"name": "Ada"}', not an array`},
	}
	for _, tt := range tests {
		code, out, errOut := cli(t, "", "call", pkg, "greet", tt.args)
		first, _, _ := strings.Cut(errOut, "\n")
		if code != exitUsage || out != "" || first != tt.want {
			t.Errorf("ARGS_JSON %s: exit %d, stdout %q\nstderr %q\nwant   %q", tt.args, code, out, first, tt.want)
		}
	}
	// --args-file is read the same way.
	code, _, errOut := cli(t, "{text: 1}", "call", "--args-file", "-", pkg, "greet")
	if code != exitUsage || !strings.Contains(errOut, "at byte 1: {▸text: 1}") {
		t.Errorf("--args-file -: exit %d, %q", code, errOut)
	}
}

func TestCallWarnsWhenArgumentsBreakTheInputSchema(t *testing.T) {
	pkg := pkgDir(t, "greet", nil)
	// greet requires a string "name": a number is called anyway (the
	// module decides), with one warning naming the mismatch.
	code, out, errOut := cli(t, "", "call", pkg, "greet", `{"name": 42}`)
	if code == exitUsage || !strings.Contains(out, "ms, peak memory") {
		t.Fatalf("the call did not run: exit %d\n%s\n%s", code, out, errOut)
	}
	const want = "subako-runner: WARNING: the arguments do not match greet's inputSchema: at '/name': got number, want string (calling it anyway: the module decides)\n"
	if errOut != want {
		t.Errorf("stderr %q, want %q", errOut, want)
	}
	// Matching arguments: no warning.
	code, _, errOut = cli(t, "", "call", pkg, "greet", `{"name": "Ada"}`)
	if code != exitOK || errOut != "" {
		t.Errorf("matching arguments: exit %d, stderr %q", code, errOut)
	}
}

func TestALimitReachedNamesTheFlagThatRaisesIt(t *testing.T) {
	pkg := pkgDir(t, "misbehave", nil)
	// A busy loop with a small budget: out_of_fuel, and the flag named.
	code, _, errOut := cli(t, "", "call", "--fuel", "1e7", pkg, "timeout")
	want := "subako-runner: out_of_fuel: the call reached the fuel budget (10000000 instructions) that --fuel set; a larger --fuel raises it\n"
	if code != exitCrashed || errOut != want {
		t.Errorf("--fuel 1e7: exit %d, stderr %q, want %q", code, errOut, want)
	}
	code, _, errOut = cli(t, "", "call", "--timeout", "300ms", pkg, "timeout_sleep")
	want = "subako-runner: timeout: the call reached the time limit (300ms) that --timeout set; a larger --timeout raises it\n"
	if code != exitCrashed || errOut != want {
		t.Errorf("--timeout 300ms: exit %d, stderr %q, want %q", code, errOut, want)
	}
	// The defaults are not reached in a test (a dozen seconds of fuel); the
	// sentence for them is checked on its own.
	var l limitFlags
	lim := limits.Default()
	for reason, want := range map[string]string{
		runtime.CrashOutOfFuel:   "subako-runner: out_of_fuel: the call reached the default fuel budget (100000000000 instructions); --fuel raises it, e.g. --fuel 1e12, or --fuel 0 for no budget",
		runtime.CrashOutOfMemory: "subako-runner: out_of_memory: the call reached the default memory limit (256 MiB); --memory raises it, e.g. --memory 1GiB",
		runtime.CrashTimeout:     "subako-runner: timeout: the call reached the default time limit (1m0s); --timeout raises it, e.g. --timeout 5m",
		runtime.CrashTrap:        "",
	} {
		if got := limitHint(&l, lim, reason); got != want {
			t.Errorf("%s: %q, want %q", reason, got, want)
		}
	}
}

// On the command line the user owns the function: a refused request names
// the flag and value that would let it through (issue 28).
func TestNetworkRefusalsNameTheFlag(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte("hello from the test server"))
	}))
	defer srv.Close()
	port := srv.Listener.Addr().(*net.TCPAddr).Port
	hostport := fmt.Sprintf("localhost:%d", port)
	pkg := pkgDir(t, "httpprobe", nil)
	args := `{"request":{"url":"http://` + hostport + `/"}}`
	resolve := "--resolve=" + hostport + ":127.0.0.1" // never the system resolver in a test
	tests := []struct {
		flags []string
		want  string
	}{
		{[]string{"--allow-host", "localhost", resolve},
			fmt.Sprintf("host_not_allowed: %s is not in this function's network allowlist (http, port %d); to allow it, add --allow-host %s", hostport, port, hostport)},
		{[]string{"--allow-host", hostport, resolve},
			"forbidden_destination: 127.0.0.1 is a loopback address (127.0.0.0/8); to reach it for local testing, add --allow-private 127.0.0.1/32"},
		{[]string{"--allow-host", hostport, resolve, "--allow-private", "127.0.0.1/32"},
			"hello from the test server"},
	}
	for _, tt := range tests {
		_, out, errOut := cli(t, "", append(append([]string{"call"}, tt.flags...), pkg, "http", args)...)
		var doc struct {
			Error struct{ Kind, Message string }
			OK    struct{ Body struct{ Text string } }
		}
		first, _, _ := strings.Cut(out, "\n")
		if strings.HasPrefix(first, "tool error") {
			first, _, _ = strings.Cut(strings.SplitN(out, "\n", 3)[1], "\n")
		}
		if err := json.Unmarshal([]byte(first), &doc); err != nil {
			t.Fatalf("%v: %v\n%s\n%s", tt.flags, err, out, errOut)
		}
		got := doc.OK.Body.Text
		if doc.Error.Kind != "" {
			got = doc.Error.Kind + ": " + doc.Error.Message
		}
		if got != tt.want {
			t.Errorf("%v:\n got %q\nwant %q", tt.flags, got, tt.want)
		}
	}
}
