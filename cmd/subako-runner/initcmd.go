package main

import (
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/subako/subako-runner/cmd/subako-runner/internal/scaffold"
)

func newInitCmd(a *app) *cobra.Command {
	var lang, dir string
	var ids []string
	for _, l := range scaffold.Languages() {
		ids = append(ids, l.ID)
	}
	cmd := &cobra.Command{
		Use:   "init [flags] NAME",
		Short: "start a package project: source, Makefile and manifest, ready to build and check",
		Long: "Write a new package project NAME into ./NAME (or --dir): a source file serving two tools\n" +
			"(greet, with structuredContent, and fetch, which uses subako_http), a Makefile whose default\n" +
			"target builds the package directory NAME/package (subako-package.json + module.wasm), and a\n" +
			"README. Built, it passes `subako-runner check` with no failure.",
		Args: positionals([]string{"NAME"}, 1, 1),
		RunE: func(cmd *cobra.Command, args []string) error {
			l, ok := scaffold.LookupLang(lang)
			if !ok {
				return usageErr(cmd, "--lang %q: want one of %s", lang, strings.Join(ids, ", "))
			}
			name := args[0]
			if err := scaffold.CheckName(name); err != nil {
				return usageErr(cmd, "init: %v", err)
			}
			if dir == "" {
				dir = name
			}
			written, err := scaffold.Write(dir, l.ID, name)
			if err != nil {
				return status(fail(a.e, "init: %v", err))
			}
			w := a.e.stdout
			article := "a"
			if strings.ContainsRune("AEIOU", rune(l.Title[0])) {
				article = "an"
			}
			fmt.Fprintf(w, "created %s, %s %s package project:\n", dir, article, l.Title)
			for _, p := range written {
				fmt.Fprintf(w, "  %s\n", filepath.Join(dir, filepath.FromSlash(p)))
			}
			if l.ID == "rust" {
				rustcNote(w, a.e)
			} else {
				fmt.Fprintf(w, "\nmake needs %s. Then:\n", l.Needs)
			}
			fmt.Fprintf(w, "  cd %s\n", dir)
			fmt.Fprintln(w, "  make                          # builds package/module.wasm")
			fmt.Fprintln(w, "  subako-runner check package   # the conformance suite: no warnings out of the box")
			fmt.Fprintln(w, `  subako-runner call package greet '{"name": "Ada"}'`)
			return nil
		},
	}
	cmd.Flags().StringVar(&lang, "lang", "go", "`LANG` of the project: "+strings.Join(ids, ", "))
	cmd.Flags().StringVar(&dir, "dir", "", "write the project into `DIR` (default ./NAME); it must not exist or be empty")
	return cmd
}

// rustcNote says which rustc the Rust project's Makefile will build with,
// or, when none here has the WASI standard library, the two ways to get
// one: what `make` would say, said before the author runs it.
func rustcNote(w io.Writer, e *env) {
	cands := scaffold.RustcCandidates(e.getenv("RUSTC"), e.getenv("PATH"), e.getenv("RUSTC_FALLBACK"))
	if r := scaffold.FindRustc(cands); r != "" {
		fmt.Fprintf(w, "\nmake builds with %s (it has the wasm32 WASI standard library). Then:\n", r)
		return
	}
	fmt.Fprintln(w, "\nmake needs a rustc with the WASI preview 1 standard library (wasm32-wasip1 or wasm32-wasi), and none here has it.")
	fmt.Fprintln(w, "Two ways to get one:")
	for _, l := range scaffold.RustTargetHelp() {
		fmt.Fprintf(w, "  %s\n", l)
	}
	fmt.Fprintln(w, "or name one: make RUSTC=/path/to/rustc. Then:")
}
