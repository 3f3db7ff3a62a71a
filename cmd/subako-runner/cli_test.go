package main

import (
	"os"

	"fmt"
	"github.com/subako/subako-runner/internal/devtools/testguest"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// The faults a new package author met on the command line before it moved
// to cobra (issue 14), each driven as a user would and shown fixed.

func TestHelpShowsDoubleDashFlagsWithPlaceholders(t *testing.T) {
	code, out, errOut := cli(t, "", "call", "--help")
	if code != exitOK || errOut != "" {
		t.Fatalf("call --help: exit %d, stderr %q", code, errOut)
	}
	for _, want := range []string{"--allow-host PATTERN", "--credential PATTERN=HEADER:VALUE", "--fuel N", "--memory SIZE",
		"--timeout DURATION", "--allow-private[=all]", "--resolve HOST:PORT:ADDR[,ADDR...]", "--json ", "--trace[=stderr]",
		"Examples:\n  subako-runner call ./package greet '{\"name\": \"Ada\"}'", "--args-file - ./package greet"} {
		if !strings.Contains(out, want) {
			t.Errorf("help lacks %q:\n%s", want, out)
		}
	}
	if regexp.MustCompile(`(?m)^\s+-[a-z][a-z-]+ `).MatchString(out) {
		t.Errorf("help lists a long flag with one dash:\n%s", out)
	}
	for _, bad := range []string{" string ", "string[", "PATTERN=HEADER:VALUE: ", "stringArray", "`"} {
		if strings.Contains(out, bad) {
			t.Errorf("help shows %q (a type for a placeholder, or the placeholder repeated):\n%s", bad, out)
		}
	}
}

// call --help lists the exit statuses call can end with, in the words of
// exit.go's one table.
func TestCallHelpListsItsExitStatuses(t *testing.T) {
	_, out, _ := cli(t, "", "call", "--help")
	for _, row := range exitStatuses() {
		line := fmt.Sprintf("  %-4d %s", row.code, strings.ReplaceAll(row.summary, "`", ""))
		if want := row.code != exitTrap; strings.Contains(out, line) != want {
			t.Errorf("call --help lists %q: %v, want %v\n%s", line, !want, want, out)
		}
	}
}

// A PACKAGE path with nothing at it is named as a missing package, with
// what PACKAGE must be, not as a bare stat error (issue 42).
func TestMissingPackageIsNamed(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "nosuchdir")
	for _, args := range [][]string{{"call", missing, "greet"}, {"validate", missing}, {"discover", missing + ".wasm"}} {
		code, _, errOut := cli(t, "", args...)
		if code != exitUsage || !strings.Contains(errOut, ": no such package (nothing at that path): PACKAGE is a package directory (subako-package.json and module.wasm) or a .wasm module") || strings.Contains(errOut, "stat ") {
			t.Errorf("%q: exit %d, %q", args, code, errOut)
		}
	}
}

func TestUsageErrorsAreOneLineWithAHint(t *testing.T) {
	pkg := pkgDir(t, "greet", nil)
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"discover", "--bogus", pkg}, "subako-runner: unknown flag: --bogus\nRun 'subako-runner discover --help' for usage.\n"},
		{[]string{"call", pkg}, "subako-runner: call: missing TOOL\nRun 'subako-runner call --help' for usage.\n"},
		{[]string{"call"}, "subako-runner: call: missing PACKAGE and TOOL\nRun 'subako-runner call --help' for usage.\n"},
		{[]string{"validate", pkg, "extra"}, "subako-runner: validate: unexpected argument \"extra\" (it takes PACKAGE)\nRun 'subako-runner validate --help' for usage.\n"},
		{[]string{"frobnicate"}, "subako-runner: unknown command \"frobnicate\"\nRun 'subako-runner --help' for usage.\n"},
		{[]string{"valdiate", pkg}, "subako-runner: unknown command \"valdiate\" (did you mean validate?)\nRun 'subako-runner --help' for usage.\n"},
		{[]string{"call", "--fuel", "lots", pkg, "greet"}, "subako-runner: --fuel \"lots\": not a whole number of instructions (write 1000000000, 1e9, 10^9 or 1G)\nRun 'subako-runner call --help' for usage.\n"},
		{[]string{"call", "--timeout", "0", pkg, "greet"}, "subako-runner: --timeout \"0\": must be above zero\nRun 'subako-runner call --help' for usage.\n"},
		{[]string{"call", "--memory", "lots", pkg, "greet"}, "subako-runner: --memory \"lots\": size \"lots\": want a number followed by an optional unit such as MiB\nRun 'subako-runner call --help' for usage.\n"},
	}
	for _, tt := range tests {
		code, out, errOut := cli(t, "", tt.args...)
		if code != exitUsage || out != "" || errOut != tt.want {
			t.Errorf("%q: exit %d, stdout %q, stderr\n%s\nwant\n%s", tt.args, code, out, errOut, tt.want)
		}
	}
}

