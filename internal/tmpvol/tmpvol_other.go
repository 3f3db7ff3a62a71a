//go:build !(linux || darwin || freebsd || netbsd || openbsd || dragonfly)

package tmpvol

import (
	"fmt"
	"os"
)

// canSweep is false without flock: nothing tells a dead runtime's directory
// from a live one's, so none is removed but by its own runtime's Close.
const canSweep = false

func tryLock(*os.File) (bool, error) { return true, nil }

func checkPrivateDir(dir string) error {
	info, err := os.Lstat(dir)
	if err != nil {
		return err
	}
	if !info.IsDir() {
		return fmt.Errorf("%s is not a directory", dir)
	}
	return nil
}

// dirStamp is empty: without the metadata to compare, a released
// directory is never recycled, only removed.
type dirStamp struct{}

func stampOf(string) (dirStamp, bool) { return dirStamp{}, false }

func emptyDir(string) bool { return false }
