package tmpvol

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"go.uber.org/zap"

	"github.com/subako/subako-runner/fsmount"
)

// Pool owns the /volume/tmp directories of one Runtime's calls.
//
// Every runner of one user keeps its volumes under one directory, the root
// (Config.TempDir, default <os.TempDir>/subako-runner-<uid>). Each Runtime
// owns a directory there, <root>/<id>/, and holds a lock on <root>/<id>.lock
// (flock where the platform has it) for as long as it is open. A Runtime
// that starts removes every directory whose lock it can take: its owner is
// gone, killed or crashed before it could clean up. A lock, not a process
// id, because a process id can be reused by an unrelated process.
//
// A call takes a directory that was created beforehand, and Release hands
// it back: one the call never touched (its fsmount.Set saw nothing reach
// it) goes back to the pool with no system call at all; one it touched
// but left no trace in goes back after a look (recycle); any other is
// removed by a goroutine of the runtime's. So a call whose guest never
// touches /volume/tmp creates, checks and removes nothing, and the others
// create nothing on the call's path. The contract holds: each call
// gets a fresh, empty /volume/tmp, nothing of an earlier call in it or on
// it; one a call wrote in is removed after the call's Release, at the
// latest when the Runtime closes, and after a crash when the next Runtime
// of the same root starts.
type Pool struct {
	root     string
	realRoot string // root with its symbolic links resolved, absolute
	dir      string // this runtime's directory
	lock     *os.File
	log      *zap.Logger

	ready    chan string   // created, empty, never handed out
	used     chan released // released: to be removed, or looked at first
	kick     chan struct{} // ready ran dry: create more
	flushReq chan chan struct{}
	quit     chan struct{}
	done     chan struct{}
	seq      atomic.Uint64

	closeOnce sync.Once
	closed    atomic.Bool

	mu     sync.Mutex
	stamps map[string]dirStamp // a directory's metadata when it was last known fresh

	// unlooked and looked count the directories that went back to the
	// pool without a look and after one (for tests).
	unlooked, looked atomic.Uint64
}

// Prepared is how many empty directories wait ready for calls, and
// how many released ones may wait for removal before Release removes its
// own directory itself.
const Prepared = 8

// DefaultRoot is <os.TempDir>/subako-runner-<uid>: one per user, so
// that one user's runners never sweep (or see) another's.
func DefaultRoot() string {
	return filepath.Join(os.TempDir(), "subako-runner-"+strconv.Itoa(os.Getuid()))
}

// Open makes (or checks) the root, takes this runtime's
// directory in it, removes what dead runtimes left, and starts the
// goroutine that prepares and removes directories.
func Open(root string, log *zap.Logger) (*Pool, error) {
	explicit := root != ""
	if !explicit {
		root = DefaultRoot()
	}
	if err := os.MkdirAll(root, 0o700); err != nil {
		return nil, fmt.Errorf("temp volumes: %w", err)
	}
	if !explicit {
		// In a shared /tmp another user could have made this directory first
		// to read or plant files in our calls' volumes.
		if err := checkPrivateDir(root); err != nil {
			return nil, fmt.Errorf("temp volumes: %w", err)
		}
	}
	v := &Pool{
		root:     root,
		log:      log,
		ready:    make(chan string, Prepared),
		used:     make(chan released, Prepared*4),
		kick:     make(chan struct{}, 1),
		flushReq: make(chan chan struct{}),
		stamps:   map[string]dirStamp{},
		quit:     make(chan struct{}),
		done:     make(chan struct{}),
	}
	// A runtime sweeping at this moment may take a lock file in the instant
	// between its creation and its locking, and remove it: then try anew.
	var id string
	var lock *os.File
	var err error
	for range 3 {
		if id, lock, err = claimTempDir(root); err == nil {
			break
		}
	}
	if err != nil {
		return nil, fmt.Errorf("temp volumes: %w", err)
	}
	v.dir, v.lock = filepath.Join(root, id), lock
	v.realRoot = root
	if real, err := realPath(root); err == nil {
		v.realRoot = real
	}
	if err := os.Mkdir(v.dir, 0o700); err != nil {
		releaseTempLock(root, id, lock)
		return nil, fmt.Errorf("temp volumes: %w", err)
	}
	v.sweep(id)
	go v.run()
	return v, nil
}

