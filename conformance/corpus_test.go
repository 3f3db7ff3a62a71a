package conformance_test

import (
	"bytes"
	"context"
	"encoding/json"
	"encoding/xml"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/subako/subako-runner/conformance"
	"github.com/subako/subako-runner/internal/devtools/testguest"
	"github.com/subako/subako-runner/limits"
	"github.com/subako/subako-runner/runtime"
)

const root = "../"

// corpusEntry is one package of testdata/conformance/corpus.json.
type corpusEntry struct {
	Name     string                       `json:"name"`
	Package  string                       `json:"package"`
	Guest    string                       `json:"guest"`
	Wasm     string                       `json:"wasm"`
	Copy     string                       `json:"copy"`
	Files    map[string]string            `json:"files"`
	Manifest string                       `json:"manifest"`
	Bare     bool                         `json:"bare"`
	Like     string                       `json:"like"`
	Short    bool                         `json:"short"`
	Examples map[string][]json.RawMessage `json:"examples"`
	Limits   struct {
		Memory           string `json:"memory"`
		Timeout          string `json:"timeout"`
		DiscoveryTimeout string `json:"discoveryTimeout"`
		ExitTimeout      string `json:"exitTimeout"`
		Fuel             uint64 `json:"fuel"`
	} `json:"limits"`
	// NearLimit moves the warning threshold of the named checks (a share
	// of the limit), so that a time warning is certain, not a race.
	NearLimit map[string]float64            `json:"nearLimit"`
	Expect    map[string]conformance.Status `json:"expect"`
}

