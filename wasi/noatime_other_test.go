//go:build !linux

package wasi

// noAtime is 0 where O_NOATIME does not exist: a listing by the test may
// change a directory's access time there.
const noAtime = 0
