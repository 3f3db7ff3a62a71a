//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package tmpvol

import (
	"errors"
	"fmt"
	"os"
	"syscall"
)

// canSweep: flock says whether a lock file's owner is alive, and the
// kernel drops the lock when the owner dies, however it dies.
const canSweep = true

// tryLock takes an exclusive flock on f without waiting; false means
// another open file holds it.
func tryLock(f *os.File) (bool, error) {
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		switch {
		case err == nil:
			return true, nil
		case errors.Is(err, syscall.EINTR):
			continue
		case errors.Is(err, syscall.EWOULDBLOCK):
			return false, nil
		}
		return false, err
	}
}

// checkPrivateDir makes sure dir is a real directory of this user that no
// one else may write or read (made private if it is ours but wider).
func checkPrivateDir(dir string) error {
	info, err := os.Lstat(dir)
	if err != nil {
		return err
	}
	st, ok := info.Sys().(*syscall.Stat_t)
	if !info.IsDir() || !ok {
		return fmt.Errorf("%s is not a directory", dir)
	}
	if int(st.Uid) != os.Getuid() {
		return fmt.Errorf("%s belongs to user %d, not to this user (%d): set Config.TempDir", dir, st.Uid, os.Getuid())
	}
	if info.Mode().Perm()&0o077 != 0 {
		return os.Chmod(dir, 0o700)
	}
	return nil
}

// dirStamp is a directory's metadata, all of it: two stamps are equal
// only if nothing about the directory changed.
type dirStamp = syscall.Stat_t

func stampOf(dir string) (dirStamp, bool) {
	var st syscall.Stat_t
	err := syscall.Lstat(dir, &st)
	return st, err == nil
}

// emptyDir reports whether dir has no entries, with plain system calls:
// os.Open would also try to register the descriptor with the poller. The
// read leaves dir's access time alone where it can (noAtime).
func emptyDir(dir string) bool {
	fd, err := syscall.Open(dir, syscall.O_RDONLY|syscall.O_DIRECTORY|syscall.O_CLOEXEC|noAtime, 0)
	if err != nil {
		return false
	}
	defer syscall.Close(fd)
	var buf [1024]byte
	for {
		n, err := syscall.ReadDirent(fd, buf[:])
		if errors.Is(err, syscall.EINTR) {
			continue
		}
		if err != nil {
			return false
		}
		if n <= 0 {
			return true
		}
		if _, count, _ := syscall.ParseDirent(buf[:n], 1, nil); count > 0 { // "." and ".." do not count
			return false
		}
	}
}
