package wasi

import (
	"os"
	"strconv"
	"strings"
)

// hostPath is the kernel's current path of the open file f, which follows
// the directory through renames, unlike any path the guest used.
func hostPath(f *os.File) (string, bool) {
	p, err := os.Readlink("/proc/self/fd/" + strconv.FormatUint(uint64(f.Fd()), 10))
	if err != nil || !strings.HasPrefix(p, "/") || strings.HasSuffix(p, " (deleted)") {
		return "", false
	}
	return p, true
}