// claimTempDir creates and locks a lock file for a new runtime id. The lock
// file appears under its final name already locked (it is created under a
// temporary name and renamed), so a sweeping runtime never mistakes a
// starting one for a dead one.
//
// Between the temporary file's creation and its lock, a runtime sweeping
// the root at that moment may take it for a dead starter's: it locks it
// first (our lock then fails) or removes it (our rename then fails). Both
// are that race, not a fault: the claim starts again under a new id.
func claimTempDir(root string) (string, *os.File, error) {
	const attempts = 16
	var err error
	for range attempts {
		var id string
		var f *os.File
		var raced bool
		if id, f, raced, err = tryClaimTempDir(root); !raced {
			return id, f, err
		}
	}
	return "", nil, fmt.Errorf("%w (%d attempts, each lost to a runtime sweeping the root)", err, attempts)
}

// tryClaimTempDir is one attempt of claimTempDir; raced reports that it
// lost to a sweeping runtime and may be tried again.
func tryClaimTempDir(root string) (id string, f *os.File, raced bool, err error) {
	var b [6]byte
	_, _ = rand.Read(b[:])
	id = strconv.Itoa(os.Getpid()) + "-" + hex.EncodeToString(b[:])
	tmp := filepath.Join(root, id+".lock.new")
	f, err = os.OpenFile(tmp, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return "", nil, false, err
	}
	if ok, err := tryLock(f); err != nil || !ok {
		f.Close()
		os.Remove(tmp)
		if err == nil {
			return "", nil, true, errors.New("a new lock file is locked by someone else")
		}
		return "", nil, false, err
	}
	if err := os.Rename(tmp, filepath.Join(root, id+".lock")); err != nil {
		f.Close()
		os.Remove(tmp)
		return "", nil, errors.Is(err, fs.ErrNotExist), err
	}
	return id, f, false, nil
}

// releaseTempLock removes a lock file and then lets the lock go, in that
// order, so no one can take the lock of a file that is still there.
func releaseTempLock(root, id string, lock *os.File) {
	os.Remove(filepath.Join(root, id+".lock"))
	lock.Close()
}

// sweep removes what dead runtimes left in the root: directories whose lock
// file can be locked or is missing (their owner was killed, or crashed),
// and lock files left behind. Entries of live runtimes (their lock held)
// and anything not named as the runner names them are left alone.
func (v *Pool) sweep(self string) {
	if !canSweep {
		return
	}
	entries, err := os.ReadDir(v.root)
	if err != nil {
		v.log.Warn("temp volumes: cannot list the root to sweep it", zap.String("root", v.root), zap.Error(err))
		return
	}
	ids := map[string]bool{}
	for _, e := range entries {
		name := e.Name()
		id := strings.TrimSuffix(strings.TrimSuffix(name, ".new"), ".lock")
		if id == self || !validTempID(id) {
			continue
		}
		ids[id] = true
	}
	for id := range ids {
		v.sweepOne(id)
	}
}

// sweepOne removes a dead runtime's directory and lock files.
func (v *Pool) sweepOne(id string) {
	// .lock.new before .lock: a starting runtime renames the one to the
	// other, so one of the two is there (and locked) until it closes.
	for _, lockName := range []string{id + ".lock.new", id + ".lock"} {
		f, err := os.OpenFile(filepath.Join(v.root, lockName), os.O_RDWR, 0)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return // cannot tell: leave it
		}
		ok, err := tryLock(f)
		if err != nil || !ok {
			f.Close()
			return // alive (or unknowable)
		}
		defer f.Close() // hold the lock until the directory is gone
		defer os.Remove(filepath.Join(v.root, lockName))
	}
	dir := filepath.Join(v.root, id)
	if _, err := os.Lstat(dir); err == nil {
		if err := removeTree(dir); err != nil {
			v.log.Warn("temp volumes: cannot remove a dead runtime's directory", zap.String("dir", dir), zap.Error(err))
			return
		}
		v.log.Info("temp volumes: removed what a dead runtime left", zap.String("dir", dir))
	}
}

