package fuel

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// meteringFixtures are committed modules (rebuilt only by `make fixtures`)
// that together reach every part of the rewriter: C and Go-like code,
// loops, calls, bulk memory, imports, tables, SIMD, names.
var meteringFixtures = map[string]string{
	// path from the module root: sha256 of the input, so that a rebuilt
	// fixture is told apart from a changed rewriter.
	"testdata/packages/cgreet/module.wasm":     "9180cec98cb4a7a0b5540d9c84fa89e7658b83395092ecce3dfd6347d63f729b",
	"testdata/fuel/c/cpu.wasm":                 "e59d53eff3fdb76f4d8291f95b392af3d5fb77f454561caee8cae1c29f67cbc9",
	"testdata/fuel/counts.wasm":                "c22eac6c6b7b87235c7730bad43e2b444a2245f8f29c837810d736d7ec41ca72",
	"testdata/fuel/features.wasm":              "83e76ec9e4f895f3ea4984ff476a466dd661f1588b01a80c5ce80681fdbeb010",
	"testdata/fuel/imports.wasm":               "a4887e6f76db0d273956dd2dd61ba5f24f83aab041922f96bd5e458790365ee9",
	"internal/wasmbin/testdata/walk_all.wasm":  "7785c23a247816114eca384e0ced4fe5c07780c59d584e6c3eb6d5ef81145474",
	"internal/wasmbin/testdata/walk_simd.wasm": "1a3428408a761ede338b66a29b8edf257fcb3b4483f6397565440e5d7ac8d7a0",
}

// meteringHistory maps each MeteringVersion to the combined hash of the
// metered fixtures at that version. Never edit a past entry: a changed
// output gets a new version and a new entry.
var meteringHistory = map[int]string{
	1: "7e4f0fdab72ef8639f859c8fbc5899f3bcfa16ee7e17bd35cebe71bc9254ea67",
	// 2: nested loop headers with straight code between share one check;
	// table.grow asks subako_fuel.grow_table.
	2: "f73f5a2a4110dfc4278b03aa11a7dd9ebfaed8d5a79339e6d50ef7030b9a6033",
	// 3: runs of data segments a few zero bytes apart are joined (data.go).
	3: "f3ea0f3aaf1c71d2043d1d623d90dd18d6d45eac5c3f20bcadf8508b49fa858d",
	// 4: every check also tests the host's stop flag (a second exported
	// global); growths are charged after they succeed and bulk
	// instructions after they ran, for what they did.
	4: "0629bf265b448613e4d569bf891821788f3b7c30378da9a8139a57ede4c8b569",
	// 5: the stop flag is replaced by the tick (subako_fuel_tick), a
	// second counter charged each check's region; the deadline no longer
	// waits for a host goroutine to write a flag.
	5: "79e86f7591b0e6af1773da2853658d7eaf3e6ff0ee44edfca4408e430c1e8d78",
	// 6: a check at a loop header (of a loop that takes no parameters)
	// branches back to the header after a refuel instead of falling
	// through, giving back what the header charges again.
	6: "1535a2c53162eee60473159a8eae35d016eb1f7c0df09e2ee89a2eaee21aceb4",
	// 7: small leaves (leaf.go) charge nothing; every call that can
	// reach one pays its whole body, and writes nothing back for it. The
	// counter and the tick are the two halves of one global (and one
	// local), checked together; a call whose return can run long before
	// the next check gets a check after it (tail.go).
	7: "f66c92c3d811c00814f2fdf953d0f7dd4921a4c387916ecd0370b087dd92d2e4",
	// 8: a call_indirect, return_call_indirect, call_ref or
	// return_call_ref of a type an import the module can reference has
	// pays ImportCallCost (and tails counts it); every call site that may
	// reach the host leaves the tick at -1 (hostcall.go). A third
	// global counts the frames left, and every function that makes calls
	// takes its frame's weight off on entry (depth.go), by its body's size.
	8: "ff12f5b51311b0aea49291ce97bb05fff924abcfe3f9592c4066f30b6b3c3ffd",
	// 9: a frame's weight counts the code before its last call, not the
	// whole body.
	9: "8fef6dabada0c3bf1c55d92f0da3d45c378009f206bd8567051e546a0c3a7c9c",
}

// TestMeteringVersionPinsOutput fails when Instrument's output changes
// without a bump of MeteringVersion: stored artifacts of the old output
// would otherwise run as if this runner had made them.
func TestMeteringVersionPinsOutput(t *testing.T) {
	t.Parallel()
	paths := make([]string, 0, len(meteringFixtures))
	for p := range meteringFixtures {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	combined := sha256.New()
	for _, p := range paths {
		in, err := os.ReadFile(filepath.Join("..", "..", filepath.FromSlash(p)))
		if err != nil {
			t.Fatal(err)
		}
		if sum := sha256.Sum256(in); hex.EncodeToString(sum[:]) != meteringFixtures[p] {
			t.Fatalf("fixture %s was rebuilt (sha256 %x): in a commit that does not change Instrument, set its input hash in meteringFixtures and the current version's combined hash in meteringHistory (a rebuilt fixture is not a metering change)", p, sum)
		}
		out, err := Instrument(in)
		if err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		sum := sha256.Sum256(out)
		combined.Write([]byte(p + "\x00"))
		combined.Write(sum[:])
	}
	got := hex.EncodeToString(combined.Sum(nil))
	want, ok := meteringHistory[MeteringVersion]
	if !ok {
		t.Fatalf("MeteringVersion %d has no entry in meteringHistory: add %d: %q", MeteringVersion, MeteringVersion, got)
	}
	if got != want {
		t.Fatalf("Instrument's output changed at MeteringVersion %d (combined %s, pinned %s): bump MeteringVersion to %d and add %d: %q to meteringHistory",
			MeteringVersion, got, want, MeteringVersion+1, MeteringVersion+1, got)
	}
	for v, h := range meteringHistory {
		if v > MeteringVersion {
			t.Errorf("meteringHistory has version %d, past MeteringVersion %d", v, MeteringVersion)
		}
		if v != MeteringVersion && strings.EqualFold(h, got) {
			t.Errorf("version %d has the same output as MeteringVersion %d: the bump is needless or the history is wrong", v, MeteringVersion)
		}
	}
}
