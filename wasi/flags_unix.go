//go:build unix

package wasi

import "syscall"

// dirOpenFlag makes an open fail with ENOTDIR unless it names a directory.
const dirOpenFlag = syscall.O_DIRECTORY

// noBlockOpenFlag keeps an open of a FIFO from blocking the host; such
// files are then refused (only regular files and directories are opened).
const noBlockOpenFlag = syscall.O_NONBLOCK
