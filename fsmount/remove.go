package fsmount

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
)

// removeBatch is how many directory entries RemoveAll reads at a time, so
// that its memory does not grow with a directory's size.
const removeBatch = 256

// renameTries bounds the search for a free name at the top of the tree.
const renameTries = 1000

// RemoveAll removes path and everything beneath it, like os.RemoveAll, for
// trees a guest built: its descriptors, memory and path lengths stay bounded
// whatever the tree's depth. os.RemoveAll holds one descriptor per level and
// fails on a chain deeper than the descriptor limit (a guest makes a
// 30,000-deep chain in a second), leaving the directory behind.
//
// It works beneath an os.Root opened on path and never follows a symbolic
// link: a link is removed, not what it points to. Each directory met below
// the top is emptied of files and its subdirectories are renamed up to the
// top under fresh names, so at most two directories are open at once and
// every path it uses has at most two components; every entry is removed
// or moved once.
//
// A missing path is not an error. When something cannot be removed,
// RemoveAll still removes all it can and returns an error that names path
// and wraps the first failure (errors.Is(err, fs.ErrPermission) and the
// like hold); it never leaves a tree behind silently.
func RemoveAll(path string) error {
	if filepath.Base(path) == "." {
		return &fs.PathError{Op: "removeall", Path: path, Err: syscall.EINVAL}
	}
	info, err := os.Lstat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil
	case err != nil:
		return removeError(path, err)
	case !info.IsDir():
		return removeError(path, ignoreMissing(os.Remove(path)))
	}
	r, err := os.OpenRoot(path)
	if err != nil {
		return removeError(path, ignoreMissing(err))
	}
	err = emptyTree(r)
	r.Close()
	if err != nil {
		return removeError(path, err)
	}
	return removeError(path, ignoreMissing(os.Remove(path)))
}

func removeError(path string, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("fsmount: %s was not removed: %w", path, err)
}

func ignoreMissing(err error) error {
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	return err
}

// emptyTree removes everything beneath r. It makes passes over the top
// directory until one finds it empty, or until one changes nothing, which
// means what is left cannot be removed.
func emptyTree(r *os.Root) error {
	var seq int
	for {
		var first error
		seen, progress := 0, 0
		err := eachEntry(r, ".", func(e fs.DirEntry) {
			seen++
			name := e.Name()
			if e.IsDir() {
				n, err := flatten(r, name, &seq)
				progress += n
				if err != nil {
					first = cmp(first, err)
					return
				}
			}
			if err := ignoreMissing(r.Remove(name)); err != nil {
				first = cmp(first, err)
				return
			}
			progress++
		})
		switch {
		case err != nil:
			return cmp(first, err)
		case seen == 0:
			return nil
		case progress == 0:
			return first
		}
	}
}

// flatten empties the directory dir at the top of r: its files are
// removed and its subdirectories are moved to the top under fresh names,
// where a later visit empties them in turn. It returns how many entries it
// removed or moved.
func flatten(r *os.Root, dir string, seq *int) (int, error) {
	var first error
	done := 0
	err := eachEntry(r, dir, func(e fs.DirEntry) {
		child := dir + "/" + e.Name()
		var err error
		if e.IsDir() {
			err = moveToTop(r, child, seq)
		} else {
			err = ignoreMissing(r.Remove(child))
		}
		if err != nil {
			first = cmp(first, err)
			return
		}
		done++
	})
	return done, cmp(first, err)
}

// moveToTop renames the directory child to a name at the top of r that no
// entry has.
func moveToTop(r *os.Root, child string, seq *int) error {
	var err error
	for range renameTries {
		name := ".subako-rm-" + strconv.Itoa(*seq)
		*seq++
		if _, lerr := r.Lstat(name); lerr == nil {
			continue
		}
		if err = r.Rename(child, name); err == nil || !taken(err) {
			return err
		}
	}
	return err
}

// taken reports a rename refused because the new name is in use.
func taken(err error) bool {
	return errors.Is(err, fs.ErrExist) || errors.Is(err, syscall.ENOTEMPTY) ||
		errors.Is(err, syscall.ENOTDIR) || errors.Is(err, syscall.EISDIR)
}

// eachEntry calls fn for each entry of the directory dir of r, read
// removeBatch entries at a time; fn may remove or add entries.
func eachEntry(r *os.Root, dir string, fn func(fs.DirEntry)) error {
	d, err := r.Open(dir)
	if err != nil {
		return ignoreMissing(err)
	}
	defer d.Close()
	for {
		es, err := d.ReadDir(removeBatch)
		for _, e := range es {
			fn(e)
		}
		if err == io.EOF || (err == nil && len(es) == 0) {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

// cmp keeps the first error.
func cmp(first, err error) error {
	if first != nil {
		return first
	}
	return err
}
