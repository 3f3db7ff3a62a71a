//go:build !linux

package wasi

import (
	"os"
	"syscall"
	"time"
)

// lchtimes needs utimensat; elsewhere the times of a symbolic link itself
// cannot be set.
func lchtimes(*os.Root, string, time.Time, time.Time) error { return syscall.ENOTSUP }

// renameOntoDir needs renameat; elsewhere renaming onto an existing
// directory stays refused, as os.Root refuses it.
func renameOntoDir(*os.Root, string, string) error { return syscall.EEXIST }
