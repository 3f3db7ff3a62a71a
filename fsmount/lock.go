package fsmount

import (
	"context"
	"time"
)

// Lock takes mount i's exclusive lock and returns its release. The WASI
// layer holds it around every act that can carry a symbolic link to
// another depth (path_symlink of a climbing link, path_rename, path_link)
// with the check that judged it, so that two calls sharing a volume (two
// Sets on one host directory, in one Runtime, in two, or in two
// processes) cannot interleave one's check with the other's act.
//
// The lock is the kernel's, flock(2) on the mount's host directory,
// taken through a descriptor of its own: it is keyed by the directory
// itself, whatever path or Set reached it, and held by nothing in this
// process's memory. Waiting polls, so ctx bounds the wait; an ended ctx
// is returned as its error. Where flock is missing (not unix) Lock
// serialises nothing; the WASI layer allows no climbing link there (it
// cannot learn a directory's real depth), and moves need no lock then.
func (s *Set) Lock(ctx context.Context, i int) (release func(), err error) {
	root, err := s.Root(i)
	if err != nil {
		return nil, err
	}
	d, err := root.Open(".")
	if err != nil {
		return nil, guestError("lock", s.mounts[i].Guest, err)
	}
	for wait := time.Duration(0); ; wait = min(2*wait+10*time.Microsecond, time.Millisecond) {
		held, err := tryLock(d)
		switch {
		case err != nil:
			d.Close()
			return nil, guestError("lock", s.mounts[i].Guest, err)
		case held:
			// Closing the descriptor, its only one, releases the lock.
			return func() { d.Close() }, nil
		}
		if wait > 0 {
			t := time.NewTimer(wait)
			select {
			case <-ctx.Done():
				t.Stop()
				d.Close()
				return nil, ctx.Err()
			case <-t.C:
			}
		}
	}
}
