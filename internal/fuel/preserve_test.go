package fuel

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/subako/subako-runner/internal/devtools/testguest"
	"github.com/subako/subako-runner/internal/wasmbin"
	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/experimental"
)

// allFeatures is every feature wazero can compile: CoreFeaturesV2 (what
// the runtime enables) and the experimental ones, so the rewrite is tested
// on threads, tail calls and extended constants too.
const allFeatures = api.CoreFeaturesV2 | experimental.CoreFeaturesThreads | experimental.CoreFeaturesTailCall | experimental.CoreFeaturesExtendedConst

// compiles reports whether wazero compiles wasm.
func compiles(ctx context.Context, r wazero.Runtime, wasm []byte) error {
	cm, err := r.CompileModule(ctx, wasm)
	if err == nil {
		cm.Close(ctx)
	}
	return err
}

// TestEveryFixtureStillCompiles instruments every committed .wasm of the
// repository that wazero compiles, and checks the result compiles too.
func TestEveryFixtureStillCompiles(t *testing.T) {
	ctx := context.Background()
	r := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfig().WithCoreFeatures(allFeatures))
	defer r.Close(ctx)
	var paths []string
	for _, root := range []string{"../../testdata", "../wasmbin/testdata"} {
		err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if err == nil && !d.IsDir() && strings.HasSuffix(p, ".wasm") {
				paths = append(paths, p)
			}
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if len(paths) < 20 {
		t.Fatalf("found only %d fixtures; did the testdata move?", len(paths))
	}
	n := 0
	for _, p := range paths {
		wasm, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if len(wasm) > 1<<20 {
			continue // Go guests: TestGuestsBehaveTheSame runs them, and compiling is slow under -race
		}
		if compiles(ctx, r, wasm) != nil {
			continue // rejected before metering would ever see it
		}
		n++
		out, err := Instrument(wasm)
		if err != nil {
			t.Errorf("%s: wazero compiles it but Instrument fails: %v", p, err)
			continue
		}
		if err := compiles(ctx, r, out); err != nil {
			t.Errorf("%s: the instrumented module does not compile: %v", p, err)
		}
	}
	t.Logf("%d of %d fixtures compile in wazero; all of them still compile instrumented", n, len(paths))
}

// instance pairs a plain and an instrumented instance of one module.
type instancePair struct {
	plain, metered api.Module
	ctx            context.Context // carries the meter
}

func instantiatePair(t *testing.T, wasm []byte, env []byte) instancePair {
	t.Helper()
	ctx := context.Background()
	var mods [2]api.Module
	// The plain instance's tables grow as wazero lets them; so may the
	// metered one's (a budget is required: see TestTableGrowAsksTheHost).
	anyGrowth := budgetFunc(func(_, _, _ uint32) bool { return true })
	mctx := WithTableBudget(WithMeter(ctx, NewMeter(0)), anyGrowth)
	for i, metered := range []bool{false, true} {
		r := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfig().WithCoreFeatures(allFeatures))
		t.Cleanup(func() { r.Close(ctx) })
		if env != nil {
			if _, err := r.InstantiateWithConfig(ctx, env, wazero.NewModuleConfig().WithName("env")); err != nil {
				t.Fatal(err)
			}
		}
		w := wasm
		cctx := ctx
		if metered {
			if _, err := Instantiate(ctx, r); err != nil {
				t.Fatal(err)
			}
			cctx = mctx
			w = mustInstrument(t, wasm)
		}
		mod, err := r.InstantiateWithConfig(cctx, w, wazero.NewModuleConfig().WithName("m"))
		if err != nil {
			t.Fatalf("instantiate (metered %v): %v", metered, err)
		}
		mods[i] = mod
	}
	return instancePair{plain: mods[0], metered: mods[1], ctx: mctx}
}

