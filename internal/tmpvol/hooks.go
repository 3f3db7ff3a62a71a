package tmpvol

// Flush returns once every directory released before it was called is
// removed. The runtime's tests call it to see the pool settle; a server
// has no use for it (Release already hands removals to the pool's
// goroutine).
func (v *Pool) Flush() {
	reply := make(chan struct{})
	select {
	case v.flushReq <- reply:
		<-reply
	case <-v.done:
	}
}

// Dir is this pool's own directory under the root, <root>/<id>; the
// runtime's tests read it to count what the pool left there.
func (v *Pool) Dir() string { return v.dir }

// Counts are the directories created so far, and those that went back to
// the pool after a look and without one; for the runtime's tests.
func (v *Pool) Counts() (created, looked, unlooked uint64) {
	return v.seq.Load(), v.looked.Load(), v.unlooked.Load()
}

// Sweeps is whether pools on this platform sweep the directories of dead
// runtimes: only where files can be locked (flock).
const Sweeps = canSweep

// Recycles reports whether a pool on this platform can tell that a
// directory a call touched is as it was (by its metadata) and reuse it;
// elsewhere every touched directory is removed.
func Recycles(dir string) bool {
	_, ok := stampOf(dir)
	return ok
}
