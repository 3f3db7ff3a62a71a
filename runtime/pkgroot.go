package runtime

import (
	"errors"
	"os"
	"sync"
)

// sharedRoot is a Package's /package root. The directory is the same for
// every call of the Package, so the first call that mounts it opens it
// and the others borrow it (os.Root is safe for concurrent use); Close
// closes it. Per-call directories (/volume/tmp, /volume/data) and /skills,
// which a CallRequest names and whose subdirectories may change between
// calls, are opened per call.
type sharedRoot struct {
	mu     sync.Mutex
	root   *os.Root
	closed bool
}

// errPackageClosed is the error of a call on a closed Package.
var errPackageClosed = errors.New("the package is closed")

// get returns the root of dir, opening it on the first call, once check
// accepts dir.
func (s *sharedRoot) get(dir string, check func(dir string) error) (*os.Root, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, errPackageClosed
	}
	if s.root == nil {
		if err := check(dir); err != nil {
			return nil, err
		}
		r, err := os.OpenRoot(dir)
		if err != nil {
			return nil, err
		}
		s.root = r
	}
	return s.root, nil
}

func (s *sharedRoot) isClosed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closed
}

// close closes the root; get fails from then on.
func (s *sharedRoot) close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	if s.root == nil {
		return nil
	}
	err := s.root.Close()
	s.root = nil
	return err
}
