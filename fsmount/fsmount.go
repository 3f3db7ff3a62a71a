package fsmount

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
)

// Mount is one preopened directory: the guest sees the host directory Host
// at the absolute guest path Guest.
type Mount struct {
	// Guest is the absolute, clean path the module uses, e.g. "/volume/tmp".
	Guest string
	// Host is the host directory behind it.
	Host string
	// ReadOnly makes every write, create, remove, rename, link, symlink and
	// time or size change in the mount fail with EROFS.
	ReadOnly bool
	// Root, when set, is an open root of Host that the Set borrows instead
	// of opening its own: Open does not check Host, and the Set never
	// closes it. Its owner must keep it open for as long as the Set is
	// used. os.Root is safe for concurrent use, so one root may serve the
	// Sets of many calls at once.
	Root *os.Root
	// Lazy defers opening Host to the mount's first use (Set.Root), for a
	// directory the caller made itself and knows to be one: a call that
	// never touches the mount then costs no system call for it. Open does
	// not check Host; if it cannot be opened, every use of the mount fails.
	Lazy bool
}

// Guest paths of the mounts of ABI 1.
const (
	GuestTmp     = "/volume/tmp"
	GuestData    = "/volume/data"
	GuestPackage = "/package"
	GuestSkills  = "/skills"
)

// Layout names the host directories of one call; "" means not mounted.
type Layout struct {
	// Tmp is the fresh, empty directory mounted read-write at /volume/tmp.
	Tmp string
	// Data is the agent's persistent directory, read-write at /volume/data.
	Data string
	// Package is the package directory (with its assets), read-only at /package.
	Package string
	// Skills is mounted read-only at /skills, and each of its immediate
	// subdirectories again at /skills/<name>.
	Skills string
}

// Mounts returns the preopens in ABI order: /volume/tmp (rw), /volume/data
// (rw), /package (ro), /skills (ro), then each immediate subdirectory of
// Skills as /skills/<name> (ro) in byte order of name.
//
// Only real directories count as skill subdirectories: a symbolic link in
// the skills directory is not mounted, because its target could be anywhere
// on the host.
func (l Layout) Mounts() ([]Mount, error) {
	var ms []Mount
	if l.Tmp != "" {
		ms = append(ms, Mount{Guest: GuestTmp, Host: l.Tmp})
	}
	if l.Data != "" {
		ms = append(ms, Mount{Guest: GuestData, Host: l.Data})
	}
	if l.Package != "" {
		ms = append(ms, Mount{Guest: GuestPackage, Host: l.Package, ReadOnly: true})
	}
	if l.Skills != "" {
		ms = append(ms, Mount{Guest: GuestSkills, Host: l.Skills, ReadOnly: true})
		entries, err := os.ReadDir(l.Skills)
		if err != nil {
			return nil, fmt.Errorf("fsmount: skills directory: %w", err)
		}
		var names []string
		for _, e := range entries {
			if e.IsDir() {
				names = append(names, e.Name())
			}
		}
		sort.Strings(names) // byte order, whatever ReadDir's order was
		for _, n := range names {
			ms = append(ms, Mount{Guest: GuestSkills + "/" + n, Host: filepath.Join(l.Skills, n), ReadOnly: true})
		}
	}
	return ms, nil
}

// PathMax is Linux's PATH_MAX: a path has at most PathMax-1 bytes (the
// kernel counts the NUL that ends it), and a longer one is ENAMETOOLONG.
// The host bounds every path a guest hands it by this before it copies
// or splits the path: os.Root splits a path into one slice per component,
// so an unbounded 64 MiB path cost gigabytes before it reached the kernel.
const PathMax = 4096

// tooLong is the error of a path of PathMax bytes or more. It names only
// the path's head: the path itself may be as large as the guest's memory.
func tooLong(op, p string) error {
	return &fs.PathError{Op: op, Path: p[:64] + "...", Err: syscall.ENAMETOOLONG}
}

