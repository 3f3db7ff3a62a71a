package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/subako/subako-runner/internal/devtools/testguest"
	"github.com/subako/subako-runner/runtime"
)

// The default (worker processes) and --isolation=in-process give the same
// call --json, stats aside (timings and memory differ run to run).
func TestIsolationModesGiveTheSameCall(t *testing.T) {
	pkg := "../../testdata/packages/cgreet"
	var docs []map[string]any
	for _, args := range [][]string{
		{"call", "--json", pkg, "greet", `{"name":"Ada"}`},
		{"call", "--json", "--isolation=workers", pkg, "greet", `{"name":"Ada"}`},
		{"call", "--json", "--isolation", "in-process", pkg, "greet", `{"name":"Ada"}`},
	} {
		code, out, errOut := cli(t, "", args...)
		if code != exitOK {
			t.Fatalf("%q: exit %d\n%s%s", args, code, out, errOut)
		}
		m := decode(t, out)
		if m["stats"] == nil {
			t.Fatalf("%q: no stats: %v", args, m)
		}
		delete(m, "stats")
		docs = append(docs, m)
	}
	want, _ := json.Marshal(docs[2])
	for i, d := range docs[:2] {
		got, _ := json.Marshal(d)
		if !bytes.Equal(got, want) {
			t.Errorf("run %d under workers:\n%s\nin-process:\n%s", i, got, want)
		}
	}
	if !strings.Contains(string(want), "Hello, Ada!") {
		t.Errorf("the call did not greet: %s", want)
	}
}

func TestIsolationFlagValues(t *testing.T) {
	code, _, errOut := cli(t, "", "validate", "--isolation", "vm", "../../testdata/packages/cgreet")
	if code != exitUsage || !strings.Contains(errOut, `--isolation "vm": want workers or in-process`) {
		t.Errorf("exit %d, %q", code, errOut)
	}
	for _, c := range []string{"validate", "discover", "call", "mcp", "inspect", "check", "run"} {
		_, out, _ := cli(t, "", c, "--help")
		if !strings.Contains(out, "--isolation MODE") || !strings.Contains(out, "(default workers)") || !strings.Contains(out, "--require-sandbox") {
			t.Errorf("%s --help lacks --isolation or --require-sandbox:\n%s", c, out)
		}
		if hasWorkers := strings.Contains(out, "--workers N"); hasWorkers != (c == "mcp" || c == "inspect") {
			t.Errorf("%s --help: --workers listed %v", c, hasWorkers)
		}
	}
}

// The worker command is for subako-runner's own runtime: by hand it says
// so and exits 2, and no help lists it.
func TestWorkerCommandByHand(t *testing.T) {
	for _, args := range [][]string{{"worker"}, {"worker", "--json", "x"}} {
		code, out, errOut := cli(t, "", args...)
		if code != exitUsage || out != "" || errOut != "subako-runner: worker is started by subako-runner itself; it is not meant to be run by hand\n" {
			t.Errorf("%q: exit %d, stdout %q, stderr %q", args, code, out, errOut)
		}
	}
	if _, out, _ := cli(t, "", "--help"); strings.Contains(out, "\n  worker ") {
		t.Errorf("the top-level help lists the worker command:\n%s", out)
	}
}

// A bare .wasm in a directory of its own works under workers: the CLI
// lets them read the directory the module is in, whatever it is.
func TestBareWasmOutsideEveryKnownDirectory(t *testing.T) {
	module, err := os.ReadFile(testguest.Go(t, guests+"greet"))
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "somewhere", "else")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "greet.wasm")
	if err := os.WriteFile(path, module, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"validate", path},
		{"discover", "--json", path},
		{"call", "--json", path, "greet", `{"name":"Ada"}`},
	} {
		code, out, errOut := cli(t, "", args...)
		if code != exitOK {
			t.Errorf("%q: exit %d\n%s%s", args, code, out, errOut)
		}
	}
	// A module that is a symbolic link to it, in a package directory of
	// its own: the workers read where the link leads too.
	pkg := filepath.Join(t.TempDir(), "linked")
	os.MkdirAll(pkg, 0o755)
	os.WriteFile(filepath.Join(pkg, "subako-package.json"), []byte(`{"abi":1,"name":"linked"}`), 0o644)
	if err := os.Symlink(path, filepath.Join(pkg, "module.wasm")); err != nil {
		t.Fatal(err)
	}
	if code, out, errOut := cli(t, "", "call", pkg, "greet", `{"name":"Ada"}`); code != exitOK || !strings.Contains(out, "Hello, Ada!") {
		t.Errorf("linked module: exit %d\n%s%s", code, out, errOut)
	}
	// A relative path too: the worker resolves it as the command does.
	wd, _ := os.Getwd()
	rel, err := filepath.Rel(wd, path)
	if err != nil {
		t.Fatal(err)
	}
	if code, out, errOut := cli(t, "", "call", rel, "greet", `{"name":"Ada"}`); code != exitOK || !strings.Contains(out, "Hello, Ada!") {
		t.Errorf("relative %s: exit %d\n%s%s", rel, code, out, errOut)
	}
}

