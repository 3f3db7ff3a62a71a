// Command wasitestsuite runs the preview-1 tests of the official WASI
// testsuite (github.com/WebAssembly/wasi-testsuite, the prebuilt tests of its
// prod/testsuite-base branch) with `subako-runner run`, honouring each test's
// .json spec (arguments, environment, preopened root, exit code, stdout and
// stderr), and prints one line per failure and then "N passed, M failed".
// It exits 1 when any test failed or none was found.
//
//	make wasi-testsuite WASI_TESTSUITE=/path/to/wasi-testsuite
//	go run ./internal/devtools/wasitestsuite -runner bin/subako-runner /path/to/wasi-testsuite
//
// The suite is never part of this repository: point the driver at a copy.
// Each test's root directory is copied to a fresh temporary directory first,
// so the copy of the suite is never written to.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/subako/subako-runner/internal/text"
)

func main() {
	runner := flag.String("runner", "bin/subako-runner", "the subako-runner binary")
	timeout := flag.Duration("timeout", 2*time.Minute, "time allowed for each test")
	verbose := flag.Bool("v", false, "print a line for every test, not only failures")
	flag.Usage = func() {
		fmt.Fprintf(flag.CommandLine.Output(), "usage: wasitestsuite [-runner BIN] [-v] SUITE_DIR...\n")
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() == 0 {
		flag.Usage()
		os.Exit(2)
	}
	var tests []string
	for _, dir := range flag.Args() {
		found, err := findTests(dir)
		if err != nil {
			fmt.Fprintf(os.Stderr, "wasitestsuite: %v\n", err)
			os.Exit(2)
		}
		tests = append(tests, found...)
	}
	if len(tests) == 0 {
		fmt.Fprintf(os.Stderr, "wasitestsuite: no wasm32-wasip1 tests under %v\n", flag.Args())
		os.Exit(1)
	}
	passed, failed := 0, 0
	for _, wasm := range tests {
		ctx, cancel := context.WithTimeout(context.Background(), *timeout)
		err := runTest(ctx, []string{*runner}, wasm)
		cancel()
		name := strings.TrimSuffix(filepath.Base(wasm), ".wasm")
		suite := filepath.Base(filepath.Dir(filepath.Dir(filepath.Dir(wasm))))
		if err != nil {
			failed++
			fmt.Printf("FAIL %s/%s: %v\n", suite, name, err)
			continue
		}
		passed++
		if *verbose {
			fmt.Printf("ok   %s/%s\n", suite, name)
		}
	}
	fmt.Printf("%d passed, %d failed\n", passed, failed)
	if failed > 0 {
		os.Exit(1)
	}
}

// findTests lists the .wasm files of every directory under root whose
// manifest.json names version wasm32-wasip1, in a stable order.
func findTests(root string) ([]string, error) {
	var tests []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() || d.Name() != "manifest.json" {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		var m struct {
			Version string `json:"version"`
		}
		if json.Unmarshal(b, &m) != nil || m.Version != "wasm32-wasip1" {
			return nil
		}
		found, err := filepath.Glob(filepath.Join(filepath.Dir(path), "*.wasm"))
		tests = append(tests, found...)
		return err
	})
	sort.Strings(tests)
	return tests, err
}

// runTest runs one test and returns why it failed, or nil.
func runTest(ctx context.Context, runner []string, wasm string) error {
	s, err := readSpec(strings.TrimSuffix(wasm, ".wasm") + ".json")
	if err != nil {
		return err
	}
	hostRoot := ""
	if s.Root != "" {
		tmp, err := os.MkdirTemp("", "wasitestsuite-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(tmp)
		hostRoot = filepath.Join(tmp, "root")
		if err := copyTree(filepath.Join(filepath.Dir(wasm), s.Root), hostRoot); err != nil {
			return fmt.Errorf("copying the root: %v", err)
		}
	}
	argv := s.argv(runner, wasm, hostRoot)
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err = cmd.Run()
	code := 0
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		code = exit.ExitCode()
	case err != nil:
		return err
	}
	if ctx.Err() != nil {
		return fmt.Errorf("no exit within the timeout")
	}
	var why []string
	if code != s.ExitCode {
		why = append(why, fmt.Sprintf("exit code %d, want %d", code, s.ExitCode))
	}
	if !bytes.HasPrefix(stdout.Bytes(), []byte(s.Stdout)) {
		why = append(why, fmt.Sprintf("stdout %q, want %q", clip(stdout.String()), s.Stdout))
	}
	if !bytes.HasPrefix(stderr.Bytes(), []byte(s.Stderr)) {
		why = append(why, fmt.Sprintf("stderr does not start with %q", s.Stderr))
	}
	if len(why) == 0 {
		return nil
	}
	return fmt.Errorf("%s\n    stderr: %s", strings.Join(why, "; "), clip(stderr.String()))
}

func clip(s string) string {
	return text.Bound(strings.TrimSpace(s), 2000)
}

// copyTree copies directories, regular files and symbolic links.
func copyTree(src, dst string) error {
	return filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, path)
		if err != nil {
			return err
		}
		to := filepath.Join(dst, rel)
		switch {
		case d.IsDir():
			return os.MkdirAll(to, 0o755)
		case d.Type()&fs.ModeSymlink != 0:
			target, err := os.Readlink(path)
			if err != nil {
				return err
			}
			return os.Symlink(target, to)
		case d.Type().IsRegular():
			return copyFile(path, to)
		}
		return nil // sockets, devices: not part of a test's tree
	})
}

func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.Create(dst)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}
