package wasi

import (
	"io/fs"
	"syscall"
)

// statIDs returns the device, inode, link count and access/change times of
// info, which Linux keeps in syscall.Stat_t.
func statIDs(info fs.FileInfo) (dev, ino, nlink, atim, ctim uint64) {
	st, ok := info.Sys().(*syscall.Stat_t)
	if !ok {
		t := uint64(info.ModTime().UnixNano())
		return 0, 0, 1, t, t
	}
	return st.Dev, st.Ino, uint64(st.Nlink), uint64(st.Atim.Nano()), uint64(st.Ctim.Nano())
}
