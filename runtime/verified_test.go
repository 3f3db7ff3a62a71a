package runtime

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"testing"
)

// TestMeteringRecords: a record made by one runtime is seen by the next
// on the same cache directory, for that exact (module, version, metered)
// only; an unreadable or malformed record vouches for nothing.
func TestMeteringRecords(t *testing.T) {
	t.Parallel()
	cache := t.TempDir()
	module, metered, other := sha256.Sum256([]byte("m")), sha256.Sum256([]byte("metered")), sha256.Sum256([]byte("x"))
	if err := newMeteringRecords(cache).record(module, 3, metered); err != nil {
		t.Fatal(err)
	}
	next := newMeteringRecords(cache)
	for _, c := range []struct {
		name    string
		module  [sha256.Size]byte
		version int
		metered [sha256.Size]byte
		want    bool
	}{
		{"the recorded metering", module, 3, metered, true},
		{"another metered module", module, 3, other, false},
		{"another metering version", module, 4, metered, false},
		{"another module", other, 3, metered, false},
	} {
		if got := next.has(c.module, c.version, c.metered); got != c.want {
			t.Errorf("%s: has = %v, want %v", c.name, got, c.want)
		}
	}
	if newMeteringRecords("").has(module, 3, metered) {
		t.Error("a runtime without a cache directory vouched for another's record")
	}
	mem := newMeteringRecords("")
	if err := mem.record(module, 3, metered); err != nil || !mem.has(module, 3, metered) {
		t.Errorf("an in-memory record is not kept: %v", err)
	}

	// Malformed records vouch for nothing.
	for _, body := range []string{"", "zz\n", hex.EncodeToString(metered[:16]) + "\n", hex.EncodeToString(metered[:]) + "00\n"} {
		path := newMeteringRecords(cache).path(meteringKey{other, 1})
		if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		if newMeteringRecords(cache).has(other, 1, metered) {
			t.Errorf("record %q vouched", body)
		}
	}
	if _, err := os.Stat(filepath.Join(cache, meteringDir)); err != nil {
		t.Errorf("records are not under %s: %v", meteringDir, err)
	}
}
