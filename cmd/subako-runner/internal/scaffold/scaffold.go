// Package scaffold writes the starting project of a Subako package, what
// `subako-runner init` makes: a source file, a Makefile whose default
// target builds the package directory package/ (subako-package.json and
// module.wasm), and a README. Every language's project serves the same two
// tools — greet, with structuredContent and an outputSchema, and fetch,
// which sends an HTTP request through subako_http — answers an unknown
// tool with an isError result, and passes `subako-runner check` once
// built.
//
// The templates are embedded: templates/LANG/ holds the language's files,
// templates/common/ the ones every project gets. Each file is stored with
// a ".tmpl" suffix (so the Go toolchain never takes a template's main.go
// or go.mod for part of this module) and "__NAME__" where the package's
// name goes.
package scaffold

import (
	"bytes"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
)

//go:embed templates
var templates embed.FS

// Lang is one language init can start a project in.
type Lang struct {
	// ID is the value of --lang.
	ID string
	// Title names the language in messages.
	Title string
	// Needs says which toolchain `make` runs, for the next-steps message.
	Needs string
}

// Languages returns the languages in the order help lists them.
func Languages() []Lang {
	return []Lang{
		{"go", "Go", "Go 1.21 or later"},
		{"c", "C", "clang and wasi-libc (Debian: apt install clang lld wasi-libc libclang-rt-dev-wasm32)"},
		{"rust", "Rust", "a rustc with the wasm32 WASI standard library (wasm32-wasip1, or Debian's wasm32-wasi)"},
		{"as", "AssemblyScript", "Node.js and npm (make installs the pinned compiler)"},
	}
}

// LookupLang finds the language whose ID is id.
func LookupLang(id string) (Lang, bool) {
	for _, l := range Languages() {
		if l.ID == id {
			return l, true
		}
	}
	return Lang{}, false
}

// validName is what a package name may be: it goes into JSON, C, Rust and
// TypeScript string literals and a Go module path unescaped.
var validName = regexp.MustCompile(`^[a-z][a-z0-9_-]{0,63}$`)

// CheckName says why name cannot name a package, or nil.
func CheckName(name string) error {
	if !validName.MatchString(name) {
		return fmt.Errorf("%q cannot name a package: use 1 to 64 lowercase letters, digits, '-' and '_', starting with a letter", name)
	}
	return nil
}

// RustTargetHelp is the two ways to get a rustc with the WASI preview 1
// standard library, as init and the Rust project's Makefile say them (no
// quote characters: the Makefile echoes them in single quotes).
func RustTargetHelp() []string {
	return []string{
		"rustup target add wasm32-wasip1            # for a rustup rustc (downloads the target once)",
		"apt install rustc libstd-rust-dev-wasm32   # Debian and Ubuntu: /usr/bin/rustc, found even after a rustup rustc on PATH",
	}
}

// rustHelpLines is RustTargetHelp, each line between prefix and suffix,
// joined by newlines.
func rustHelpLines(prefix, suffix string) string {
	lines := RustTargetHelp()
	for i, l := range lines {
		lines[i] = prefix + l + suffix
	}
	return strings.Join(lines, "\n")
}

// RustcCandidates are the rustc the Rust project's Makefile considers,
// in its order: rustc (the RUSTC variable) alone when set; otherwise the
// rustc of each directory of path (a PATH value), then fallback (the
// Makefile's RUSTC_FALLBACK, /usr/bin/rustc unless set).
func RustcCandidates(rustc, path, fallback string) []string {
	if rustc != "" {
		return []string{rustc}
	}
	var out []string
	for _, d := range filepath.SplitList(path) {
		if d != "" {
			out = append(out, filepath.Join(d, "rustc"))
		}
	}
	if fallback == "" {
		fallback = "/usr/bin/rustc"
	}
	return append(out, fallback)
}

// FindRustc returns the first of candidates whose sysroot has the
// wasm32-wasip1 or wasm32-wasi standard library, as the Rust project's
// Makefile picks it; "" when none has.
func FindRustc(candidates []string) string {
	for _, r := range candidates {
		if st, err := os.Stat(r); err != nil || st.IsDir() || st.Mode()&0o111 == 0 {
			continue
		}
		out, err := exec.Command(r, "--print", "sysroot").Output()
		if err != nil {
			continue
		}
		root := strings.TrimSpace(string(out))
		for _, target := range []string{"wasm32-wasip1", "wasm32-wasi"} {
			if st, err := os.Stat(filepath.Join(root, "lib", "rustlib", target)); err == nil && st.IsDir() {
				return r
			}
		}
	}
	return ""
}

// Files returns the project of a package called name in language lang:
// slash-separated paths relative to the project directory → contents.
func Files(lang, name string) (map[string][]byte, error) {
	l, ok := LookupLang(lang)
	if !ok {
		return nil, fmt.Errorf("unknown language %q", lang)
	}
	if err := CheckName(name); err != nil {
		return nil, err
	}
	out := map[string][]byte{}
	for _, root := range []string{"templates/common", "templates/" + l.ID} {
		err := fs.WalkDir(templates, root, func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			b, err := templates.ReadFile(p)
			if err != nil {
				return err
			}
			rel := strings.TrimSuffix(strings.TrimPrefix(p, root+"/"), ".tmpl")
			if path.Base(rel) == "gitignore" {
				rel = path.Join(path.Dir(rel), ".gitignore")
			}
			b = bytes.ReplaceAll(b, []byte("__NAME__"), []byte(name))
			b = bytes.ReplaceAll(b, []byte("__LANG__"), []byte(l.Title))
			b = bytes.ReplaceAll(b, []byte("__RUST_TARGET_HELP_COMMENT__"), []byte(rustHelpLines("#   ", "")))
			b = bytes.ReplaceAll(b, []byte("__RUST_TARGET_HELP_ECHO__"), []byte(rustHelpLines("\t  echo '  ", "' >&2; \\")))
			out[rel] = b
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

// Write writes the project into dir, which must not exist or be empty
// (nothing of the author's is ever overwritten), and returns the paths it
// wrote, relative to dir, sorted.
func Write(dir, lang, name string) ([]string, error) {
	files, err := Files(lang, name)
	if err != nil {
		return nil, err
	}
	if entries, err := os.ReadDir(dir); err == nil && len(entries) > 0 {
		return nil, fmt.Errorf("%s already exists and is not empty; init writes only into a new or empty directory", dir)
	} else if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	paths := make([]string, 0, len(files))
	for p := range files {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	for _, p := range paths {
		full := filepath.Join(dir, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			return nil, err
		}
		// O_EXCL: a file that appeared since the check is not overwritten.
		f, err := os.OpenFile(full, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
		if err != nil {
			return nil, err
		}
		_, err = f.Write(files[p])
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return nil, err
		}
	}
	return paths, nil
}
