package compile

import (
	"crypto/sha256"
	"sync"
)

// compileLocks serialises the compilations of the same bytes on one
// runtime. wazero v1.12, loading a module from its file cache, publishes
// the module to its in-memory table before it has compiled the module's
// entry preambles; a second compilation of the same bytes at that moment
// takes the half-built module from the table, and its instance panics in
// ExportedFunction ("index out of range [8] with length 0": six
// concurrent RunCommands of one module crashed one run in eight). A
// compilation that waits for the first one to return finds the module
// whole. Compilations of different modules still run side by side.
type compileLocks struct {
	mu sync.Mutex
	m  map[[sha256.Size]byte]*compileLock
}

type compileLock struct {
	sync.Mutex
	users int // holders and waiters; the entry goes when it is 0
}

// lock waits for the compilations of wasm that started before, and
// returns the function that lets the next one go.
func (l *compileLocks) lock(wasm []byte) (unlock func()) {
	key := sha256.Sum256(wasm)
	l.mu.Lock()
	if l.m == nil {
		l.m = map[[sha256.Size]byte]*compileLock{}
	}
	c := l.m[key]
	if c == nil {
		c = &compileLock{}
		l.m[key] = c
	}
	c.users++
	l.mu.Unlock()
	c.Lock()
	return func() {
		c.Unlock()
		l.mu.Lock()
		if c.users--; c.users == 0 {
			delete(l.m, key)
		}
		l.mu.Unlock()
	}
}
