package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/subako/subako-runner/internal/devtools/testguest"
)

const guests = "../../testdata/guests/"

// cli runs the command in-process and returns its exit status and output.
func cli(t *testing.T, stdin string, args ...string) (int, string, string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	e := &env{stdin: strings.NewReader(stdin), stdout: &stdout, stderr: &stderr, getenv: func(string) string { return "" }}
	code := mainWith(context.Background(), e, args)
	return code, stdout.String(), stderr.String()
}

// pkgDir builds a package directory around a Go guest.
func pkgDir(t *testing.T, guest string, assets map[string]string) string {
	return testguest.Package(t, testguest.Go(t, guests+guest), guest, assets)
}

func decode(t *testing.T, out string) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(out), &m); err != nil {
		t.Fatalf("output is not one JSON document: %v\n%s", err, out)
	}
	return m
}

func TestUsageAndVersion(t *testing.T) {
	if code, _, _ := cli(t, ""); code != exitUsage {
		t.Errorf("no command: exit %d, want 2", code)
	}
	if code, _, errOut := cli(t, "", "frobnicate"); code != exitUsage || !strings.Contains(errOut, "unknown command") {
		t.Errorf("unknown command: exit %d, %q", code, errOut)
	}
	code, out, _ := cli(t, "", "version")
	if code != 0 || !strings.Contains(out, "ABI 1") || !strings.Contains(out, "2026-07-28") {
		t.Errorf("version: exit %d, %q", code, out)
	}
	code, out, _ = cli(t, "", "version", "--json")
	if m := decode(t, out); code != 0 || m["abi"] != float64(1) || m["mcp"] != "2026-07-28" {
		t.Errorf("version --json: %v", m)
	}
	for _, c := range []string{"validate", "discover", "call", "run", "version", "check"} {
		code, out, errOut := cli(t, "", c, "--help")
		if code != 0 || !strings.Contains(out, "Usage:\n  subako-runner "+c) || errOut != "" {
			t.Errorf("%s --help: exit %d, stdout %q, stderr %q", c, code, out, errOut)
		}
	}
	for _, args := range [][]string{{"validate"}, {"call", "x"}, {"call", "--memory", "lots", "a", "b"}, {"call", "--timeout", "-1s", "a", "b"}, {"discover", "--bogus", "x"}} {
		if code, _, _ := cli(t, "", args...); code != exitUsage {
			t.Errorf("%v: exit %d, want 2", args, code)
		}
	}
}

func TestValidate(t *testing.T) {
	good := pkgDir(t, "greet", nil)
	code, out, _ := cli(t, "", "validate", "--json", good)
	if m := decode(t, out); code != exitOK || m["ok"] != true || m["rejection"] != nil {
		t.Fatalf("valid package: exit %d, %v", code, m)
	}
	code, out, _ = cli(t, "", "validate", good)
	if code != exitOK || !strings.HasPrefix(out, "ok: ") {
		t.Fatalf("human: exit %d, %q", code, out)
	}

	bad := t.TempDir()
	os.WriteFile(filepath.Join(bad, "subako-package.json"), []byte(`{"abi":2}`), 0o644)
	os.WriteFile(filepath.Join(bad, "module.wasm"), []byte("not wasm at all"), 0o644)
	code, out, _ = cli(t, "", "validate", "--json", bad)
	m := decode(t, out)
	if code != exitRejected || m["ok"] != false {
		t.Fatalf("bad package: exit %d, %v", code, m)
	}
	codes := map[string]bool{}
	for _, r := range m["rejection"].([]any) {
		codes[r.(map[string]any)["code"].(string)] = true
	}
	if !codes["bad_manifest"] || !codes["not_wasm"] {
		t.Fatalf("want bad_manifest and not_wasm, got %v", codes)
	}
	if _, has := m["tools"]; has {
		t.Error("absent parts must be left out, not null")
	}
	code, out, _ = cli(t, "", "validate", bad)
	if code != exitRejected || !strings.Contains(out, "bad_manifest: ") || !strings.Contains(out, "not_wasm: ") {
		t.Fatalf("human rejection: exit %d, %q", code, out)
	}
	if code, _, _ := cli(t, "", "validate", filepath.Join(bad, "missing")); code != exitUsage {
		t.Fatalf("unreadable path: exit %d, want 2", code)
	}
}

