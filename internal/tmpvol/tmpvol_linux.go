package tmpvol

import "syscall"

// noAtime keeps emptyDir's own read of a released directory from changing
// its access time: the next call would see that an earlier one touched it.
const noAtime = syscall.O_NOATIME
