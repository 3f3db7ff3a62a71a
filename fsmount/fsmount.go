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

// ErrNotMounted is the error (inside a *fs.PathError) for a guest path that
// no mount of the Set holds. errors.Is(err, fs.ErrNotExist) also holds.
var ErrNotMounted error = notMounted{}

type notMounted struct{}

func (notMounted) Error() string        { return "no mount holds this path" }
func (notMounted) Is(target error) bool { return target == fs.ErrNotExist }

// Set is a list of mounts with an opened os.Root per mount. It is safe for
// concurrent use; Close it when the call ends.
type Set struct {
	mounts []Mount
	roots  []*os.Root
}

// Open validates the mounts and opens a root for each. Guest paths must be
// absolute, clean and distinct; every Host must be a directory.
func Open(mounts []Mount) (*Set, error) {
	s := &Set{}
	seen := map[string]bool{}
	for _, m := range mounts {
		if !path.IsAbs(m.Guest) || path.Clean(m.Guest) != m.Guest {
			s.Close()
			return nil, fmt.Errorf("fsmount: guest path %q must be absolute and clean", m.Guest)
		}
		if seen[m.Guest] {
			s.Close()
			return nil, fmt.Errorf("fsmount: guest path %q is mounted twice", m.Guest)
		}
		seen[m.Guest] = true
		r, err := os.OpenRoot(m.Host)
		if err != nil {
			s.Close()
			return nil, fmt.Errorf("fsmount: mount %s: %w", m.Guest, err)
		}
		s.mounts = append(s.mounts, m)
		s.roots = append(s.roots, r)
	}
	return s, nil
}

// Close closes every root. Files opened through the Set stay usable.
func (s *Set) Close() error {
	var errs []error
	for _, r := range s.roots {
		errs = append(errs, r.Close())
	}
	s.roots = nil
	return errors.Join(errs...)
}

// Mounts returns a copy of the mounts, in preopen order.
func (s *Set) Mounts() []Mount {
	return append([]Mount(nil), s.mounts...)
}

// Len is the number of mounts.
func (s *Set) Len() int { return len(s.mounts) }

// Root returns the opened root of mount i (in Mounts order). The Set owns
// it: callers must not close it. Writes through it are not checked against
// ReadOnly; that is the caller's job.
func (s *Set) Root(i int) *os.Root { return s.roots[i] }

// Resolve finds the mount that holds guestPath (the longest guest prefix)
// and returns its index and the path relative to the mount ("." for the
// mount itself). The relative path is not cleaned: ".." and symbolic links
// in it are resolved, confined, by the mount's root when it is used.
func (s *Set) Resolve(guestPath string) (index int, rel string, err error) {
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
	if s.mounts[i].ReadOnly && flag&writeFlags != 0 {
		return nil, &fs.PathError{Op: "open", Path: guestPath, Err: syscall.EROFS}
	}
	f, err := s.roots[i].OpenFile(rel, flag, perm)
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
	info, err = s.roots[i].Stat(rel)
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