func TestDiscover(t *testing.T) {
	code, out, _ := cli(t, "", "discover", "--json", pkgDir(t, "greet", nil))
	m := decode(t, out)
	if code != exitOK || m["ok"] != true {
		t.Fatalf("exit %d, %v", code, m)
	}
	tools := m["tools"].([]any)
	if tools[0].(map[string]any)["name"] != "greet" {
		t.Fatalf("first tool %v", tools[0])
	}
	code, out, _ = cli(t, "", "discover", pkgDir(t, "misbehave", map[string]string{"mode": "no_tools"}))
	if code != exitRejected || !strings.Contains(out, "no_tools") {
		t.Fatalf("no tools: exit %d, %q", code, out)
	}
	code, out, _ = cli(t, "", "discover", "--json", pkgDir(t, "misbehave", map[string]string{"mode": "tools/list:exit_code_now"}))
	m = decode(t, out)
	if code != exitCrashed || m["crash"].(map[string]any)["reason"] != "exit_code" {
		t.Fatalf("crashed discovery: exit %d, %v", code, m)
	}
}

func TestCall(t *testing.T) {
	greet := pkgDir(t, "greet", nil)
	code, out, _ := cli(t, "", "call", "--json", greet, "greet", `{"name":"Ada"}`)
	m := decode(t, out)
	if code != exitOK || m["outcome"] != "ok" {
		t.Fatalf("exit %d, %v", code, m)
	}
	view := m["view"].([]any)[0].(map[string]any)
	if !strings.Contains(view["text"].(string), "Hello, Ada!") {
		t.Fatalf("view %v", view)
	}
	if m["result"].(map[string]any)["structuredContent"].(map[string]any)["message"] != "Hello, Ada!" {
		t.Fatalf("result %v", m["result"])
	}
	if _, ok := m["stats"].(map[string]any)["durationMs"]; !ok {
		t.Fatalf("stats %v", m["stats"])
	}

	code, out, _ = cli(t, `{"name":""}`, "call", "--args-file", "-", greet, "greet")
	if code != exitToolError || !strings.Contains(out, "name must not be empty") {
		t.Fatalf("tool error: exit %d, %q", code, out)
	}
	code, out, _ = cli(t, "", "call", "--json", pkgDir(t, "misbehave", nil), "exit_code")
	m = decode(t, out)
	if code != exitCrashed || m["outcome"] != "crashed" || m["crash"].(map[string]any)["reason"] != "exit_code" {
		t.Fatalf("crash: exit %d, %v", code, m)
	}
	if code, _, errOut := cli(t, "", "call", greet, "nope"); code != exitUsage || !strings.Contains(errOut, "unknown_tool") {
		t.Fatalf("unknown tool: exit %d, %q", code, errOut)
	}
	code, out, _ = cli(t, "", "call", "--json", t.TempDir(), "greet")
	if m := decode(t, out); code != exitRejected || m["outcome"] != "rejected" {
		t.Fatalf("rejected: exit %d, %v", code, m)
	}
}

func TestCallKeepTmpAndData(t *testing.T) {
	greet := pkgDir(t, "greet", nil)
	data := t.TempDir()
	code, out, _ := cli(t, "", "call", "--json", "--keep-tmp", "--data", data, greet, "write_file", `{"path":"/volume/data/out.txt","text":"kept"}`)
	m := decode(t, out)
	if code != exitOK {
		t.Fatalf("exit %d, %v", code, m)
	}
	if b, err := os.ReadFile(filepath.Join(data, "out.txt")); err != nil || string(b) != "kept" {
		t.Fatalf("/volume/data write: %q %v", b, err)
	}
	tmp, _ := m["tmpDir"].(string)
	if tmp == "" {
		t.Fatal("--keep-tmp did not report the directory")
	}
	defer os.RemoveAll(tmp)
	if _, err := os.Stat(tmp); err != nil {
		t.Fatalf("--keep-tmp did not keep it: %v", err)
	}
}

