//go:build !linux

package wasi

import "io/fs"

// statIDs is the portable fallback: no device or inode numbers, and the
// modification time stands in for the access and change times.
func statIDs(info fs.FileInfo) (dev, ino, nlink, atim, ctim uint64) {
	t := uint64(info.ModTime().UnixNano())
	return 0, 0, 1, t, t
}
