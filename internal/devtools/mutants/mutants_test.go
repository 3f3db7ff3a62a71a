package mutants

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// root is the repository root, three levels above this package.
func root(t *testing.T) string {
	t.Helper()
	r, err := filepath.Abs(filepath.Join("..", "..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(r, "go.mod")); err != nil {
		t.Fatalf("no go.mod at %s: %v", r, err)
	}
	return r
}

// pkgsOf is the packages whose tests judge m: its own list, or the
// package of its file.
func pkgsOf(m mutant) []string {
	if len(m.pkgs) > 0 {
		return m.pkgs
	}
	return []string{"./" + filepath.Dir(m.file)}
}

// argsOf is what go test runs for m: its packages, after its -run pattern
// when it has one.
func argsOf(m mutant) []string {
	if m.run != "" {
		return append([]string{"-run=" + m.run}, pkgsOf(m)...)
	}
	return pkgsOf(m)
}

// TestMutantsStillApply keeps the list true to the code: every snippet
// occurs exactly once in its file and changes it, ids are unique, and the
// list holds at least the 30 kinds of planted bugs of issue 25.
func TestMutantsStillApply(t *testing.T) {
	r := root(t)
	seen := map[string]bool{}
	for _, m := range list {
		if seen[m.id] {
			t.Errorf("%s: id used twice", m.id)
		}
		seen[m.id] = true
		src, err := os.ReadFile(filepath.Join(r, m.file))
		if err != nil {
			t.Errorf("%s: %v", m.id, err)
			continue
		}
		if n := strings.Count(string(src), m.from); n != 1 {
			t.Errorf("%s: the snippet occurs %d times in %s, want once: update the list with the code\n%s", m.id, n, m.file, m.from)
		}
		if m.from == m.to {
			t.Errorf("%s: the replacement changes nothing", m.id)
		}
	}
	if len(list) < 30 {
		t.Errorf("%d mutants, want at least 30", len(list))
	}
}

// outcome of one run of a mutant.
type outcome int

const (
	killed outcome = iota
	survived
	notViable // the mutated package does not build
)

// goTest runs go test -short on pkgs from the repository root, with the
// overlay file when it is not "", and reports whether the tests passed,
// whether they built, and the output.
func goTest(t *testing.T, r, overlay string, pkgs []string) (passed, built bool, out []byte) {
	t.Helper()
	args := []string{"test", "-short", "-count=1", "-timeout=10m"}
	if overlay != "" {
		args = append(args, "-overlay="+overlay)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "go", append(args, pkgs...)...)
	cmd.Dir = r
	cmd.Env = os.Environ()
	if os.Getenv("SUBAKO_TEST_COMPILATION_CACHE") == "" {
		cmd.Env = append(cmd.Env, "SUBAKO_TEST_COMPILATION_CACHE="+filepath.Join(r, ".cache", "compiled"))
	}
	out, err := cmd.CombinedOutput()
	built = !bytes.Contains(out, []byte("[build failed]")) && !bytes.Contains(out, []byte("[setup failed]"))
	return err == nil, built, out
}

// TestMutantsAreKilled plants each mutant of the list (those whose id
// contains $SUBAKO_MUTANTS, or all for "1" or "all") and runs the tests of
// its packages: each must fail. It reports the score and the survivors.
func TestMutantsAreKilled(t *testing.T) {
	sel := os.Getenv("SUBAKO_MUTANTS")
	if sel == "" {
		t.Skip("set SUBAKO_MUTANTS=1 (or an id substring), or run make mutants")
	}
	r := root(t)
	var chosen []mutant
	for _, m := range list {
		if sel == "1" || sel == "all" || strings.Contains(m.id, sel) {
			chosen = append(chosen, m)
		}
	}
	if len(chosen) == 0 {
		t.Fatalf("no mutant id contains %q", sel)
	}
	// The packages must pass unchanged, or their failures would count as
	// kills.
	broken := map[string]bool{}
	var runs [][]string // each package alone, or with a mutant's -run pattern
	for _, m := range chosen {
		if m.run != "" {
			if !slices.ContainsFunc(runs, func(a []string) bool { return slices.Equal(a, argsOf(m)) }) {
				runs = append(runs, argsOf(m))
			}
			continue
		}
		for _, p := range pkgsOf(m) {
			if !slices.ContainsFunc(runs, func(a []string) bool { return slices.Equal(a, []string{p}) }) {
				runs = append(runs, []string{p})
			}
		}
	}
	for _, args := range runs {
		if passed, _, out := goTest(t, r, "", args); !passed {
			broken[strings.Join(args, " ")] = true
			t.Errorf("%s fails without any mutant; its mutants are not judged:\n%s", strings.Join(args, " "), tail(out))
		}
	}
	dir := t.TempDir()
	var killedN, judged int
	var survivors, unviable, unjudged []string
	for i, m := range chosen {
		if broken[strings.Join(argsOf(m), " ")] || (m.run == "" && slices.ContainsFunc(pkgsOf(m), func(p string) bool { return broken[p] })) {
			unjudged = append(unjudged, m.id)
			continue
		}
		src, err := os.ReadFile(filepath.Join(r, m.file))
		if err != nil || strings.Count(string(src), m.from) != 1 {
			t.Errorf("%s: does not apply (TestMutantsStillApply says why)", m.id)
			continue
		}
		mutated := filepath.Join(dir, strings.ReplaceAll(m.id, "/", "_")+".go")
		must(t, os.WriteFile(mutated, []byte(strings.Replace(string(src), m.from, m.to, 1)), 0o644))
		overlay, err := json.Marshal(map[string]map[string]string{"Replace": {filepath.Join(r, m.file): mutated}})
		must(t, err)
		ov := filepath.Join(dir, "overlay.json")
		must(t, os.WriteFile(ov, overlay, 0o644))
		start := time.Now()
		passed, built, out := goTest(t, r, ov, argsOf(m))
		var o outcome
		switch {
		case !built:
			o = notViable
		case passed:
			o = survived
		default:
			o = killed
		}
		by := ""
		if o == killed {
			by = " by " + failedTests(out)
		}
		t.Logf("[%d/%d] %-40s %s%s (%.0fs)", i+1, len(chosen), m.id, [...]string{"killed", "SURVIVED", "not viable"}[o], by, time.Since(start).Seconds())
		switch o {
		case killed:
			killedN++
			judged++
		case survived:
			judged++
			survivors = append(survivors, m.id)
		case notViable:
			unviable = append(unviable, m.id)
			t.Errorf("%s does not build; fix the list:\n%s", m.id, tail(out))
		}
	}
	t.Logf("mutation score: %d/%d killed", killedN, judged)
	if len(unjudged) > 0 {
		t.Logf("not judged (their package fails unchanged): %s", strings.Join(unjudged, ", "))
	}
	for _, s := range survivors {
		t.Errorf("survivor: %s — no test pins this decision", s)
	}
	_ = unviable
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// failedTests names the top-level tests that failed in a run's output (at
// most three), so that a kill by an unrelated or flaky test shows.
func failedTests(out []byte) string {
	var names []string
	for line := range strings.Lines(string(out)) {
		if name, ok := strings.CutPrefix(line, "--- FAIL: "); ok {
			names = append(names, strings.Fields(name)[0])
		}
	}
	if len(names) == 0 {
		return "a failed run"
	}
	if len(names) > 3 {
		names = append(names[:3], "…")
	}
	return strings.Join(names, ", ")
}

// tail is the last lines of a test run's output.
func tail(out []byte) string {
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	return strings.Join(lines[max(0, len(lines)-15):], "\n")
}