func mustInstrument(t testing.TB, wasm []byte) []byte {
	t.Helper()
	out, err := Instrument(wasm)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestExportsBehaveTheSame calls every export of the feature fixtures
// with and without metering and compares the results.
func TestExportsBehaveTheSame(t *testing.T) {
	tests := []struct {
		module, env string
		calls       map[string][][]uint64 // export -> argument lists
	}{
		{"features.wasm", "", map[string][][]uint64{
			"started": {nil}, "indirect": {nil}, "tables": {nil}, "bulk": {nil},
			"multi": {nil}, "simd": {nil}, "tail": {nil},
			"control": {{1}, {2}, {3}, {7}, {50}},
		}},
		{"imports.wasm", "env.wasm", map[string][][]uint64{
			"globals": {nil, nil}, "calls": {nil}, "table": {nil}, "loop": {nil},
		}},
		{"counts.wasm", "", map[string][][]uint64{
			"straight": {nil}, "loop": {{5}}, "branch": {{0}, {1}}, "calls": {nil},
			"brtable": {{0}, {1}, {2}, {9}}, "grow": {{1}, {1000}}, "fib": {{12}},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.module, func(t *testing.T) {
			var env []byte
			if tt.env != "" {
				env = readFixture(t, tt.env)
			}
			p := instantiatePair(t, readFixture(t, tt.module), env)
			for name, argLists := range tt.calls {
				for _, args := range argLists {
					want, err1 := p.plain.ExportedFunction(name).Call(context.Background(), args...)
					got, err2 := p.metered.ExportedFunction(name).Call(p.ctx, args...)
					if (err1 == nil) != (err2 == nil) || !equalU64(want, got) {
						t.Errorf("%s%v: plain %v (err %v), metered %v (err %v)", name, args, want, err1, got, err2)
					}
				}
			}
		})
	}
}

func equalU64(a, b []uint64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestNameSectionFollowsTheFunctions: every defined function keeps its
// name under its new index; the import gets none.
func TestNameSectionFollowsTheFunctions(t *testing.T) {
	for _, f := range []string{"features.wasm", "imports.wasm", "counts.wasm"} {
		in := readFixture(t, f)
		out := mustInstrument(t, in)
		mi, err := wasmbin.Decode(in)
		if err != nil {
			t.Fatal(err)
		}
		mo, err := wasmbin.Decode(out)
		if err != nil {
			t.Fatal(err)
		}
		ni, ok1 := mi.CustomSection("name")
		no, ok2 := mo.CustomSection("name")
		if !ok1 || !ok2 {
			t.Fatalf("%s: name section present before %v, after %v", f, ok1, ok2)
		}
		nImp := uint32(mi.NumImported(wasmbin.KindFunc))
		// refuel, and grow_table for a module that grows tables.
		added := uint32(mo.NumImported(wasmbin.KindFunc)) - nImp
		named := 0
		for i := uint32(0); i < nImp+uint32(len(mi.Functions)); i++ {
			want, ok := wasmbin.FuncName(ni.Content, i)
			j := i
			if i >= nImp {
				j += added
			}
			got, ok2 := wasmbin.FuncName(no.Content, j)
			if ok != ok2 || want != got {
				t.Errorf("%s: function %d named %q (%v), as %d named %q (%v)", f, i, want, ok, j, got, ok2)
			}
			if ok {
				named++
			}
		}
		if named == 0 {
			t.Errorf("%s: no function names to compare; was it built with --debug-names?", f)
		}
		if name, ok := wasmbin.FuncName(no.Content, nImp); ok {
			t.Errorf("%s: the refuel import got the name %q", f, name)
		}
	}
}

// TestOffsetSectionsAreDropped: sections that locate code by offset
// would lie after the rewrite; the others are kept in place.
func TestOffsetSectionsAreDropped(t *testing.T) {
	in := readFixture(t, "counts.wasm")
	for _, name := range []string{".debug_info", ".debug_line", "sourceMappingURL", "producers", "reloc.CODE", "custom-thing"} {
		in = wasmbin.AppendCustomSection(in, name, []byte("payload"))
	}
	m, err := wasmbin.Decode(mustInstrument(t, in))
	if err != nil {
		t.Fatal(err)
	}
	var kept []string
	for _, s := range m.Sections {
		if s.ID == wasmbin.SectionCustom {
			kept = append(kept, s.Name)
		}
	}
	if got, want := strings.Join(kept, ","), "name,producers,custom-thing"; got != want {
		t.Fatalf("custom sections kept: %s, want %s", got, want)
	}
}

func TestInstrumentRefuses(t *testing.T) {
	counts := readFixture(t, "counts.wasm")
	once := mustInstrument(t, counts)
	tests := []struct {
		name string
		wasm []byte
		want error
	}{
		{"an instrumented module", once, ErrInstrumented},
		{"a module that is not wasm", []byte("not wasm"), wasmbin.ErrNotWasm},
		{"a truncated module", counts[:len(counts)/2], wasmbin.ErrUnexpectedEnd},
		{"a 64-bit memory", []byte(wasmbin.Magic + "\x01\x00\x00\x00" + "\x05\x03\x01\x04\x01"), ErrUnsupported},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err := Instrument(tt.wasm)
			if !errors.Is(err, tt.want) {
				t.Fatalf("Instrument = %d bytes, %v; want %v", len(out), err, tt.want)
			}
		})
	}
}

const greetRequest = `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"greet","arguments":{"name":"Ada"},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}` + "\n"

// TestGuestsBehaveTheSame runs real toolchain guests to exit with and
// without metering (wazero's own WASI) and compares stdout and the exit.
func TestGuestsBehaveTheSame(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs Go guests")
	}
	ctx := context.Background()
	greet, err := os.ReadFile(testguest.Go(t, "../../testdata/guests/greet"))
	if err != nil {
		t.Fatal(err)
	}
	cgreet, err := os.ReadFile("../../testdata/packages/cgreet/module.wasm")
	if err != nil {
		t.Fatal(err)
	}
	guests := []struct {
		name  string
		wasm  []byte
		stdin string
		want  string // a substring stdout must hold
	}{
		{"greet (Go)", greet, greetRequest, `Hello, Ada!`},
		{"cgreet (C)", cgreet, greetRequest, `Hello, Ada!`},
		{"trap (WAT)", readFixtureAt(t, "../../testdata/guests/wat/trap.wasm"), greetRequest, ``},
		{"cpu (C)", readFixture(t, "c/cpu.wasm"), "", ""},
	}
	for _, g := range guests {
		t.Run(g.name, func(t *testing.T) {
			// The reference run of a big module uses the interpreter: it
			// compiles a Go guest in a fraction of the time (and runs
			// slower, which for these short runs does not matter).
			ref := mode{name: "reference", interp: len(g.wasm) > 1<<20}
			plainOut, _, plainErr := prepare(t, ctx, g.wasm, ref).run(ctx, []byte(g.stdin))
			out, m, err := prepare(t, ctx, g.wasm, modes[1]).run(ctx, []byte(g.stdin))
			if !bytes.Equal(plainOut, out) || errString(plainErr) != errString(err) {
				t.Fatalf("plain: %q, %v\nmetered: %q, %v", plainOut, plainErr, out, err)
			}
			if !bytes.Contains(out, []byte(g.want)) {
				t.Fatalf("stdout %q lacks %q", out, g.want)
			}
			if m.Used() == 0 {
				t.Fatal("the metered run used no fuel")
			}
			t.Logf("fuel used: %d", m.Used())
		})
	}
}

func readFixtureAt(t *testing.T, p string) []byte {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// errString renders an error for comparison; trap messages carry a wasm
// stack trace whose function indices the rewrite shifts, so only the
// first line counts.
func errString(err error) string {
	if err == nil {
		return ""
	}
	s, _, _ := strings.Cut(err.Error(), "\n")
	return s
}