func readCorpus(t *testing.T) map[string]*corpusEntry {
	t.Helper()
	b, err := os.ReadFile(root + "testdata/conformance/corpus.json")
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Packages []*corpusEntry `json:"packages"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	m := map[string]*corpusEntry{}
	for _, e := range doc.Packages {
		if m[e.Name] != nil {
			t.Fatalf("corpus: %q twice", e.Name)
		}
		m[e.Name] = e
	}
	return m
}

// expectations resolves like: the named entry's map, overridden by own keys.
func expectations(t *testing.T, corpus map[string]*corpusEntry, e *corpusEntry) map[string]conformance.Status {
	t.Helper()
	m := map[string]conformance.Status{}
	if e.Like != "" {
		base := corpus[e.Like]
		if base == nil {
			t.Fatalf("like %q: no such entry", e.Like)
		}
		for k, v := range expectations(t, corpus, base) {
			m[k] = v
		}
	}
	for k, v := range e.Expect {
		m[k] = v
	}
	return m
}

// expected finds a check's expected status: its exact id, else the
// longest key ending in * that prefixes it.
func expected(m map[string]conformance.Status, id string) (string, conformance.Status, bool) {
	if s, ok := m[id]; ok {
		return id, s, true
	}
	best := ""
	for k := range m {
		if p, ok := strings.CutSuffix(k, "*"); ok && strings.HasPrefix(id, p) && len(k) > len(best) {
			best = k
		}
	}
	if best == "" {
		return "", "", false
	}
	return best, m[best], true
}

// compiledCache is shared by every runtime of this test binary, so each
// guest is compiled once per run; make test sets
// SUBAKO_TEST_COMPILATION_CACHE so its -race pass reuses the first pass's.
var compiledCache string

func TestMain(m *testing.M) {
	os.Exit(testguest.RunWithCompilationCache(m, &compiledCache))
}

// buildPackage assembles the entry's package in a temporary directory.
func buildPackage(t *testing.T, e *corpusEntry) string {
	t.Helper()
	if e.Wasm != "" {
		return root + e.Wasm
	}
	dir := t.TempDir()
	if e.Copy != "" || e.Package != "" {
		src := e.Copy
		if src == "" {
			src = e.Package
		}
		if err := os.CopyFS(dir, os.DirFS(root+src)); err != nil {
			t.Fatal(err)
		}
	}
	if e.Guest != "" {
		wasm, err := os.ReadFile(testguest.Go(t, root+e.Guest))
		if err != nil {
			t.Fatal(err)
		}
		if e.Bare {
			p := filepath.Join(dir, e.Name+".wasm")
			if err := os.WriteFile(p, wasm, 0o644); err != nil {
				t.Fatal(err)
			}
			return p
		}
		write(t, dir, runtime.ModuleFile, string(wasm))
	}
	if e.Manifest != "" {
		write(t, dir, runtime.ManifestFile, e.Manifest)
	} else if _, err := os.Stat(filepath.Join(dir, runtime.ManifestFile)); err != nil {
		write(t, dir, runtime.ManifestFile, `{"abi":1,"name":"`+e.Name+`","version":"0.1.0"}`)
	}
	for name, content := range e.Files {
		write(t, dir, name, content)
	}
	return dir
}

func write(t *testing.T, dir, name, content string) {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// The corpus runs under time limits far above ABI 1's so that no status
// depends on how loaded the machine is: a correct module's exit took
// 839 ms of the 1 s under -race on a busy 2-core machine (a warning, and
// nearly exit_timeout). A time warning or failure is made certain instead
// by a guest that sleeps well past a moved threshold or a short limit the
// entry sets (limits, nearLimit).
const (
	corpusExitTimeout      = 10 * time.Second
	corpusDiscoveryTimeout = 30 * time.Second
)

func newRuntime(t *testing.T, e *corpusEntry) *runtime.Runtime {
	t.Helper()
	lim := limits.Default()
	lim.ExitTimeout, lim.DiscoveryTimeout = corpusExitTimeout, corpusDiscoveryTimeout
	var err error
	if e.Limits.Memory != "" {
		if lim.Memory, err = limits.ParseSize(e.Limits.Memory); err != nil {
			t.Fatal(err)
		}
	}
	if e.Limits.Timeout != "" {
		if lim.CallTimeout, err = time.ParseDuration(e.Limits.Timeout); err != nil {
			t.Fatal(err)
		}
	}
	if e.Limits.Fuel != 0 {
		lim.Fuel = e.Limits.Fuel
	}
	if e.Limits.ExitTimeout != "" {
		if lim.ExitTimeout, err = time.ParseDuration(e.Limits.ExitTimeout); err != nil {
			t.Fatal(err)
		}
	}
	if e.Limits.DiscoveryTimeout != "" {
		if lim.DiscoveryTimeout, err = time.ParseDuration(e.Limits.DiscoveryTimeout); err != nil {
			t.Fatal(err)
		}
	}
	rt, err := runtime.New(context.Background(), runtime.Config{Limits: &lim, CompilationCacheDir: compiledCache})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Close(context.Background()) })
	return rt
}

// reports keeps each corpus report for the format tests.
var reports sync.Map

// TestCorpus checks every package of the corpus and asserts the status of
// every check it reports, and that each package passes or fails as its
// statuses say.
func TestCorpus(t *testing.T) {
	corpus := readCorpus(t)
	names := make([]string, 0, len(corpus))
	for n := range corpus {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, name := range names {
		e := corpus[name]
		t.Run(name, func(t *testing.T) {
			if testing.Short() && !e.Short {
				t.Skip("-short runs the entries marked short: the race pass needs the engine's concurrency, not every package again")
			}
			t.Parallel()
			want := expectations(t, corpus, e)
			rt := newRuntime(t, e)
			path := buildPackage(t, e)
			started := time.Now()
			rep, err := conformance.Run(context.Background(), rt, path, conformance.WithNearLimits(conformance.Options{Examples: e.Examples}, e.NearLimit))
			if err != nil {
				t.Fatalf("Run: %v", err)
			}
			t.Logf("%d checks in %v", len(rep.Checks), time.Since(started).Round(time.Millisecond))
			reports.Store(name, rep)
			used := map[string]bool{}
			failed := false
			for _, c := range rep.Checks {
				if c.Status == conformance.Fail {
					failed = true
				}
				key, status, ok := expected(want, c.ID)
				if !ok {
					t.Errorf("%s: %s, but the corpus expects nothing for it\n    %s", c.ID, c.Status, c.Detail)
					continue
				}
				used[key] = true
				if c.Status != status {
					t.Errorf("%s: %s, want %s\n    %s", c.ID, c.Status, status, strings.ReplaceAll(c.Detail, "\n", "\n    "))
				}
			}
			for k := range e.Expect {
				if !used[k] {
					t.Errorf("corpus key %q matches no check", k)
				}
			}
			if rep.Passed == failed {
				t.Errorf("Passed = %v with a failed check = %v", rep.Passed, failed)
			}
		})
	}
}

// TestJUnitNamesEveryCheck renders the report of a package with every
// status as JUnit XML and reads it back.
func TestJUnitNamesEveryCheck(t *testing.T) {
	corpus := readCorpus(t)
	e := corpus["stdout_print"]
	rt := newRuntime(t, e)
	rep, err := conformance.Run(context.Background(), rt, buildPackage(t, e), conformance.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := rep.WriteJUnit(&buf); err != nil {
		t.Fatal(err)
	}
	var doc struct {
		XMLName xml.Name `xml:"testsuites"`
		Suites  []struct {
			Tests    int `xml:"tests,attr"`
			Failures int `xml:"failures,attr"`
			Skipped  int `xml:"skipped,attr"`
			Cases    []struct {
				Name    string `xml:"name,attr"`
				Failure *struct {
					Message string `xml:"message,attr"`
					Text    string `xml:",chardata"`
				} `xml:"failure"`
				Skipped *struct {
					Message string `xml:"message,attr"`
				} `xml:"skipped"`
				SystemOut string `xml:"system-out"`
			} `xml:"testcase"`
		} `xml:"testsuite"`
	}
	if err := xml.Unmarshal(buf.Bytes(), &doc); err != nil {
		t.Fatalf("JUnit output is not XML: %v\n%s", err, buf.String())
	}
	if len(doc.Suites) != 1 {
		t.Fatalf("%d testsuites, want 1", len(doc.Suites))
	}
	s := doc.Suites[0]
	if s.Tests != len(rep.Checks) || s.Failures != rep.Count(conformance.Fail) || s.Skipped != rep.Count(conformance.Skip) {
		t.Errorf("suite counts tests=%d failures=%d skipped=%d; report has %d checks, %d failed, %d skipped",
			s.Tests, s.Failures, s.Skipped, len(rep.Checks), rep.Count(conformance.Fail), rep.Count(conformance.Skip))
	}
	if len(s.Cases) != len(rep.Checks) {
		t.Fatalf("%d testcases for %d checks", len(s.Cases), len(rep.Checks))
	}
	for i, c := range rep.Checks {
		tc := s.Cases[i]
		if tc.Name != c.ID {
			t.Errorf("testcase %d is %q, want %q", i, tc.Name, c.ID)
		}
		switch c.Status {
		case conformance.Fail:
			if tc.Failure == nil || tc.Failure.Text != c.Detail {
				t.Errorf("%s: failure element %+v, want the detail", c.ID, tc.Failure)
			}
		case conformance.Skip:
			if tc.Skipped == nil || tc.Skipped.Message != c.Detail {
				t.Errorf("%s: skipped element %+v", c.ID, tc.Skipped)
			}
		case conformance.Warn:
			if tc.Failure != nil || !strings.HasPrefix(tc.SystemOut, "WARNING: ") {
				t.Errorf("%s: a warning must pass with WARNING in system-out, got failure %v, out %q", c.ID, tc.Failure, tc.SystemOut)
			}
		default:
			if tc.Failure != nil || tc.Skipped != nil {
				t.Errorf("%s passed but has a failure or skipped element", c.ID)
			}
		}
	}
	for _, st := range []conformance.Status{conformance.Pass, conformance.Warn, conformance.Fail, conformance.Skip} {
		if rep.Count(st) == 0 {
			t.Errorf("the report has no %s check; pick a package that shows every status", st)
		}
	}
}