func TestCredentialErrorsNameTheFlagOnce(t *testing.T) {
	pkg := pkgDir(t, "greet", nil)
	for _, bad := range []string{"x", "=X:v", "api.example.com", "api.example.com=:v", "*.com=X:v", "api.example.com=Bad Header:secretvalue"} {
		code, _, errOut := cli(t, "", "call", "--allow-host", "api.example.com", "--credential", bad, pkg, "greet")
		line, _, _ := strings.Cut(errOut, "\n")
		if code != exitUsage || strings.Count(line, "--credential") != 1 || !strings.HasPrefix(line, "subako-runner: --credential") {
			t.Errorf("--credential %q: exit %d, %q", bad, code, errOut)
		}
		if strings.Contains(errOut, "secretvalue") {
			t.Errorf("--credential %q: the error repeats the value: %q", bad, errOut)
		}
	}
}

func TestFlagsAfterPositionalsAndDoubleDash(t *testing.T) {
	pkg := pkgDir(t, "greet", nil)
	code, out, errOut := cli(t, "", "call", pkg, "greet", `{"name":"Ada"}`, "--json")
	if m := decode(t, out); code != exitOK || m["outcome"] != "ok" {
		t.Fatalf("flag after positionals: exit %d, %v, %q", code, m, errOut)
	}
	// After --, a word that looks like a flag is an argument.
	code, _, errOut = cli(t, "", "call", "--json", "--", pkg, "--json")
	if code != exitUsage || !strings.Contains(errOut, `unknown_tool`) || !strings.Contains(errOut, `"--json"`) {
		t.Fatalf("-- did not end the flags: exit %d, %q", code, errOut)
	}
	// Long flags with one dash still work, as before.
	code, out, _ = cli(t, "", "version", "-json")
	if m := decode(t, out); code != exitOK || m["abi"] != float64(1) {
		t.Fatalf("-json: exit %d, %v", code, m)
	}
}

func TestRunFlagsEndAtTheModule(t *testing.T) {
	module := filepathFromSlash("../../testdata/wasi/c/fsprobe.wasm")
	// --tmp after MODULE is the module's argument, not ours: fsprobe
	// reports the words it got.
	code, out, errOut := cli(t, "", "run", module, "preopens", "--allow-private", "10.0.0.0/8")
	if code == exitUsage || strings.Contains(errOut, "WARNING") {
		t.Fatalf("run took flags after MODULE: exit %d, %q %q", code, out, errOut)
	}
	if !strings.Contains(out, "preopens ok") {
		t.Fatalf("run: %q %q", out, errOut)
	}
}

