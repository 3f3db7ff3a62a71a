//go:build !unix

package wasi

// Without these flags path_open relies on its check of the opened file's
// type.
const (
	dirOpenFlag     = 0
	noBlockOpenFlag = 0
)