// The volumes the flags name are the workers' to reach: --data and --tmp
// written, --skills read, and a kept /volume/tmp made for the call.
func TestVolumesReachTheWorkers(t *testing.T) {
	pkg := pkgDir(t, "volops", nil)
	data, tmp, skills := t.TempDir(), t.TempDir(), t.TempDir()
	os.MkdirAll(filepath.Join(skills, "s1"), 0o755)
	os.WriteFile(filepath.Join(skills, "s1", "SKILL.md"), []byte("# s1"), 0o644)
	for _, tt := range []struct{ args, file string }{
		{`{"op":"create","path":"/volume/data/a.txt"}`, filepath.Join(data, "a.txt")},
		{`{"op":"create","path":"/volume/tmp/b.txt"}`, filepath.Join(tmp, "b.txt")},
		{`{"op":"stat","path":"/skills/s1/SKILL.md"}`, ""},
	} {
		code, out, errOut := cli(t, "", "call", "--data", data, "--tmp", tmp, "--skills", skills, pkg, "fs", tt.args)
		if code != exitOK || !strings.HasPrefix(out, "ok\n") {
			t.Fatalf("%s: exit %d\n%s%s", tt.args, code, out, errOut)
		}
		if _, err := os.Stat(tt.file); tt.file != "" && err != nil {
			t.Errorf("%s: %v", tt.args, err)
		}
	}
	code, out, errOut := cli(t, "", "call", "--json", "--keep-tmp", pkg, "fs", `{"op":"create","path":"/volume/tmp/c.txt"}`)
	if code != exitOK {
		t.Fatalf("--keep-tmp: exit %d\n%s%s", code, out, errOut)
	}
	kept, _ := decode(t, out)["tmpDir"].(string)
	defer os.RemoveAll(kept)
	if _, err := os.Stat(filepath.Join(kept, "c.txt")); kept == "" || err != nil {
		t.Fatalf("kept /volume/tmp %q: %v", kept, err)
	}
}

// killWorkers writes like stderr and, the first time marker shows, kills
// (SIGKILL) this process's worker children: the worker dies under the
// call, as when the kernel kills it for its memory.
type killWorkers struct {
	mu     sync.Mutex
	buf    bytes.Buffer
	marker string
	killed int
}

func (w *killWorkers) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf.Write(p)
	if w.killed == 0 && strings.Contains(w.buf.String(), w.marker) {
		w.killed = killWorkerChildren()
	}
	return len(p), nil
}

func (w *killWorkers) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.String()
}

// killWorkerChildren kills the children of this process started as
// workers (their last argument is "worker") and says how many.
func killWorkerChildren() int {
	entries, _ := os.ReadDir("/proc")
	n := 0
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...: comm may hold spaces, so after ')'.
		i := bytes.LastIndexByte(stat, ')')
		f := strings.Fields(string(stat[i+1:]))
		if len(f) < 2 || f[1] != strconv.Itoa(os.Getpid()) {
			continue
		}
		cmdline, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		args := strings.Split(strings.TrimRight(string(cmdline), "\x00"), "\x00")
		if args[len(args)-1] == workerArg && syscall.Kill(pid, syscall.SIGKILL) == nil {
			n++
		}
	}
	return n
}

// A worker that dies under the call is a host error: exit 2, one stderr
// line naming worker_exited, and with --json the document says so.
func TestWorkerDeathIsAHostError(t *testing.T) {
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skip("no /proc: the test finds the worker there")
	}
	pkg := pkgDir(t, "misbehave", nil)
	for _, asJSON := range []bool{false, true} {
		args := []string{"call", "--trace", pkg, "timeout_sleep"}
		if asJSON {
			args = append(args, "--json")
		}
		var stdout bytes.Buffer
		// The trace's "tools/call" says the call is running in the worker.
		stderr := &killWorkers{marker: "tools/call"}
		e := &env{stdin: strings.NewReader(""), stdout: &stdout, stderr: stderr, getenv: func(string) string { return "" }}
		code := mainWith(context.Background(), e, args)
		if stderr.killed == 0 {
			t.Fatalf("json %v: no worker child was found to kill; exit %d\n%s", asJSON, code, stderr.String())
		}
		if code != exitUsage || !strings.Contains(stderr.String(), "subako-runner: host error (worker_exited): call timeout_sleep: the worker process (pid ") {
			t.Fatalf("json %v: exit %d\nstdout %s\nstderr %s", asJSON, code, stdout.String(), stderr.String())
		}
		if !asJSON {
			if stdout.Len() != 0 {
				t.Errorf("a host error wrote on stdout: %q", stdout.String())
			}
			continue
		}
		m := decode(t, stdout.String())
		he, _ := m["error"].(map[string]any)
		if m["outcome"] != outcomeHostError || he["code"] != runtime.CodeWorkerExited || m["crash"] != nil {
			t.Errorf("--json: %v", m)
		}
	}
}

