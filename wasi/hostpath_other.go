//go:build !linux

package wasi

import "os"

// hostPath is not known here: links then may not climb at all (see
// links.go), which needs no directory's real path.
func hostPath(*os.File) (string, bool) { return "", false }
