package fuel

import (
	"bytes"
	"context"
	"os"
	"strings"
	"testing"

	"github.com/subako/subako-runner/internal/devtools/testguest"
	"github.com/subako/subako-runner/internal/wasmbin"
	"github.com/subako/subako-runner/internal/wasmbin/wasmtest"
	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"
)

// seg is one data segment of a test module: active at offset at, or
// passive.
type seg struct {
	at      uint32
	init    string
	passive bool
}

// dataSection encodes segs as the content of a data section.
func dataSection(segs ...seg) []byte {
	out := wasmbin.AppendU32(nil, uint32(len(segs)))
	for _, s := range segs {
		if s.passive {
			out = append(out, 1)
		} else {
			out = append(out, 0, byte(wasmbin.OpI32Const))
			out = wasmbin.AppendS64(out, int64(int32(s.at)))
			out = append(out, byte(wasmbin.OpEnd))
		}
		out = wasmbin.AppendU32(out, uint32(len(s.init)))
		out = append(out, s.init...)
	}
	return out
}

// dataOf decodes wasm and returns its data segments.
func dataOf(t *testing.T, wasm []byte) []wasmbin.Data {
	t.Helper()
	m, err := wasmbin.Decode(wasm)
	if err != nil {
		t.Fatal(err)
	}
	return m.Data
}

// initialMemory instantiates wasm (plain, or instrumented and metered)
// without running it and returns its memory, or the instantiation's error.
func initialMemory(t *testing.T, wasm []byte, metered bool) ([]byte, error) {
	t.Helper()
	ctx := context.Background()
	r := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfig().WithCoreFeatures(api.CoreFeaturesV2))
	t.Cleanup(func() { r.Close(ctx) })
	if _, err := wasi_snapshot_preview1.Instantiate(ctx, r); err != nil {
		t.Fatal(err)
	}
	if metered {
		if _, err := Instantiate(ctx, r); err != nil {
			t.Fatal(err)
		}
		wasm = mustInstrument(t, wasm)
	}
	mod, err := r.InstantiateWithConfig(ctx, wasm, wazero.NewModuleConfig().WithStartFunctions())
	if err != nil {
		return nil, err
	}
	mem, ok := mod.ExportedMemory("memory").Read(0, mod.ExportedMemory("memory").Size())
	if !ok {
		t.Fatal("cannot read the memory")
	}
	return bytes.Clone(mem), nil
}

// Joining data segments leaves the instance's initial memory as it was,
// byte for byte, and fails an instantiation exactly when the module's own
// segments would; it joins only what it can prove it may.
func TestJoinDataKeepsTheInitialMemory(t *testing.T) {
	t.Parallel()
	// Joining writes no more zeroes than the segments hold: the long
	// segments here pay for the gaps the cases mean to test.
	long := strings.Repeat("L", 2*maxDataGap)
	goData := strings.Repeat("g", 32) // Go's segments: 32 bytes, 18 apart
	tests := []struct {
		name     string
		segs     []seg
		segments int // in the instrumented module
		fails    bool
	}{
		{"Go's shape: ascending, a few bytes apart", []seg{{16, goData, false}, {66, goData, false}, {116, goData, false}, {148, goData, false}}, 1, false},
		{"a gap longer than maxDataGap", []seg{{0, long, false}, {2*maxDataGap + maxDataGap + 1, "b", false}, {3*maxDataGap + 2, "c", false}}, 2, false},
		{"a gap of exactly maxDataGap", []seg{{0, long, false}, {3 * maxDataGap, "b", false}}, 1, false},
		{"an overlap: the later segment wins", []seg{{10, "aaaa", false}, {12, "BB", false}, {20, "c", false}}, 2, false},
		{"descending", []seg{{100, "a", false}, {50, "b", false}, {52, "c", false}}, 2, false},
		// The attack: joining 80 and 110 writes zeroes over 100..103.
		{"an earlier segment inside a later gap", []seg{{2000, long, false}, {100, "AAA", false}, {80, "bbbbbbbbbb", false}, {110, "c", false}}, 4, false},
		{"an earlier segment beside a later gap", []seg{{2000, long, false}, {200, "AAA", false}, {80, "bbbbbbbbbb", false}, {110, "c", false}}, 3, false},
		{"passive segments between", []seg{{0, long, false}, {0, "passive", true}, {2000, "b", false}, {2005, "c", false}}, 3, false},
		{"zero-length segments", []seg{{0, "", false}, {3, "aaaaaa", false}, {9, "", false}, {12, "bbbbbb", false}}, 1, false},
		{"the last of a run out of bounds", []seg{{65530, "abc", false}, {65534, "defg", false}}, 1, true},
		{"out of bounds past 2^31", []seg{{0, "abc", false}, {0x8000_0000, "d", false}, {0x8000_0002, "e", false}}, 2, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			wasm := wasmtest.Module{Data: dataSection(tt.segs...)}.Bytes()
			want, wantErr := initialMemory(t, wasm, false)
			got, err := initialMemory(t, wasm, true)
			if (wantErr != nil) != tt.fails || (err != nil) != tt.fails {
				t.Fatalf("instantiation errors: plain %v, instrumented %v; want failure %v", wantErr, err, tt.fails)
			}
			if !bytes.Equal(got, want) {
				i := 0
				for i < len(got) && got[i] == want[i] {
					i++
				}
				t.Fatalf("initial memory differs at byte %d", i)
			}
			if n := len(dataOf(t, mustInstrument(t, wasm))); n != tt.segments {
				t.Fatalf("%d segments after instrumenting, want %d", n, tt.segments)
			}
		})
	}
}

