package main

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/subako/subako-runner/cmd/subako-runner/internal/scaffold"
)

// toolchain says how to run `make` for a language's project: extra make
// variables, or why it cannot (the toolchain is missing).
func toolchain(t *testing.T, lang string) (vars []string, missing string) {
	t.Helper()
	if _, err := exec.LookPath("make"); err != nil {
		return nil, "make is not on PATH"
	}
	switch lang {
	case "go":
		// The Go that runs the tests builds the guest too.
		return []string{"GO=" + filepath.Join(runtime.GOROOT(), "bin", "go")}, ""
	case "c":
		clang, err := exec.LookPath("clang")
		if err != nil {
			return nil, "clang is not on PATH (apt install clang lld wasi-libc libclang-rt-dev-wasm32)"
		}
		out, err := exec.Command(clang, "--target=wasm32-wasi", "-print-file-name=libc.a").Output()
		if p := strings.TrimSpace(string(out)); err != nil || !filepath.IsAbs(p) {
			return nil, "clang finds no wasi-libc (apt install wasi-libc)"
		}
		return nil, ""
	case "rust":
		// The Makefile finds a rustc with the WASI standard library
		// itself, past a rustup rustc without it first on PATH: the build
		// below is the test of that on a machine that has both.
		if scaffold.FindRustc(scaffold.RustcCandidates(os.Getenv("RUSTC"), os.Getenv("PATH"), "")) == "" {
			return nil, "no rustc with a wasm32-wasip1 or wasm32-wasi standard library (" + strings.Join(scaffold.RustTargetHelp(), "; ") + ")"
		}
		return nil, ""
	case "as":
		// Tests reach no registry: the compiler is the one .ci/run (or the
		// fixtures' Makefile) installed.
		asc := os.Getenv("SUBAKO_ASC")
		if asc == "" {
			asc = "/tmp/subako-asc-0.28.20/node_modules/.bin/asc"
		}
		if _, err := os.Stat(asc); err != nil {
			return nil, "no AssemblyScript compiler at " + asc + " (npm install --prefix /tmp/subako-asc-0.28.20 assemblyscript@0.28.20, or set SUBAKO_ASC)"
		}
		return []string{"ASC=" + asc}, ""
	}
	t.Fatalf("no toolchain known for %q", lang)
	return nil, ""
}

// initAndBuild runs `subako-runner init` and the project's `make`, and
// returns the built package directory. In CI a missing toolchain fails the
// test; elsewhere it is skipped, saying so.
func initAndBuild(t *testing.T, lang string) string {
	t.Helper()
	vars, missing := toolchain(t, lang)
	if missing != "" {
		if os.Getenv("CI") == "true" {
			t.Fatalf("the %s template cannot be built: %s (.ci/run installs it)", lang, missing)
		}
		t.Logf("SKIPPING the %s template's build: %s", lang, missing)
		t.Skip(missing)
	}
	dir := filepath.Join(t.TempDir(), "hello")
	code, out, errOut := cli(t, "", "init", "--lang", lang, "--dir", dir, "hello")
	if code != exitOK || !strings.Contains(out, "created "+dir) {
		t.Fatalf("init: exit %d\n%s\n%s", code, out, errOut)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "make", vars...)
	cmd.Dir = dir
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("make in the %s project: %v\n%s", lang, err, b)
	}
	return filepath.Join(dir, "package")
}

// Every template builds with its toolchain, passes check with neither
// failure nor warning, greets, and fetches from a local server once given
// the flags its refusals name (issue 28).
func TestInitBuildsAPackageThatPassesCheck(t *testing.T) {
	if testing.Short() {
		t.Skip("-short (the race pass): the builds run in their toolchains' processes, and the first pass ran them")
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte("hello from the test server"))
	}))
	defer srv.Close()
	u, _ := url.Parse(srv.URL)
	for _, l := range scaffold.Languages() {
		t.Run(l.ID, func(t *testing.T) {
			pkg := initAndBuild(t, l.ID)
			code, out, errOut := cli(t, "", "check", pkg)
			if code != exitOK || !strings.Contains(out, " 0 warnings, 0 failed") {
				t.Errorf("check: exit %d\n%s\n%s", code, out, errOut)
			}
			code, out, _ = cli(t, "", "call", pkg, "greet", `{"name": "Ada"}`)
			if code != exitOK || !strings.HasPrefix(out, "{\"message\":\"Hello, Ada!\"}\nstructuredContent: {\"message\":\"Hello, Ada!\"}\n") {
				t.Errorf("greet: exit %d\n%s", code, out)
			}
			code, out, _ = cli(t, "", "call", pkg, "no_such_tool")
			if code != exitUsage {
				t.Errorf("an unknown tool: exit %d\n%s", code, out)
			}
			code, out, errOut = cli(t, "", "call", "--allow-host", u.Host, "--allow-private", "127.0.0.1/32", pkg, "fetch", `{"url": "`+srv.URL+`/"}`)
			if code != exitOK || !strings.HasPrefix(out, "HTTP 200\n\nhello from the test server\n") {
				t.Errorf("fetch: exit %d\n%s\n%s", code, out, errOut)
			}
		})
	}
}

