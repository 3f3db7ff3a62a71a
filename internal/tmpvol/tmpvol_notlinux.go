//go:build !linux

package tmpvol

// noAtime is 0 where O_NOATIME does not exist: there emptyDir's read may
// change a recycled directory's access time (an earlier call touched it,
// and left no other trace).
const noAtime = 0
