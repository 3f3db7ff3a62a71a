package layers

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// module is the import path of this module.
const module = "github.com/subako/subako-runner"

// layer is one rank of the layout; a package may import its own layer and
// the layers below it, never one above.
type layer struct {
	rank int
	name string
}

// The layers, lowest first. dev is apart: it may import anything, and only
// tests and other dev packages may import it.
var (
	leaf      = layer{0, "pure-Go leaf (no wazero)"}
	host      = layer{1, "host module or binary tool"}
	machinery = layer{2, "runtime machinery (internal/)"}
	api       = layer{3, "runtime (the embedder's API)"}
	embedder  = layer{4, "library over runtime"}
	frontend  = layer{5, "front-end of the command"}
	command   = layer{6, "command"}
	dev       = layer{7, "dev tool"}
)

// named gives the layer of each package the layout names, by path relative
// to the module; prefixed gives the layer of whole subtrees, longest prefix
// first, for packages added later (a new machinery package under internal/
// needs no edit here).
var named = map[string]layer{
	"limits":             leaf,
	"protocol":           leaf,
	"internal/abi":       leaf,
	"internal/text":      leaf,
	"internal/wasmbin":   leaf,
	"fsmount":            host,
	"wasi":               host,
	"hostmod/subakohttp": host,
	"internal/fuel":      host,
	"internal/modcheck":  host,
	"internal/wasmvalid": host,
	"runtime":            api,
	"conformance":        embedder,
	"otelobserver":       embedder,
	"cmd/subako-runner":  command,
	"bench":              dev,
}

var prefixed = []struct {
	prefix string
	layer  layer
}{
	{"internal/devtools/", dev},
	{"internal/wasmbin/", leaf},
	{"cmd/subako-runner/internal/", frontend},
	{"internal/", machinery},
}

// layerOf is the layer of a module package given relative to the module.
func layerOf(rel string) (layer, bool) {
	if l, ok := named[rel]; ok {
		return l, true
	}
	for _, p := range prefixed {
		if strings.HasPrefix(rel, p.prefix) {
			return p.layer, true
		}
	}
	return layer{}, false
}

// pkg is what go list reports of one package.
type pkg struct {
	ImportPath   string
	Imports      []string
	Deps         []string
	TestImports  []string
	XTestImports []string
	Error        *struct{ Err string }
}

// listModule runs go list over the whole module (named by its path, so
// from any directory in it).
func listModule(t *testing.T) []pkg {
	t.Helper()
	cmd := exec.Command("go", "list", "-e", "-json=ImportPath,Imports,Deps,TestImports,XTestImports,Error", module+"/...")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, stderr.Bytes())
	}
	var pkgs []pkg
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p pkg
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("go list output: %v", err)
		}
		pkgs = append(pkgs, p)
	}
	if len(pkgs) < 10 {
		t.Fatalf("go list found %d packages; the test is not looking at the module", len(pkgs))
	}
	return pkgs
}

// rel is path relative to the module, and whether it is in the module.
func rel(path string) (string, bool) {
	if r, ok := strings.CutPrefix(path, module+"/"); ok {
		return r, true
	}
	return "", false
}

// violations lists every import of pkgs that runs the wrong way.
func violations(pkgs []pkg) []string {
	var bad []string
	for _, p := range pkgs {
		from, ok := rel(p.ImportPath)
		if !ok {
			continue
		}
		lf, ok := layerOf(from)
		if !ok {
			bad = append(bad, fmt.Sprintf("%s: in no layer: add it to the layers of internal/devtools/layers and to docs/ARCHITECTURE.md", from))
			continue
		}
		for _, imp := range p.Imports {
			to, ok := rel(imp)
			if !ok {
				continue
			}
			lt, ok := layerOf(to)
			if !ok {
				continue // reported as a package of its own
			}
			switch {
			case lt == dev && lf != dev:
				bad = append(bad, fmt.Sprintf("%s (%s) imports %s: only tests and dev tools may import a dev tool", from, lf.name, to))
			case lf != dev && lt.rank > lf.rank:
				bad = append(bad, fmt.Sprintf("%s (%s) imports %s (%s): imports flow down only", from, lf.name, to, lt.name))
			}
		}
		if lf == leaf {
			for _, d := range p.Deps {
				if strings.HasPrefix(d, "github.com/tetratelabs/wazero") {
					bad = append(bad, fmt.Sprintf("%s (%s) depends on %s: the leaves are pure Go", from, lf.name, d))
					break
				}
			}
		}
		if strings.HasPrefix(from, "internal/") && lf != dev {
			for _, imp := range append(append([]string{}, p.TestImports...), p.XTestImports...) {
				if to, ok := rel(imp); ok {
					if lt, ok := layerOf(to); ok && lt != dev && lt.rank >= api.rank {
						bad = append(bad, fmt.Sprintf("%s's tests import %s (%s): nothing under internal/ imports runtime or above, not even its tests", from, to, lt.name))
					}
				}
			}
		}
	}
	return bad
}