func TestInitRefusesBadNamesLanguagesAndNonEmptyDirectories(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "keep.txt"), []byte("mine"), 0o644)
	tests := []struct {
		args []string
		code int
		want string
	}{
		{[]string{"init", "--lang", "zig", "x"}, exitUsage, `subako-runner: --lang "zig": want one of go, c, rust, as`},
		{[]string{"init", "Hello World"}, exitUsage, `subako-runner: init: "Hello World" cannot name a package`},
		{[]string{"init", `a"b`}, exitUsage, `cannot name a package`},
		{[]string{"init", "--dir", dir, "hello"}, exitUsage, "is not empty; init writes only into a new or empty directory"},
		{[]string{"init"}, exitUsage, "subako-runner: init: missing NAME"},
	}
	for _, tt := range tests {
		code, _, errOut := cli(t, "", tt.args...)
		if code != tt.code || !strings.Contains(errOut, tt.want) {
			t.Errorf("%q: exit %d, %q; want exit %d and %q", tt.args, code, errOut, tt.code, tt.want)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "keep.txt")); string(b) != "mine" {
		t.Errorf("the author's file changed: %q", b)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("init wrote into a non-empty directory: %v", entries)
	}
}

// The templates are plain text with the name put in: nothing of another
// name or a placeholder is left, and each language gets the files its
// Makefile builds from.
func TestScaffoldFiles(t *testing.T) {
	want := map[string][]string{
		"go":   {"Makefile", "go.mod", "main.go", "package/subako-package.json", "README.md", ".gitignore"},
		"c":    {"Makefile", "main.c", "package/subako-package.json", "README.md", ".gitignore"},
		"rust": {"Makefile", "src/main.rs", "package/subako-package.json", "README.md", ".gitignore"},
		"as":   {"Makefile", "main.ts", "package.json", "package/subako-package.json", "README.md", ".gitignore"},
	}
	for lang, paths := range want {
		files, err := scaffold.Files(lang, "my-tool")
		if err != nil {
			t.Fatal(err)
		}
		if len(files) != len(paths) {
			t.Errorf("%s: %d files, want %v", lang, len(files), paths)
		}
		for _, p := range paths {
			b, ok := files[p]
			if !ok {
				t.Errorf("%s: no %s", lang, p)
			}
			if bytes.Contains(b, []byte("__NAME__")) || bytes.Contains(b, []byte("__LANG__")) {
				t.Errorf("%s/%s keeps a placeholder", lang, p)
			}
		}
		if !bytes.Contains(files["package/subako-package.json"], []byte(`"name": "my-tool"`)) {
			t.Errorf("%s: the manifest does not carry the name:\n%s", lang, files["package/subako-package.json"])
		}
	}
}

// authoring.md's `init` transcript is what init prints, run in an empty
// directory.
func TestAuthoringDocInitTranscript(t *testing.T) {
	blocks, lines := docBlocks(t, docsDir+"authoring.md", "text")
	found := 0
	for i, b := range blocks {
		if len(b) == 0 || !strings.HasPrefix(b[0], "$ subako-runner init ") {
			continue
		}
		found++
		words, _, _, err := parseCommand(strings.TrimPrefix(b[0], "$ "))
		if err != nil {
			t.Fatal(err)
		}
		t.Chdir(t.TempDir())
		code, out, errOut := cli(t, "", words[1:]...)
		if code != exitOK || !outputMatches(b[1:], splitOutput(out)) {
			t.Errorf("authoring.md:%d: %s\nexit %d; the doc shows\n%s\nit wrote\n%s%s", lines[i], b[0], code, strings.Join(b[1:], "\n"), out, errOut)
		}
	}
	if found == 0 {
		t.Error("authoring.md shows no `subako-runner init` transcript")
	}
}

