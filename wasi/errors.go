package wasi

import (
	"errors"
	"io/fs"
	"os"
	"strings"
	"syscall"
)

// hostErrnos maps host errors to WASI errno values. Host errno numbers
// differ between systems; the syscall names do not.
var hostErrnos = map[syscall.Errno]Errno{
	syscall.E2BIG:        Errno2big,
	syscall.EACCES:       ErrnoAcces,
	syscall.EAGAIN:       ErrnoAgain,
	syscall.EBADF:        ErrnoBadf,
	syscall.EBUSY:        ErrnoBusy,
	syscall.EDQUOT:       ErrnoDquot,
	syscall.EEXIST:       ErrnoExist,
	syscall.EFAULT:       ErrnoFault,
	syscall.EFBIG:        ErrnoFbig,
	syscall.EINTR:        ErrnoIntr,
	syscall.EINVAL:       ErrnoInval,
	syscall.EIO:          ErrnoIo,
	syscall.EISDIR:       ErrnoIsdir,
	syscall.ELOOP:        ErrnoLoop,
	syscall.EMFILE:       ErrnoMfile,
	syscall.EMLINK:       ErrnoMlink,
	syscall.ENAMETOOLONG: ErrnoNametoolong,
	syscall.ENFILE:       ErrnoNfile,
	syscall.ENOENT:       ErrnoNoent,
	syscall.ENOMEM:       ErrnoNomem,
	syscall.ENOSPC:       ErrnoNospc,
	syscall.ENOSYS:       ErrnoNosys,
	syscall.ENOTDIR:      ErrnoNotdir,
	syscall.ENOTEMPTY:    ErrnoNotempty,
	syscall.ENOTSUP:      ErrnoNotsup,
	syscall.ENXIO:        ErrnoNxio,
	syscall.EOVERFLOW:    ErrnoOverflow,
	syscall.EPERM:        ErrnoPerm,
	syscall.EPIPE:        ErrnoPipe,
	syscall.ERANGE:       ErrnoRange,
	syscall.EROFS:        ErrnoRofs,
	syscall.ESPIPE:       ErrnoSpipe,
	syscall.ETXTBSY:      ErrnoTxtbsy,
	syscall.EXDEV:        ErrnoXdev,
}

// errnoOf turns a host error into the errno the guest sees.
func errnoOf(err error) Errno {
	if err == nil {
		return ErrnoSuccess
	}
	var en syscall.Errno
	if errors.As(err, &en) {
		if en == syscall.EOPNOTSUPP {
			return ErrnoNotsup
		}
		if e, ok := hostErrnos[en]; ok {
			return e
		}
		return ErrnoIo
	}
	switch {
	case isEscape(err):
		return ErrnoNotcapable
	case errors.Is(err, os.ErrClosed):
		return ErrnoBadf
	case errors.Is(err, fs.ErrNotExist):
		return ErrnoNoent
	case errors.Is(err, fs.ErrExist):
		return ErrnoExist
	case errors.Is(err, fs.ErrPermission):
		return ErrnoPerm
	case errors.Is(err, fs.ErrInvalid):
		return ErrnoInval
	}
	return ErrnoIo
}

// isEscape recognises os.Root's refusal of a path that leaves the root. The
// os package does not export that error, so its text is matched; a test
// pins it (TestEscapeErrorText) so a Go release that changes it fails loudly.
func isEscape(err error) bool {
	return strings.Contains(err.Error(), "path escapes from parent")
}
