package wasi

import "syscall"

// noAtime opens a file without updating its access time when read.
const noAtime = syscall.O_NOATIME