// validTempID reports whether name is a runtime id: <pid>-<12 hex digits>.
func validTempID(name string) bool {
	pid, rnd, ok := strings.Cut(name, "-")
	if !ok || pid == "" || len(rnd) != 12 {
		return false
	}
	if _, err := strconv.ParseUint(pid, 10, 32); err != nil {
		return false
	}
	_, err := hex.DecodeString(rnd)
	return err == nil
}

// Get returns a fresh, empty directory for one call.
func (v *Pool) Get() (string, error) {
	select {
	case d := <-v.ready:
		if len(v.ready) < Prepared/2 {
			v.wake()
		}
		return d, nil
	default:
	}
	v.wake()
	return v.create()
}

// wake asks the goroutine to refill the pool.
func (v *Pool) wake() {
	select {
	case v.kick <- struct{}{}:
	default:
	}
}

// Owns reports whether dir is one of this runtime's volumes.
func (v *Pool) Owns(dir string) bool { return filepath.Dir(dir) == v.dir }

// Overlap refuses a caller's host directory (a call's /volume/data,
// /skills or /package) that holds the temp root or lies inside it: through
// it a guest would reach other calls' /volume/tmp, or a volume would be
// mounted twice. Both paths are compared with their symbolic links
// resolved, so a link to /tmp is no way around it.
func (v *Pool) Overlap(guest, host string) error {
	real, err := realPath(host)
	if err != nil {
		return nil // fsmount reports a directory it cannot open
	}
	within := func(inner, outer string) bool {
		rel, err := filepath.Rel(outer, inner)
		return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))
	}
	switch {
	case within(v.realRoot, real):
		return fmt.Errorf("%s is %s, which holds the runner's temp volumes (%s): a guest could reach other calls' /volume/tmp through it; mount a directory that does not hold them", guest, host, v.root)
	case within(real, v.realRoot):
		return fmt.Errorf("%s is %s, inside the runner's temp volumes (%s); mount a directory of your own", guest, host, v.root)
	}
	return nil
}

// realPath is p absolute, with its symbolic links resolved.
func realPath(p string) (string, error) {
	real, err := filepath.EvalSymlinks(p)
	if err != nil {
		return "", err
	}
	return filepath.Abs(real)
}

// Put is Release of a directory that may have been touched.
func (v *Pool) Put(dir string, reuse bool) error { return v.Release(dir, reuse, true) }

// Release takes a released directory back: into the pool when the call
// never touched it (no system call: nothing reached it, so it is as it
// was when last known fresh), or when it left no trace in it (a few
// system calls here: waiting for a goroutine to do it would let the pool
// run dry under load); else to the goroutine that removes it.
//
// reuse false forbids the pool: the instance may not be gone.
func (v *Pool) Release(dir string, reuse, touched bool) error {
	if !v.closed.Load() {
		if reuse && !touched {
			select {
			case v.ready <- dir: // its stamp stays valid
				v.unlooked.Add(1)
				return nil
			default: // the pool is full
			}
		}
		if reuse && touched && v.recycle(dir) {
			v.looked.Add(1)
			return nil
		}
		select {
		case v.used <- released{dir: dir}:
			return nil
		default: // removals lag behind: this caller waits for its own
		}
	}
	v.mu.Lock()
	delete(v.stamps, dir)
	v.mu.Unlock()
	return removeVolume(dir)
}

// ReleaseLater is Release of a directory that may have been touched, whose
// look happens on the pool's goroutine instead of the caller's: for the
// calls of a worker process, whose directories the parent always looks at
// (it does not take a worker's word that it left one alone), so that the
// look is not on every call's path. When the goroutine lags behind, the
// caller looks as Release would.
func (v *Pool) ReleaseLater(dir string, reuse bool) error {
	if reuse && !v.closed.Load() {
		select {
		case v.used <- released{dir: dir, look: true}:
			return nil
		default:
		}
	}
	return v.Release(dir, reuse, true)
}

// create makes a new, empty directory.
func (v *Pool) create() (string, error) {
	d := filepath.Join(v.dir, "t"+strconv.FormatUint(v.seq.Add(1), 36))
	if err := os.Mkdir(d, 0o700); err != nil {
		return "", err
	}
	v.restamp(d)
	return d, nil
}