func TestRunPassesStdioArgsEnvAndExitCode(t *testing.T) {
	module := testguest.Go(t, "../../testdata/wasi/go/basics")
	code, out, errOut := cli(t, "", "run", "--env", "GREETING=hi", "--", module, "-v", "exit=7")
	if code != 7 {
		t.Fatalf("exit %d, want the module's 7; stderr %q", code, errOut)
	}
	if !strings.Contains(out, `args=["module.wasm" "-v" "exit=7"]`) && !strings.Contains(out, `"-v" "exit=7"]`) {
		t.Errorf("args not passed: %q", out)
	}
	if !strings.Contains(out, `env=["GREETING=hi"]`) {
		t.Errorf("env not passed: %q", out)
	}

	echo := testguest.Go(t, "../../testdata/wasi/go/echo")
	code, out, _ = cli(t, "one\ntwo\n", "run", echo)
	if code != 0 || !strings.Contains(out, "echo: one") || !strings.Contains(out, "echo: two") {
		t.Fatalf("stdin not passed through: exit %d, %q", code, out)
	}
}

func TestRunMountsDirAndReportsTraps(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "hello.txt"), []byte("from the host"), 0o644)
	module := testguest.Go(t, "../../testdata/wasi/go/fsprobe")
	code, out, errOut := cli(t, "", "run", "--dir", dir+"::/work", module, "read:/work/hello.txt")
	if code != 0 || !strings.Contains(out, "from the host") {
		t.Fatalf("--dir: exit %d, out %q, err %q", code, out, errOut)
	}
	code, _, errOut = cli(t, "", "run", "../../testdata/guests/wat/trap.wasm")
	if code != exitTrap || !strings.Contains(errOut, "trap") {
		t.Fatalf("trap: exit %d, %q", code, errOut)
	}
	if code, _, _ := cli(t, "", "run", "--dir", filepath.Join(dir, "missing"), module); code != exitUsage {
		t.Fatalf("missing --dir: exit %d", code)
	}
}

func TestCallNetworkFlags(t *testing.T) {
	var gotAuth string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		gotAuth = r.Header.Get("Authorization")
		fmt.Fprint(w, "pong")
	}))
	defer srv.Close()
	port := srv.Listener.Addr().(*net.TCPAddr).Port
	host := fmt.Sprintf("api.test:%d", port)
	pkg := pkgDir(t, "httpprobe", nil)
	args := fmt.Sprintf(`{"request":{"url":"http://%s/ping"}}`, host)

	var stdout, stderr bytes.Buffer
	e := &env{stdin: strings.NewReader(""), stdout: &stdout, stderr: &stderr, getenv: func(k string) string {
		if k == "API_TOKEN" {
			return "Bearer s3cret"
		}
		return ""
	}}
	code := mainWith(context.Background(), e, []string{"call", "--json",
		"--allow-host", host, "--resolve", host + ":127.0.0.1", "--allow-private=127.0.0.1/32",
		"--credential", host + "=Authorization:env:API_TOKEN", pkg, "http", args})
	m := decode(t, stdout.String())
	if code != exitOK || !strings.Contains(fmt.Sprint(m["result"]), "pong") {
		t.Fatalf("exit %d, %v, stderr %q", code, m, stderr.String())
	}
	if gotAuth != "Bearer s3cret" {
		t.Errorf("injected credential %q", gotAuth)
	}
	if !strings.Contains(stderr.String(), "WARNING") {
		t.Error("--allow-private did not warn")
	}
	if strings.Contains(stdout.String(), "s3cret") {
		t.Error("the secret appears in the output")
	}

	// Without --allow-private the loopback destination is refused.
	code, out, _ := cli(t, "", "call", "--json", "--allow-host", host, "--resolve", host+":127.0.0.1", pkg, "http", args)
	if code != exitOK || !strings.Contains(out, "forbidden_destination") {
		t.Fatalf("no override: exit %d, %s", code, out)
	}
	for _, bad := range [][]string{{"--allow-host", "*.com"}, {"--resolve", "nonsense"}, {"--allow-private=not-a-cidr"}, {"--credential", "x"}} {
		if code, _, _ := cli(t, "", append(append([]string{"call"}, bad...), pkg, "http")...); code != exitUsage {
			t.Errorf("%v: exit %d, want 2", bad, code)
		}
	}
}

