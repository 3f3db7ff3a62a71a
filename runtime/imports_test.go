package runtime

import (
	"slices"
	"testing"
)

// Imports lists the module's imports as uploaded, in order, duplicates
// included, without the metering's subako_fuel imports that the compiled
// module also has.
func TestCheckedImportsAreTheUploadedOnes(t *testing.T) {
	rt := newRuntime(t, nil)
	checked, err := rt.Validate(t.Context(), "../testdata/checks/valid_min.wasm")
	if err != nil {
		t.Fatal(err)
	}
	defer checked.Close(t.Context())
	want := []Import{
		{"wasi_snapshot_preview1", "fd_write"},
		{"wasi_snapshot_preview1", "fd_write"},
		{"wasi_snapshot_preview1", "proc_exit"},
		{"wasi_snapshot_preview1", "path_open"},
		{"subako_http", "request"},
		{"subako_http", "read_response"},
	}
	if got := checked.Imports(); !slices.Equal(got, want) {
		t.Errorf("Imports() = %v\nwant %v", got, want)
	}
	var fuelImported bool
	for _, f := range checked.compiled.ImportedFunctions() {
		if m, _, _ := f.Import(); m == "subako_fuel" {
			fuelImported = true
		}
	}
	if !fuelImported {
		t.Error("the metered module imports nothing from subako_fuel, so this test no longer shows that Imports leaves the metering's imports out")
	}
}