// restamp records d's metadata as that of a fresh directory.
func (v *Pool) restamp(d string) {
	if st, ok := stampOf(d); ok {
		v.mu.Lock()
		v.stamps[d] = st
		v.mu.Unlock()
	}
}

// recycle puts a released directory back in the ready pool, and reports
// whether it did, when the call left no trace in it: it is empty, and its metadata (inode, link count,
// size, mode, and its access, change and modification times) is what it
// was when it was last known fresh, so the next call cannot tell it from a
// new one, nor learn anything of the call before. (A guest that reads the
// directory changes its access time; one that creates, removes or sets
// times on anything in it changes its change time.) Anything else is
// removed. The check is a stat, a read of the directory and a stat, much
// cheaper than the rmdir and mkdir it saves.
func (v *Pool) recycle(d string) bool {
	v.mu.Lock()
	st, ok := v.stamps[d]
	delete(v.stamps, d)
	v.mu.Unlock()
	if !ok || !untouched(d, st) {
		return false
	}
	v.restamp(d) // after this check's own read of it
	select {
	case v.ready <- d:
		return true
	default: // the pool is full
		return false
	}
}

// untouched reports whether d still has metadata st and is empty.
func untouched(d string, st dirStamp) bool {
	now, ok := stampOf(d)
	return ok && now == st && emptyDir(d)
}

// run keeps the ready pool filled and removes released directories. New
// ones are made only when the pool has fallen below half, and only up to
// half, so that they do not crowd out directories that come back.
func (v *Pool) run() {
	defer close(v.done)
	v.refill(Prepared)
	for {
		select {
		case r := <-v.used:
			v.settle(r)
		case <-v.kick:
		case reply := <-v.flushReq:
			v.drain()
			close(reply)
		case <-v.quit:
			return
		}
		v.drain()
		if len(v.ready) < Prepared/2 {
			v.refill(Prepared / 2)
		}
	}
}

// refill makes directories until the ready pool holds n.
func (v *Pool) refill(n int) {
	for len(v.ready) < n {
		d, err := v.create()
		if err != nil {
			v.log.Warn("temp volumes: cannot prepare a directory", zap.Error(err))
			return // the next kick or release tries again
		}
		select {
		case v.ready <- d:
		default:
			v.remove(d)
			return
		}
	}
}

// released is a directory given back: look says it goes back to the
// ready pool if a look finds no trace of its call.
type released struct {
	dir  string
	look bool
}

// settle recycles or removes a released directory.
func (v *Pool) settle(r released) {
	if r.look && !v.closed.Load() && v.recycle(r.dir) {
		v.looked.Add(1)
		return
	}
	v.remove(r.dir)
}

// drain settles every released directory waiting in used.
func (v *Pool) drain() {
	for {
		select {
		case r := <-v.used:
			v.settle(r)
		default:
			return
		}
	}
}

func (v *Pool) remove(dir string) {
	v.mu.Lock()
	delete(v.stamps, dir)
	v.mu.Unlock()
	if err := removeVolume(dir); err != nil {
		v.log.Warn("temp volumes: cannot remove a call's /volume/tmp", zap.String("dir", dir), zap.Error(err))
	}
}

// Close removes this runtime's directory, with every volume in it, even
// those of results not released yet, and lets its lock go.
func (v *Pool) Close() error {
	var err error
	v.closeOnce.Do(func() {
		v.closed.Store(true)
		close(v.quit)
		<-v.done
		err = removeTree(v.dir)
		releaseTempLock(v.root, filepath.Base(v.dir), v.lock)
	})
	return err
}

// removeVolume removes one call's directory: a single rmdir when the guest
// left it empty (the common case), the whole tree otherwise.
func removeVolume(dir string) error {
	if err := os.Remove(dir); err == nil || errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	return removeTree(dir)
}

// removeTree removes a directory and everything in it, at any depth and
// without following links (fsmount.RemoveAll); an error names what is left.
func removeTree(dir string) error { return fsmount.RemoveAll(dir) }