// ErrNotMounted is the error (inside a *fs.PathError) for a guest path that
// no mount of the Set holds. errors.Is(err, fs.ErrNotExist) also holds.
var ErrNotMounted error = notMounted{}

type notMounted struct{}

func (notMounted) Error() string        { return "no mount holds this path" }
func (notMounted) Is(target error) bool { return target == fs.ErrNotExist }

// Set is a list of mounts with an os.Root per mount. It is safe for
// concurrent use; Close it when the call ends.
//
// The Set records which mounts were used: a mount is touched once Root,
// OpenFile or Stat was called for it, whether the operation then succeeded
// or not. Every access to a mount's host directory goes through one of
// them (the roots are never handed out otherwise, and whatever is opened
// beneath a root was opened through it), so a mount that is not touched
// was not reached through the Set at all: its host directory is as the
// Set found it. Resolve, Mounts and Len look at names only and do not
// touch.
type Set struct {
	mounts []Mount

	mu      sync.Mutex
	closed  bool
	roots   []*os.Root // nil until opened, for a Lazy mount
	errs    []error    // why a Lazy mount's root could not be opened
	touched []bool
}

// Open validates the mounts and opens a root for each (but Lazy ones and
// those with a Root). Guest paths must be absolute, clean and distinct;
// every Host must be a directory.
func Open(mounts []Mount) (*Set, error) {
	s := &Set{
		mounts:  make([]Mount, 0, len(mounts)),
		roots:   make([]*os.Root, len(mounts)),
		errs:    make([]error, len(mounts)),
		touched: make([]bool, len(mounts)),
	}
	for i, m := range mounts {
		if !path.IsAbs(m.Guest) || path.Clean(m.Guest) != m.Guest {
			s.Close()
			return nil, fmt.Errorf("fsmount: guest path %q must be absolute and clean", m.Guest)
		}
		// Quadratic, but mounts are few, and a map would cost every call
		// an allocation.
		for _, o := range s.mounts {
			if o.Guest == m.Guest {
				s.Close()
				return nil, fmt.Errorf("fsmount: guest path %q is mounted twice", m.Guest)
			}
		}
		s.mounts = append(s.mounts, m)
		switch {
		case m.Root != nil:
			s.roots[i] = m.Root
		case !m.Lazy:
			r, err := os.OpenRoot(m.Host)
			if err != nil {
				s.Close()
				return nil, fmt.Errorf("fsmount: mount %s: %w", m.Guest, err)
			}
			s.roots[i] = r
		}
	}
	return s, nil
}

// Close closes every root the Set opened (not the borrowed ones, which
// their owner closes). Files opened through the Set stay usable; Root of a
// closed Set fails with os.ErrClosed.
func (s *Set) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	var errs []error
	for i, r := range s.roots {
		if r != nil && s.mounts[i].Root == nil {
			errs = append(errs, r.Close())
		}
		s.roots[i] = nil
	}
	s.closed = true
	return errors.Join(errs...)
}

// Touched reports whether the mount at guest path guest was touched:
// whether anything reached, or tried to reach, its host directory through
// the Set. It is false when no mount is there.
func (s *Set) Touched(guest string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, m := range s.mounts {
		if m.Guest == guest {
			return s.touched[i]
		}
	}
	return false
}

// Mounts returns a copy of the mounts, in preopen order.
func (s *Set) Mounts() []Mount {
	return append([]Mount(nil), s.mounts...)
}

// Len is the number of mounts.
func (s *Set) Len() int { return len(s.mounts) }

