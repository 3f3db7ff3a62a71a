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

// renameAt renames by the paths the resolution took, beneath root: without
// renameat a rename onto an existing directory stays refused (EEXIST, as
// os.Root refuses it), and without /proc no link can climb (links.go), so
// no move needs the act in the very directories the check read.
func renameAt(root *os.Root, from, to resolved) error {
	return root.Rename(from.clean, to.clean)
}

// linkAt links by the paths the resolution took, beneath root (renameAt).
func linkAt(root *os.Root, from, to resolved) error {
	return root.Link(from.clean, to.clean)
}