// fakeRustc writes dir/rustc, a stand-in whose sysroot has the standard
// libraries of targets (none: a rustup rustc without the WASI target)
// and which "compiles" by writing its -o file with its own name, so that
// a test sees which rustc make chose.
func fakeRustc(t *testing.T, dir string, targets ...string) string {
	t.Helper()
	root := filepath.Join(dir, "sysroot")
	for _, target := range append(targets, "x86_64-unknown-linux-gnu") {
		if err := os.MkdirAll(filepath.Join(root, "lib", "rustlib", target), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	script := "#!/bin/sh\nif [ \"$1\" = --print ]; then echo '" + root + "'; exit 0; fi\n" +
		"all=\"$*\"\nwhile [ $# -gt 0 ]; do if [ \"$1\" = -o ]; then echo \"" + dir + " $all\" > \"$2\"; fi; shift; done\n"
	if err := os.WriteFile(filepath.Join(dir, "rustc"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return filepath.Join(dir, "rustc")
}

// The Rust project's Makefile builds with the first rustc that has the
// WASI standard library, though a rustup rustc without it comes first on
// PATH (issue 42), picks the target that library is for, and when no rustc
// has it says the two ways to get one — as init does, before make runs.
func TestRustMakefileFindsARustcWithTheWASITarget(t *testing.T) {
	if _, err := exec.LookPath("make"); err != nil {
		t.Skip("make is not on PATH")
	}
	makeBin, _ := exec.LookPath("make")
	bins := t.TempDir()
	dirs := map[string]string{}
	for _, name := range []string{"rustup", "debian", "wasip1"} {
		dirs[name] = filepath.Join(bins, name)
		os.MkdirAll(dirs[name], 0o755)
	}
	fakeRustc(t, dirs["rustup"])
	fakeRustc(t, dirs["debian"], "wasm32-wasi")
	fakeRustc(t, dirs["wasip1"], "wasm32-wasip1")
	tests := []struct {
		name, path string
		rustc      string // the rustc make must choose; "" none
		target     string
	}{
		{"rustup first, Debian's after", dirs["rustup"] + ":" + dirs["debian"], dirs["debian"], "wasm32-wasi"},
		{"a wasip1 rustc", dirs["rustup"] + ":" + dirs["wasip1"] + ":" + dirs["debian"], dirs["wasip1"], "wasm32-wasip1"},
		{"none has it", dirs["rustup"], "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "hello")
			vars := map[string]string{"PATH": tt.path, "RUSTC_FALLBACK": "/nonexistent/rustc"}
			code, initOut, errOut := cliEnv(t, vars, "init", "--lang", "rust", "--dir", dir, "hello")
			if code != exitOK {
				t.Fatalf("init: exit %d\n%s", code, errOut)
			}
			cmd := exec.Command(makeBin, "RUSTC_FALLBACK=")
			cmd.Dir = dir
			cmd.Env = []string{"PATH=" + tt.path}
			out, err := cmd.CombinedOutput()
			if tt.rustc == "" {
				if err == nil {
					t.Fatalf("make succeeded without a rustc that has the target:\n%s", out)
				}
				for _, text := range []string{string(out), initOut} {
					for _, line := range scaffold.RustTargetHelp() {
						if !strings.Contains(text, line) {
							t.Errorf("no %q in\n%s", line, text)
						}
					}
				}
				if !strings.Contains(string(out), "make RUSTC=/path/to/rustc") || !strings.Contains(initOut, "none here has it") {
					t.Errorf("make or init does not say how to name a rustc:\n%s\n%s", out, initOut)
				}
				return
			}
			if err != nil {
				t.Fatalf("make: %v\n%s", err, out)
			}
			built, _ := os.ReadFile(filepath.Join(dir, "package", "module.wasm"))
			if !strings.HasPrefix(string(built), tt.rustc+" ") || !strings.Contains(string(built), "--target "+tt.target+" ") {
				t.Errorf("make built with %q; want %s with --target %s", built, tt.rustc, tt.target)
			}
			if want := "make builds with " + filepath.Join(tt.rustc, "rustc"); !strings.Contains(initOut, want) {
				t.Errorf("init does not name the rustc make takes (%q):\n%s", want, initOut)
			}
		})
	}
}

// init names the project with the right article: "an AssemblyScript
// package project", "a Go package project" (issue 42).
func TestInitSaysAnAssemblyScriptProject(t *testing.T) {
	for lang, want := range map[string]string{"as": ", an AssemblyScript package project:", "go": ", a Go package project:", "c": ", a C package project:"} {
		code, out, errOut := cli(t, "", "init", "--lang", lang, "--dir", filepath.Join(t.TempDir(), "p"), "hello")
		if code != exitOK || !strings.Contains(out, want) {
			t.Errorf("init --lang %s: exit %d, %q; want %q (%s)", lang, code, out, want, errOut)
		}
	}
}