// TestImportsFlowDown is the import rule of docs/ARCHITECTURE.md.
func TestImportsFlowDown(t *testing.T) {
	pkgs := listModule(t)
	for _, p := range pkgs {
		if p.Error != nil {
			t.Errorf("%s: %s", p.ImportPath, p.Error.Err)
		}
	}
	for _, v := range violations(pkgs) {
		t.Error(v)
	}
}

// TestViolationsAreFound pins the judge itself on a made-up graph: each
// wrong-way import is reported, each right-way one is not.
func TestViolationsAreFound(t *testing.T) {
	m := func(s string) string { return module + "/" + s }
	tests := []struct {
		name string
		p    pkg
		bad  bool
	}{
		{"runtime imports wasi", pkg{ImportPath: m("runtime"), Imports: []string{m("wasi")}}, false},
		{"machinery imports a host module", pkg{ImportPath: m("internal/tmpvol"), Imports: []string{m("fsmount")}}, false},
		{"front-end imports runtime", pkg{ImportPath: m("cmd/subako-runner/internal/mcpserve"), Imports: []string{m("runtime")}}, false},
		{"bench imports the test guests", pkg{ImportPath: m("bench"), Imports: []string{m("internal/devtools/testguest")}}, false},
		{"a host module's test imports runtime", pkg{ImportPath: m("wasi"), XTestImports: []string{m("runtime")}}, false},
		{"leaf without wazero", pkg{ImportPath: m("protocol"), Deps: []string{"encoding/json"}}, false},
		{"internal package imports runtime", pkg{ImportPath: m("internal/tmpvol"), Imports: []string{m("runtime")}}, true},
		{"internal package's test imports runtime", pkg{ImportPath: m("internal/modcheck"), TestImports: []string{m("runtime")}}, true},
		{"host module imports machinery", pkg{ImportPath: m("wasi"), Imports: []string{m("internal/linmem")}}, true},
		{"runtime imports a front-end", pkg{ImportPath: m("runtime"), Imports: []string{m("cmd/subako-runner/internal/loopback")}}, true},
		{"runtime imports conformance", pkg{ImportPath: m("runtime"), Imports: []string{m("conformance")}}, true},
		{"protocol depends on wazero", pkg{ImportPath: m("protocol"), Deps: []string{"github.com/tetratelabs/wazero/api"}}, true},
		{"limits imports fsmount", pkg{ImportPath: m("limits"), Imports: []string{m("fsmount")}}, true},
		{"command code imports the test guests", pkg{ImportPath: m("cmd/subako-runner"), Imports: []string{m("internal/devtools/testguest")}}, true},
		{"a package in no layer", pkg{ImportPath: m("newtop")}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := violations([]pkg{tt.p})
			if (len(got) > 0) != tt.bad {
				t.Errorf("violations = %q, want bad=%v", got, tt.bad)
			}
		})
	}
}

// TestArchitectureNamesEveryLayer keeps the layout of docs/ARCHITECTURE.md
// and this test's table one list: every package the table names is named
// in the layout, and the rule is stated there.
func TestArchitectureNamesEveryLayer(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("..", "..", "..", "docs", "ARCHITECTURE.md"))
	if err != nil {
		t.Fatal(err)
	}
	for name := range named {
		if !bytes.Contains(doc, []byte(name)) {
			t.Errorf("docs/ARCHITECTURE.md does not name %s", name)
		}
	}
	for _, p := range prefixed {
		if !bytes.Contains(doc, []byte(p.prefix)) {
			t.Errorf("docs/ARCHITECTURE.md does not name %s", p.prefix)
		}
	}
	if !bytes.Contains(doc, []byte("internal/devtools/layers")) {
		t.Error("docs/ARCHITECTURE.md does not point at the test that keeps the import rule")
	}
}
