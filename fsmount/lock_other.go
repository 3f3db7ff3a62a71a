//go:build !unix

package fsmount

import "os"

// tryLock has no flock to take (see Lock).
func tryLock(*os.File) (bool, error) { return true, nil }
