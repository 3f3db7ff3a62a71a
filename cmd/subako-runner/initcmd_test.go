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
		// rustup's rustc may lack the wasm32 standard library that
		// Debian's has: take the first with one.
		var cands []string
		if r := os.Getenv("RUSTC"); r != "" {
			cands = append(cands, r)
		}
		if r, err := exec.LookPath("rustc"); err == nil {
			cands = append(cands, r)
		}
		cands = append(cands, "/usr/bin/rustc")
		for _, r := range cands {
			out, err := exec.Command(r, "--print", "sysroot").Output()
			if err != nil {
				continue
			}
			root := strings.TrimSpace(string(out))
			for _, target := range []string{"wasm32-wasip1", "wasm32-wasi"} {
				if _, err := os.Stat(filepath.Join(root, "lib", "rustlib", target)); err == nil {
					return []string{"RUSTC=" + r}, ""
				}
			}
		}
		return nil, "no rustc with a wasm32-wasip1 or wasm32-wasi standard library (rustup target add wasm32-wasip1, or apt install rustc libstd-rust-dev-wasm32)"
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
