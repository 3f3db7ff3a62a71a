//go:build unix

package fsmount

import (
	"errors"
	"os"
	"syscall"
)

// tryLock takes d's exclusive flock without waiting; false when another
// descriptor holds it.
func tryLock(d *os.File) (bool, error) {
	rc, err := d.SyscallConn()
	if err != nil {
		return false, err
	}
	var ferr error
	if err := rc.Control(func(fd uintptr) {
		ferr = syscall.Flock(int(fd), syscall.LOCK_EX|syscall.LOCK_NB)
	}); err != nil {
		return false, err
	}
	switch {
	case ferr == nil:
		return true, nil
	case errors.Is(ferr, syscall.EWOULDBLOCK), errors.Is(ferr, syscall.EINTR):
		return false, nil
	}
	return false, ferr
}