// Where joining could change what the module does, or proves nothing, the
// data section is kept byte for byte.
func TestJoinDataLeavesWhatItCannotProve(t *testing.T) {
	t.Parallel()
	near := []seg{{0, "a", false}, {2, "b", false}}
	globalOffset := &wasmbin.Module{Data: []wasmbin.Data{
		{Offset: wasmbin.Expr{Bytes: []byte{byte(wasmbin.OpI32Const), 0, byte(wasmbin.OpEnd)}}, Init: []byte("a")},
		{Offset: wasmbin.Expr{Bytes: []byte{0x23, 0, byte(wasmbin.OpEnd)}}, Init: []byte("b")}, // global.get 0
	}}
	otherMemory := &wasmbin.Module{Data: dataOf(t, wasmtest.Module{Data: dataSection(near...)}.Bytes())}
	otherMemory.Data[1].Memory = 1 // multiple memories: where a segment writes is another memory's
	importedMemory := &wasmbin.Module{
		Imports: []wasmbin.Import{{Module: "env", Name: "memory", Kind: wasmbin.KindMemory}},
		Data:    dataOf(t, wasmtest.Module{Data: dataSection(near...)}.Bytes()),
	}
	for name, m := range map[string]*wasmbin.Module{
		"an offset read from a global": globalOffset, "an imported memory": importedMemory, "a segment of memory 1": otherMemory,
	} {
		if _, ok := joinData(m); ok {
			t.Errorf("%s: segments were joined", name)
		}
	}
	// A data count section lets code name segments (memory.init,
	// data.drop): their numbers must stay.
	wasm := wasmtest.Module{Data: dataSection(near...), HasDataCount: true, DataCount: 2}.Bytes()
	if n := len(dataOf(t, mustInstrument(t, wasm))); n != 2 {
		t.Fatalf("with a data count section: %d segments after instrumenting, want 2", n)
	}
}

// The zeroes written out are bounded by the bytes the segments hold: a
// module of one-byte segments 100 bytes apart does not grow by 100 bytes a
// segment.
func TestJoinDataBoundsTheZeroesItWrites(t *testing.T) {
	t.Parallel()
	var segs []seg
	for i := range 200 {
		segs = append(segs, seg{uint32(i * 101), "x", false})
	}
	wasm := wasmtest.Module{Data: dataSection(segs...), MemoryPages: 1}.Bytes()
	held := 0
	for _, d := range dataOf(t, mustInstrument(t, wasm)) {
		held += len(d.Init)
	}
	if held > 2*len(segs) {
		t.Fatalf("the segments hold %d bytes after instrumenting, from %d: more zeroes written than data", held, len(segs))
	}
	want, err := initialMemory(t, wasm, false)
	if err != nil {
		t.Fatal(err)
	}
	got, err := initialMemory(t, wasm, true)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatal("initial memory differs")
	}
}

// A Go guest's tens of thousands of segments become a few, and its
// initial memory is the same.
func TestJoinDataOfAGoGuest(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a Go guest")
	}
	t.Parallel()
	wasm, err := os.ReadFile(testguest.Go(t, "../../testdata/guests/greet"))
	if err != nil {
		t.Fatal(err)
	}
	before, after := len(dataOf(t, wasm)), len(dataOf(t, mustInstrument(t, wasm)))
	if before < 1000 || after > 64 {
		t.Fatalf("%d data segments before instrumenting, %d after: want thousands, then at most 64", before, after)
	}
	want, err := initialMemory(t, wasm, false)
	if err != nil {
		t.Fatal(err)
	}
	got, err := initialMemory(t, wasm, true)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatal("the Go guest's initial memory differs after instrumenting")
	}
	t.Logf("%d data segments before, %d after", before, after)
}
