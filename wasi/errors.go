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
var hostErrnos = map[syscall.Errno]errnum{
	syscall.E2BIG:        errno2big,
	syscall.EACCES:       errnoAcces,
	syscall.EAGAIN:       errnoAgain,
	syscall.EBADF:        errnoBadf,
	syscall.EBUSY:        errnoBusy,
	syscall.EDQUOT:       errnoDquot,
	syscall.EEXIST:       errnoExist,
	syscall.EFAULT:       errnoFault,
	syscall.EFBIG:        errnoFbig,
	syscall.EINTR:        errnoIntr,
	syscall.EINVAL:       errnoInval,
	syscall.EIO:          errnoIo,
	syscall.EISDIR:       errnoIsdir,
	syscall.ELOOP:        errnoLoop,
	syscall.EMFILE:       errnoMfile,
	syscall.EMLINK:       errnoMlink,
	syscall.ENAMETOOLONG: errnoNametoolong,
	syscall.ENFILE:       errnoNfile,
	syscall.ENOENT:       errnoNoent,
	syscall.ENOMEM:       errnoNomem,
	syscall.ENOSPC:       errnoNospc,
	syscall.ENOSYS:       errnoNosys,
	syscall.ENOTDIR:      errnoNotdir,
	syscall.ENOTEMPTY:    errnoNotempty,
	syscall.ENOTSUP:      errnoNotsup,
	syscall.ENXIO:        errnoNxio,
	syscall.EOVERFLOW:    errnoOverflow,
	syscall.EPERM:        errnoPerm,
	syscall.EPIPE:        errnoPipe,
	syscall.ERANGE:       errnoRange,
	syscall.EROFS:        errnoRofs,
	syscall.ESPIPE:       errnoSpipe,
	syscall.ETXTBSY:      errnoTxtbsy,
	syscall.EXDEV:        errnoXdev,
}

// errnoOf turns a host error into the errno the guest sees.
func errnoOf(err error) errnum {
	if err == nil {
		return errnoSuccess
	}
	var en syscall.Errno
	if errors.As(err, &en) {
		if en == syscall.EOPNOTSUPP {
			return errnoNotsup
		}
		if e, ok := hostErrnos[en]; ok {
			return e
		}
		return errnoIo
	}
	switch {
	case isEscape(err):
		return errnoNotcapable
	case errors.Is(err, os.ErrClosed):
		return errnoBadf
	case errors.Is(err, fs.ErrNotExist):
		return errnoNoent
	case errors.Is(err, fs.ErrExist):
		return errnoExist
	case errors.Is(err, fs.ErrPermission):
		return errnoPerm
	case errors.Is(err, fs.ErrInvalid):
		return errnoInval
	}
	return errnoIo
}

// isEscape recognises os.Root's refusal of a path that leaves the root. The
// os package does not export that error, so its text is matched; a test
// pins it (TestEscapeErrorText) so a Go release that changes it fails loudly.
func isEscape(err error) bool {
	return strings.Contains(err.Error(), "path escapes from parent")
}
