package runtime

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
)

// meteringDir is the directory, inside the compilation cache directory,
// where a runtime records the meterings it derived itself.
const meteringDir = "subako-metering"

// meteringRecords remembers which metered modules this host derived itself:
// (SHA-256 of module.wasm, metering version) → SHA-256 of the metered
// module. Open runs a stored metered module without metering module.wasm
// again only when this host has such a record for it; anything else is
// metered again (see Open).
//
// The records live in memory and, when the runtime has a compilation cache
// directory, beside wazero's machine code in that directory: whoever can
// write there can already plant native code, so the records add nothing to
// what must be trusted, and a store of artifacts never needs to be.
type meteringRecords struct {
	dir string // "" keeps them in memory only

	mu   sync.Mutex
	seen map[meteringKey][sha256.Size]byte
}

type meteringKey struct {
	module  [sha256.Size]byte
	version int
}

func newMeteringRecords(cacheDir string) *meteringRecords {
	r := &meteringRecords{seen: map[meteringKey][sha256.Size]byte{}}
	if cacheDir != "" {
		r.dir = filepath.Join(cacheDir, meteringDir)
	}
	return r
}

func (r *meteringRecords) path(k meteringKey) string {
	return filepath.Join(r.dir, fmt.Sprintf("v%d-%x", k.version, k.module))
}

// has reports whether this host derived metered (its SHA-256) from the
// module at the given metering version.
func (r *meteringRecords) has(module [sha256.Size]byte, version int, metered [sha256.Size]byte) bool {
	got, ok := r.lookup(module, version)
	return ok && got == metered
}

// known reports whether this host metered the module at the given version
// at all: it validated the module then (runtime.meter), so it need not
// validate it again.
func (r *meteringRecords) known(module [sha256.Size]byte, version int) bool {
	_, ok := r.lookup(module, version)
	return ok
}

// lookup returns the record of the module at version, from memory or the
// directory.
func (r *meteringRecords) lookup(module [sha256.Size]byte, version int) ([sha256.Size]byte, bool) {
	k := meteringKey{module, version}
	r.mu.Lock()
	got, ok := r.seen[k]
	r.mu.Unlock()
	if ok || r.dir == "" {
		return got, ok
	}
	b, err := os.ReadFile(r.path(k))
	if err != nil {
		return got, false
	}
	sum, err := hex.DecodeString(strings.TrimSpace(string(b)))
	if err != nil || len(sum) != sha256.Size {
		return got, false
	}
	copy(got[:], sum)
	r.mu.Lock()
	r.seen[k] = got
	r.mu.Unlock()
	return got, true
}

// record notes that this host metered the module into metered. The file
// is written to a temporary name and renamed, so a reader sees all of a
// record or none; an error only means the next process meters again.
func (r *meteringRecords) record(module [sha256.Size]byte, version int, metered [sha256.Size]byte) error {
	k := meteringKey{module, version}
	r.mu.Lock()
	r.seen[k] = metered
	r.mu.Unlock()
	if r.dir == "" {
		return nil
	}
	if err := os.MkdirAll(r.dir, 0o700); err != nil {
		return err
	}
	return writeAtomic(r.path(k), []byte(hex.EncodeToString(metered[:])+"\n"))
}