// Root returns the root of mount i (in Mounts order), opening it first
// for a Lazy mount, and marks the mount touched. The Set, or the owner of
// a borrowed root, owns it: callers must not close it, nor keep it past
// the Set's Close. Writes through it are not checked against ReadOnly;
// that is the caller's job. An error names the guest path, not the host's.
func (s *Set) Root(i int) (*os.Root, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.touched[i] = true
	switch {
	case s.closed:
		return nil, &fs.PathError{Op: "open", Path: s.mounts[i].Guest, Err: os.ErrClosed}
	case s.roots[i] == nil && s.errs[i] == nil:
		r, err := os.OpenRoot(s.mounts[i].Host)
		if err != nil {
			// Kept: every later use fails alike, without a system call.
			s.errs[i] = guestError("open", s.mounts[i].Guest, err)
		}
		s.roots[i] = r
	}
	if s.errs[i] != nil {
		return nil, s.errs[i]
	}
	return s.roots[i], nil
}

// Resolve finds the mount that holds guestPath (the longest guest prefix)
// and returns its index and the path relative to the mount ("." for the
// mount itself). The relative path is not cleaned: ".." and symbolic links
// in it are resolved, confined, by the mount's root when it is used. A
// path of PathMax bytes or more is refused (syscall.ENAMETOOLONG) before
// anything else.
func (s *Set) Resolve(guestPath string) (index int, rel string, err error) {
	if len(guestPath) >= PathMax {
		return -1, "", tooLong("resolve", guestPath)
	}
	best := -1
	for i, m := range s.mounts {
		var r string
		switch {
		case guestPath == m.Guest:
			r = "."
		case m.Guest == "/" && strings.HasPrefix(guestPath, "/"):
			r = guestPath[1:]
		case strings.HasPrefix(guestPath, m.Guest+"/"):
			r = guestPath[len(m.Guest)+1:]
		default:
			continue
		}
		if best < 0 || len(m.Guest) > len(s.mounts[best].Guest) {
			best, rel = i, r
		}
	}
	if best < 0 {
		return -1, "", &fs.PathError{Op: "resolve", Path: guestPath, Err: ErrNotMounted}
	}
	rel = strings.TrimLeft(rel, "/")
	if rel == "" {
		rel = "."
	}
	return best, rel, nil
}

// writeFlags are the open flags that modify the file system.
const writeFlags = os.O_WRONLY | os.O_RDWR | os.O_CREATE | os.O_TRUNC | os.O_APPEND

// OpenFile opens a guest absolute path confined to the mount that holds it.
// Writes on read-only mounts fail with an error for which
// errors.Is(err, syscall.EROFS) holds.
func (s *Set) OpenFile(guestPath string, flag int, perm fs.FileMode) (*os.File, error) {
	i, rel, err := s.Resolve(guestPath)
	if err != nil {
		return nil, err
	}
	root, err := s.Root(i) // touches even a refused write: be conservative
	if err != nil {
		return nil, err
	}
	if s.mounts[i].ReadOnly && flag&writeFlags != 0 {
		return nil, &fs.PathError{Op: "open", Path: guestPath, Err: syscall.EROFS}
	}
	f, err := root.OpenFile(rel, flag, perm)
	if err != nil {
		return nil, guestError("open", guestPath, err)
	}
	return f, nil
}

// Stat follows symbolic links only inside the mount and returns the host
// path (mount host directory joined with the cleaned relative path) with the
// file's information. The host path is for messages and identification:
// open the file through OpenFile, which stays confined, not through the
// host path.
func (s *Set) Stat(guestPath string) (hostPath string, info fs.FileInfo, err error) {
	i, rel, err := s.Resolve(guestPath)
	if err != nil {
		return "", nil, err
	}
	root, err := s.Root(i)
	if err != nil {
		return "", nil, err
	}
	info, err = root.Stat(rel)
	if err != nil {
		return "", nil, guestError("stat", guestPath, err)
	}
	return filepath.Join(s.mounts[i].Host, filepath.FromSlash(path.Clean(rel))), info, nil
}

// guestError names the guest path, not the host path, in an error, so that
// host directory names never reach a module author's error report.
func guestError(op, guestPath string, err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return &fs.PathError{Op: op, Path: guestPath, Err: pe.Err}
	}
	return &fs.PathError{Op: op, Path: guestPath, Err: err}
}