// `run` gives every toolchain's guest the same file system: the Rust, C and
// AssemblyScript probes write through --tmp and read back, see EROFS on the
// read-only --skills mount and ENOTSUP from fd_allocate, and the preopen
// order is the ABI's (the Go guest is covered by TestRunMountsDir...).
func TestRunToolchainGuests(t *testing.T) {
	tmp, skills := t.TempDir(), t.TempDir()
	os.MkdirAll(filepath.Join(skills, "alpha"), 0o755)
	tests := []struct {
		module string
		args   []string
		want   []string
	}{
		{"../../testdata/wasi/rust/fsprobe.wasm",
			[]string{"write", "/volume/tmp/r.txt", "rust", "read", "/volume/tmp/r.txt", "write", "/skills/alpha/x", "no"},
			[]string{"ok wrote 4", `ok 4 "rust"`, "err 69 EROFS"}},
		{"../../testdata/wasi/c/fsprobe.wasm",
			[]string{"write:/volume/tmp/c.txt:3", "allocate:/volume/tmp/c.txt"},
			[]string{"write:/volume/tmp/c.txt:3 ok", "allocate:/volume/tmp/c.txt errno=58"}},
		{"../../testdata/wasi/as/fsprobe.wasm",
			[]string{"preopens", "write", "/volume/tmp/a.txt", "as", "ls", "/volume/tmp"},
			[]string{"ok 3:/volume/tmp 4:/skills 5:/skills/alpha 6:/extra", "ok wrote 2", "a.txt"}},
	}
	for _, tt := range tests {
		t.Run(filepath.Base(filepath.Dir(tt.module)), func(t *testing.T) {
			args := append([]string{"run", "--tmp", tmp, "--skills", skills, "--env", "PROBE=1", "--dir", t.TempDir() + "::/extra", tt.module}, tt.args...)
			code, out, errOut := cli(t, "", args...)
			if code != 0 {
				t.Fatalf("exit %d, stdout %q, stderr %q", code, out, errOut)
			}
			for _, w := range tt.want {
				if !strings.Contains(out, w) {
					t.Errorf("output lacks %q:\n%s", w, out)
				}
			}
		})
	}
}

func TestDiscoverTimeoutBoundsDiscovery(t *testing.T) {
	// Parallel: it waits out --timeout 1s.
	t.Parallel()
	slow := pkgDir(t, "misbehave", map[string]string{"mode": "slow_discovery"})
	code, out, _ := cli(t, "", "discover", "--json", "--timeout", "1s", slow)
	m := decode(t, out)
	crash, _ := m["crash"].(map[string]any)
	if code != exitCrashed || crash["reason"] != "timeout" {
		t.Fatalf("exit %d, %v", code, m)
	}
	// The crash names the instance's run time, which starts at the deadline
	// that applied: the 10 s default would read 10s or more. (The command's
	// own wall time also counts compiling, which -race slows down.)
	msg, _ := crash["message"].(string)
	ran, err := time.ParseDuration(strings.TrimSuffix(msg[strings.LastIndex(msg, "(")+1:], ")"))
	if err != nil {
		t.Fatalf("crash message %q: %v", msg, err)
	}
	if ran < time.Second || ran >= 10*time.Second {
		t.Errorf("discovery ran %v: --timeout 1s did not bound it", ran)
	}
}