// version says where modules run and what sandbox the workers have.
func TestVersionShowsTheSandbox(t *testing.T) {
	code, out, _ := cli(t, "", "version")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if code != exitOK || len(lines) != 5 || lines[3] != "isolation workers (--isolation=in-process turns it off)" || !strings.HasPrefix(lines[4], "sandbox: ") {
		t.Fatalf("exit %d, %q", code, out)
	}
	code, out, _ = cli(t, "", "version", "--json")
	m := decode(t, out)
	sb, _ := m["sandbox"].(map[string]any)
	if code != exitOK || m["isolation"] != "workers" || sb["workers"] != true {
		t.Fatalf("exit %d, %v", code, m)
	}
	// --version stays the three lines scripts read.
	if _, out, _ := cli(t, "", "--version"); strings.Count(out, "\n") != 3 {
		t.Errorf("--version: %q", out)
	}
}

func TestSandboxWarningIsOneLine(t *testing.T) {
	var b bytes.Buffer
	sandboxWarning(&b, runtime.SandboxReport{Workers: true})
	sandboxWarning(&b, runtime.SandboxReport{})
	if b.Len() != 0 {
		t.Fatalf("a complete sandbox (or none asked for) warned: %q", b.String())
	}
	sandboxWarning(&b, runtime.SandboxReport{Workers: true, Missing: []string{"landlock: kernel has no Landlock", "seccomp: off"}})
	if got := b.String(); strings.Count(got, "\n") != 1 || !strings.HasPrefix(got, "subako-runner: WARNING: worker sandbox incomplete: landlock: kernel has no Landlock; seccomp: off") {
		t.Fatalf("%q", got)
	}
}

// The configuration a command gives its workers: this executable with the
// worker command, one worker for a one-shot command, and the directories
// made absolute, existing ones only.
func TestWorkerConfigPaths(t *testing.T) {
	dir := t.TempDir()
	module := filepath.Join(dir, "m.wasm")
	os.WriteFile(module, []byte("\x00asm"), 0o644)
	data := t.TempDir()
	h := hostFlags{readOnly: []string{"", filepath.Join(dir, "missing")}, readWrite: []string{data, data}}
	wc, err := h.workerConfig(module)
	if err != nil {
		t.Fatal(err)
	}
	exe, _ := os.Executable()
	if wc.Executable != exe || len(wc.Args) != 1 || wc.Args[0] != "worker" || wc.Count != 1 {
		t.Errorf("%+v", wc)
	}
	if len(wc.ReadOnly) != 1 || wc.ReadOnly[0] != dir || len(wc.ReadWrite) != 1 || wc.ReadWrite[0] != data {
		t.Errorf("read-only %q, read-write %q", wc.ReadOnly, wc.ReadWrite)
	}
	if _, err := (&hostFlags{serves: true, workers: -1}).workerConfig(dir); err == nil {
		t.Error("--workers -1 accepted")
	}
	h = hostFlags{serves: true, workers: 3, requireSandbox: true}
	if wc, _ := h.workerConfig(dir); wc.Count != 3 || !wc.RequireSandbox || wc.ReadOnly[0] != dir {
		t.Errorf("server: %+v", wc)
	}
}

// The runtime's own sandbox line is dropped (sandboxWarning says it), and
// a worker's complaint about its channel only once the runtime closes.
func TestQuietLog(t *testing.T) {
	var h hostFlags
	core, logs := observer.New(zap.DebugLevel)
	log := zap.New(core).WithOptions(zap.WrapCore(h.quietLog)).With(zap.String("k", "v"))
	channel := zap.String("line", "subako worker: read subako-worker-channel: connection reset by peer")
	log.Warn("worker sandbox incomplete: guests run in worker processes without these layers")
	log.Warn("worker stderr", zap.Int("slot", 0), channel)
	h.closing.Store(true)
	log.Warn("worker stderr", zap.Int("slot", 0), channel)
	log.Warn("worker stderr", zap.Int("slot", 0), zap.String("line", "panic: something else"))
	var got []string
	for _, e := range logs.All() {
		got = append(got, e.Message+" "+e.ContextMap()["line"].(string))
	}
	want := []string{"worker stderr " + channel.String, "worker stderr panic: something else"}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("logged:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