func TestVersionAndHelpForms(t *testing.T) {
	code, out, errOut := cli(t, "", "--version")
	if code != exitOK || !strings.HasPrefix(out, "subako-runner ") || !strings.Contains(out, "ABI 1\n") || errOut != "" {
		t.Errorf("--version: exit %d, %q %q", code, out, errOut)
	}
	_, viaCmd, _ := cli(t, "", "version")
	if !strings.HasPrefix(viaCmd, out) {
		t.Errorf("--version %q is not how version %q starts", out, viaCmd)
	}
	code, out, _ = cli(t, "", "help", "call")
	if code != exitOK || !strings.Contains(out, "subako-runner call [flags] PACKAGE TOOL [ARGS_JSON]") {
		t.Errorf("help call: exit %d, %q", code, out)
	}
	code, out, errOut = cli(t, "", "help", "nope")
	if code != exitUsage || out != "" || errOut != "subako-runner: help: no command \"nope\"\nRun 'subako-runner --help' for usage.\n" {
		t.Errorf("help nope: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	code, out, errOut = cli(t, "")
	if code != exitUsage || out != "" || !strings.Contains(errOut, "Available Commands:") {
		t.Errorf("bare: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	code, out, errOut = cli(t, "", "--help")
	if code != exitOK || errOut != "" || !strings.Contains(out, "Available Commands:") {
		t.Errorf("--help: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
}

func TestCompletionScripts(t *testing.T) {
	for shell, want := range map[string]string{
		"bash": "__start_subako-runner",
		"zsh":  "#compdef subako-runner",
		"fish": "complete -c subako-runner",
	} {
		code, out, errOut := cli(t, "", "completion", shell)
		if code != exitOK || !strings.Contains(out, want) || errOut != "" {
			t.Errorf("completion %s: exit %d, %d bytes, no %q; stderr %q", shell, code, len(out), want, errOut)
		}
	}
	for _, args := range [][]string{{"completion"}, {"completion", "tcsh"}} {
		if code, out, errOut := cli(t, "", args...); code != exitUsage || out != "" || !strings.HasPrefix(errOut, "subako-runner: completion: ") {
			t.Errorf("%q: exit %d, stdout %q, stderr %q", args, code, out, errOut)
		}
	}
	// The completion itself: cobra's hidden __complete command lists the
	// commands and a command's flags.
	_, out, _ := cli(t, "", "__complete", "ca")
	if !strings.Contains(out, "call") {
		t.Errorf("completing ca: %q", out)
	}
	_, out, _ = cli(t, "", "__complete", "help", "ch")
	if !strings.Contains(out, "check") {
		t.Errorf("completing help ch: %q", out)
	}
	_, out, _ = cli(t, "", "__complete", "call", "--allow-p")
	if !strings.Contains(out, "--allow-private") {
		t.Errorf("completing --allow-p: %q", out)
	}
}

func TestAllowPrivateSpaceForm(t *testing.T) {
	var hits int
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits++
		fmt.Fprint(w, "pong")
	}))
	defer srv.Close()
	host := fmt.Sprintf("api.test:%d", srv.Listener.Addr().(*net.TCPAddr).Port)
	pkg := pkgDir(t, "httpprobe", nil)
	args := fmt.Sprintf(`{"request":{"url":"http://%s/ping"}}`, host)
	for _, form := range [][]string{
		{"--allow-private", "127.0.0.1/32"},
		{"--allow-private=127.0.0.1/32"},
		{"--allow-private", "127.0.0.1"},
		{"--allow-private"}, // bare: the check off
	} {
		argv := append([]string{"call", "--json", "--allow-host", host, "--resolve", host + ":127.0.0.1"}, form...)
		code, out, errOut := cli(t, "", append(argv, pkg, "http", args)...)
		if code != exitOK || !strings.Contains(out, "pong") || !strings.Contains(errOut, "WARNING") {
			t.Errorf("%q: exit %d, %s, %q", form, code, out, errOut)
		}
	}
	// A word that is no CIDR list stays a positional argument.
	code, out, errOut := cli(t, "", "call", "--json", "--allow-host", host, "--resolve", host+":127.0.0.1", "--allow-private", pkg, "http", args)
	if code != exitOK || !strings.Contains(out, "pong") || !strings.Contains(errOut, "turns off the destination check") {
		t.Errorf("bare before PACKAGE: exit %d, %s, %q", code, out, errOut)
	}
	if hits != 5 {
		t.Errorf("%d requests reached the server, want 5", hits)
	}
	if code, _, errOut := cli(t, "", "call", "--allow-private=nope", pkg, "http"); code != exitUsage || !strings.Contains(errOut, `--allow-private "nope": "nope" is not a CIDR range`) {
		t.Errorf("bad CIDR: exit %d, %q", code, errOut)
	}
}

func TestFuelForms(t *testing.T) {
	tests := []struct {
		in   string
		want uint64
		ok   bool
	}{
		{"1000000000", 1e9, true},
		{"1_000_000_000", 1e9, true},
		{"1e9", 1e9, true},
		{"1E9", 1e9, true},
		{"2.5e9", 2.5e9, true},
		{"10^9", 1e9, true},
		{"1G", 1e9, true},
		{"100G", 1e11, true},
		{"1.5k", 1500, true},
		{"0", 0, true},
		{"18446744073709551615", 1<<64 - 1, true},
		{"18446744073709551616", 0, false},
		{"1e20", 0, false},
		{"1e999999999", 0, false},
		{"1.5", 0, false},
		{"1e-3", 0, false},
		{"-1", 0, false},
		{"+1", 0, false},
		{"0x10", 0, false},
		{"inf", 0, false},
		{"", 0, false},
		{"10^", 0, false},
		{"10^65", 0, false},
		{"lots", 0, false},
	}
	for _, tt := range tests {
		got, err := parseFuel(tt.in)
		if (err == nil) != tt.ok || got != tt.want {
			t.Errorf("parseFuel(%q) = %d, %v; want %d ok=%v", tt.in, got, err, tt.want, tt.ok)
		}
	}
	// As a user writes it: the budget reaches the call.
	pkg := pkgDir(t, "greet", nil)
	code, out, errOut := cli(t, "", "call", "--json", "--fuel", "1e9", pkg, "greet", `{"name":"Ada"}`)
	if m := decode(t, out); code != exitOK || m["outcome"] != "ok" {
		t.Fatalf("--fuel 1e9: exit %d, %v %q", code, m, errOut)
	}
}

func TestNetworkFlagParsers(t *testing.T) {
	hp, addrs, err := parseResolve("API.Example.com:443:127.0.0.1,[::1]")
	if err != nil || !strings.EqualFold(hp, "api.example.com:443") || len(addrs) != 2 || addrs[1] != netip.MustParseAddr("::1") {
		t.Fatalf("parseResolve = %q %v %v", hp, addrs, err)
	}
	hp, addrs, err = parseResolve("[::1]:8080:::1")
	if err != nil || hp != "[::1]:8080" || addrs[0] != netip.MustParseAddr("::1") {
		t.Fatalf("parseResolve v6 = %q %v %v", hp, addrs, err)
	}
	for _, bad := range []string{"", "host", "host:80", "host:80:", "host:x:1.2.3.4", "host:80:nope", "[::1:80:1.2.3.4", ":80:1.2.3.4", "host:80:1.2.3.4,", "host:0:1.2.3.4"} {
		if _, _, err := parseResolve(bad); err == nil || !strings.HasPrefix(err.Error(), "--resolve ") {
			t.Errorf("parseResolve(%q) = %v", bad, err)
		}
	}
	pat, h, v, err := parseCredential("*.example.com=Authorization:Bearer a:b=c")
	if err != nil || pat != "*.example.com" || h != "Authorization" || v != "Bearer a:b=c" {
		t.Fatalf("parseCredential = %q %q %q %v", pat, h, v, err)
	}
	if _, _, v, _ := parseCredential("api.example.com=X-Key:env:API_KEY"); v != "env:API_KEY" {
		t.Fatalf("env value = %q", v)
	}
	ps, err := parseAllowPrivate("127.0.0.2/32, 10.0.0.0/8,::1")
	if err != nil || len(ps) != 3 || ps[2] != netip.MustParsePrefix("::1/128") {
		t.Fatalf("parseAllowPrivate = %v %v", ps, err)
	}
	for _, bad := range []string{"", "127.0.0.1/33", "nope", "10.0.0.0/8,", "fe80::1%eth0"} {
		if _, err := parseAllowPrivate(bad); err == nil {
			t.Errorf("parseAllowPrivate(%q) accepted", bad)
		}
	}
}

// FuzzParseResolve: accepted values give a key NewPolicy accepts, and
// nothing panics.
func FuzzParseResolve(f *testing.F) {
	for _, s := range []string{"api.example.com:443:127.0.0.1", "[::1]:80:[::1],127.0.0.1", "x:1:1.2.3.4", "a:b:c"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		hp, addrs, err := parseResolve(s)
		if err != nil {
			return
		}
		if len(addrs) == 0 || hp == "" {
			t.Fatalf("parseResolve(%q) = %q %v", s, hp, addrs)
		}
	})
}

// FuzzParseFuel: no input panics or allocates without bound, and an
// accepted value reads back the same from its decimal form.
func FuzzParseFuel(f *testing.F) {
	for _, s := range []string{"1e9", "10^9", "1G", "2.5e10", "1_000", "1e999999999", "9^64"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		n, err := parseFuel(s)
		if err != nil {
			return
		}
		back, err := parseFuel(fmt.Sprint(n))
		if err != nil || back != n {
			t.Fatalf("parseFuel(%q) = %d, which reads back as %d, %v", s, n, back, err)
		}
	})
}

func filepathFromSlash(p string) string { return filepath.FromSlash(p) }

// `run --dir data` maps a relative directory as wasmtime does: the guest
// finds it as "data" (relative to its working directory "/") and as
// "/data", from Go and from C (wasi-libc).
func TestRunDirRelative(t *testing.T) {
	goProbe, err := filepath.Abs(testguest.Go(t, "../../testdata/wasi/go/fsprobe"))
	if err != nil {
		t.Fatal(err)
	}
	cProbe, _ := filepath.Abs("../../testdata/wasi/c/fsprobe.wasm")
	t.Chdir(t.TempDir())
	os.MkdirAll("data/sub", 0o755)
	os.WriteFile("data/hello.txt", []byte("from data"), 0o644)
	os.WriteFile("top.txt", []byte("from the top"), 0o644)

	code, out, errOut := cli(t, "", "run", "--dir", "data", goProbe, "preopens", "read:data/hello.txt", "read:/data/hello.txt")
	if code != 0 || strings.Count(out, "from data") != 2 || !strings.Contains(out, "/data") {
		t.Errorf("Go, --dir data: exit %d, %q %q", code, out, errOut)
	}
	code, out, errOut = cli(t, "", "run", "--dir", "./data", cProbe, "read:data/hello.txt", "read:/data/hello.txt")
	if code != 0 || strings.Count(out, "from data") != 2 {
		t.Errorf("C, --dir ./data: exit %d, %q %q", code, out, errOut)
	}
	code, out, errOut = cli(t, "", "run", "--dir", "data::files", goProbe, "read:files/hello.txt")
	if code != 0 || !strings.Contains(out, "from data") {
		t.Errorf("relative GUEST: exit %d, %q %q", code, out, errOut)
	}
	code, out, errOut = cli(t, "", "run", "--dir", ".", cProbe, "read:top.txt", "read:data/hello.txt")
	if code != 0 || !strings.Contains(out, "from the top") || !strings.Contains(out, "from data") {
		t.Errorf("--dir .: exit %d, %q %q", code, out, errOut)
	}
	code, _, errOut = cli(t, "", "run", "--dir", "../x", goProbe)
	if code != exitUsage || !strings.Contains(errOut, "name the guest path: --dir ../x::/x") {
		t.Errorf("--dir ../x: exit %d, %q", code, errOut)
	}
}

// The human call output names a volume file's host path only when the
// file is still there after the command: with --keep-tmp, or --tmp DIR.
func TestCallNamesOnlyHostPathsThatExist(t *testing.T) {
	pkg := pkgDir(t, "greet", nil)
	code, out, _ := cli(t, "", "call", pkg, "media")
	if code != exitOK || !strings.Contains(out, "[file /volume/tmp/notes.txt, 12 bytes]\n") || strings.Contains(out, " at /") {
		t.Fatalf("without --keep-tmp: exit %d\n%s", code, out)
	}
	if !strings.Contains(out, "--keep-tmp keeps them") {
		t.Errorf("no hint to --keep-tmp:\n%s", out)
	}
	code, out, _ = cli(t, "", "call", "--keep-tmp", pkg, "media")
	m := regexp.MustCompile(`\[file /volume/tmp/notes.txt, 12 bytes, at (.+)\]`).FindStringSubmatch(out)
	if code != exitOK || m == nil {
		t.Fatalf("--keep-tmp: exit %d\n%s", code, out)
	}
	defer os.RemoveAll(filepath.Dir(m[1]))
	if b, err := os.ReadFile(m[1]); err != nil || len(b) != 12 {
		t.Errorf("the printed host path %s: %q %v", m[1], b, err)
	}
	tmp := t.TempDir()
	code, out, _ = cli(t, "", "call", "--tmp", tmp, pkg, "media")
	if code != exitOK || !strings.Contains(out, "at "+filepath.Join(tmp, "notes.txt")) {
		t.Errorf("--tmp: exit %d\n%s", code, out)
	}
}

// validate --json says what the human line says.
func TestValidateJSONHasSizeAndHash(t *testing.T) {
	pkg := pkgDir(t, "greet", nil)
	_, human, _ := cli(t, "", "validate", pkg)
	code, out, _ := cli(t, "", "validate", "--json", pkg)
	m := decode(t, out)
	mod, _ := m["module"].(map[string]any)
	if code != exitOK || mod == nil {
		t.Fatalf("exit %d, %v", code, m)
	}
	want := fmt.Sprintf("(%.0f bytes, sha256 %v)", mod["bytes"], mod["sha256"])
	if !strings.Contains(human, want) {
		t.Errorf("human %q does not say %s", human, want)
	}
	b, _ := os.ReadFile(filepath.Join(pkg, "module.wasm"))
	if mod["bytes"] != float64(len(b)) || len(mod["sha256"].(string)) != 64 {
		t.Errorf("module %v, file %d bytes", mod, len(b))
	}
}
