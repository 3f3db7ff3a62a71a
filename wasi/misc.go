package wasi

import (
	"context"
	"crypto/rand"
	"runtime"
	"time"

	"github.com/tetratelabs/wazero/api"
)

// writeStrings implements args_get and environ_get: pointers to
// NUL-terminated copies of list, laid out from bufPtr.
func writeStrings(m memory, list []string, ptrs, bufPtr uint32) errnum {
	var size uint64
	for _, s := range list {
		size += uint64(len(s)) + 1
	}
	if size > uint64(^uint32(0)) || !m.ok(bufPtr, uint32(size)) || uint64(len(list))*4 > uint64(^uint32(0)) || !m.ok(ptrs, uint32(len(list))*4) {
		return errnoFault
	}
	buf, _ := m.slice(bufPtr, uint32(size))
	off := uint32(0)
	for i, s := range list {
		m.putU32(ptrs+uint32(i)*4, bufPtr+off)
		copy(buf[off:], s)
		buf[off+uint32(len(s))] = 0
		off += uint32(len(s)) + 1
	}
	return errnoSuccess
}

func writeSizes(m memory, list []string, countPtr, sizePtr uint32) errnum {
	var size uint64
	for _, s := range list {
		size += uint64(len(s)) + 1
	}
	if !m.ok(countPtr, 4) || !m.ok(sizePtr, 4) {
		return errnoFault
	}
	m.putU32(countPtr, uint32(len(list)))
	m.putU32(sizePtr, uint32(size))
	return errnoSuccess
}

func argsGet(_ context.Context, in *Instance, mod api.Module, p []uint64) errnum {
	return writeStrings(memOf(mod), in.cfg.Args, uint32(p[0]), uint32(p[1]))
}

func argsSizesGet(_ context.Context, in *Instance, mod api.Module, p []uint64) errnum {
	return writeSizes(memOf(mod), in.cfg.Args, uint32(p[0]), uint32(p[1]))
}

func environGet(_ context.Context, in *Instance, mod api.Module, p []uint64) errnum {
	return writeStrings(memOf(mod), in.cfg.Env, uint32(p[0]), uint32(p[1]))
}

func environSizesGet(_ context.Context, in *Instance, mod api.Module, p []uint64) errnum {
	return writeSizes(memOf(mod), in.cfg.Env, uint32(p[0]), uint32(p[1]))
}

// now reads clock id; ok is false for an unknown clock.
func (in *Instance) now(id uint32) (uint64, bool) {
	switch id {
	case clockRealtime:
		return uint64(time.Now().UnixNano()), true
	case clockMonotonic, clockProcess, clockThread:
		// time.Since uses the monotonic clock reading of start.
		return uint64(time.Since(in.start)), true
	}
	return 0, false
}

func clockResGet(_ context.Context, in *Instance, mod api.Module, p []uint64) errnum {
	if _, ok := in.now(uint32(p[0])); !ok {
		return errnoInval
	}
	if !memOf(mod).putU64(uint32(p[1]), 1) {
		return errnoFault
	}
	return errnoSuccess
}

func clockTimeGet(_ context.Context, in *Instance, mod api.Module, p []uint64) errnum {
	t, ok := in.now(uint32(p[0]))
	if !ok {
		return errnoInval
	}
	if !memOf(mod).putU64(uint32(p[2]), t) {
		return errnoFault
	}
	return errnoSuccess
}

// randomGet fills guest memory in place, in chunks of ioChunk with the
// context checked after each: up to the whole memory costs CPU, not
// host memory.
func randomGet(ctx context.Context, _ *Instance, mod api.Module, p []uint64) errnum {
	b, ok := memOf(mod).slice(uint32(p[0]), uint32(p[1]))
	if !ok {
		return errnoFault
	}
	for len(b) > 0 {
		c := min(len(b), ioChunk)
		if _, err := rand.Read(b[:c]); err != nil {
			return errnoIo
		}
		b = b[c:]
		checkContext(ctx, mod)
	}
	return errnoSuccess
}

// procRaise: signals do not exist for a guest; the witx marks it deprecated.
func procRaise(context.Context, *Instance, api.Module, []uint64) errnum { return errnoNosys }

func schedYield(context.Context, *Instance, api.Module, []uint64) errnum {
	runtime.Gosched()
	return errnoSuccess
}

// No socket is ever passed to a guest: every fd is either unknown (EBADF)
// or not a socket (ENOTSOCK).
func sockErrno(in *Instance, fd uint32) errnum {
	if _, errno := in.get(fd); errno != errnoSuccess {
		return errno
	}
	return errnoNotsock
}

func sockAccept(_ context.Context, in *Instance, _ api.Module, p []uint64) errnum {
	return sockErrno(in, uint32(p[0]))
}
func sockRecv(_ context.Context, in *Instance, _ api.Module, p []uint64) errnum {
	return sockErrno(in, uint32(p[0]))
}
func sockSend(_ context.Context, in *Instance, _ api.Module, p []uint64) errnum {
	return sockErrno(in, uint32(p[0]))
}
func sockShutdown(_ context.Context, in *Instance, _ api.Module, p []uint64) errnum {
	return sockErrno(in, uint32(p[0]))
}
