package wasi

import (
	"context"
	"errors"
	"fmt"
	"iter"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/sys"

	"github.com/subako/subako-runner/internal/abi"
)

// moduleName is the import module name of WASI preview 1.
const moduleName = abi.ModuleWASI

// exitCodeAborted is the exit code an instance ends with when the host
// stopped it for a reason of its own: a Stdout or Stderr writer returned an
// error, or the Instance was closed while the guest waited. The host knows
// (and records) the reason; the guest never sees this code.
const exitCodeAborted uint32 = 0xfffffffe

type hostFunc func(ctx context.Context, in *Instance, mod api.Module, p []uint64) errnum

// impls maps each function of internal/abi's wasi_snapshot_preview1 table
// (where the signatures live) to its implementation. proc_exit, which
// returns nothing, is defined apart.
func impls() map[string]hostFunc {
	return map[string]hostFunc{
		"args_get":                argsGet,
		"args_sizes_get":          argsSizesGet,
		"environ_get":             environGet,
		"environ_sizes_get":       environSizesGet,
		"clock_res_get":           clockResGet,
		"clock_time_get":          clockTimeGet,
		"fd_advise":               fdAdvise,
		"fd_allocate":             fdAllocate,
		"fd_close":                fdClose,
		"fd_datasync":             fdDatasync,
		"fd_fdstat_get":           fdFdstatGet,
		"fd_fdstat_set_flags":     fdFdstatSetFlags,
		"fd_fdstat_set_rights":    fdFdstatSetRights,
		"fd_filestat_get":         fdFilestatGet,
		"fd_filestat_set_size":    fdFilestatSetSize,
		"fd_filestat_set_times":   fdFilestatSetTimes,
		"fd_pread":                fdPread,
		"fd_prestat_get":          fdPrestatGet,
		"fd_prestat_dir_name":     fdPrestatDirName,
		"fd_pwrite":               fdPwrite,
		"fd_read":                 fdRead,
		"fd_readdir":              deadlined(fdReaddir),
		"fd_renumber":             fdRenumber,
		"fd_seek":                 fdSeek,
		"fd_sync":                 fdSync,
		"fd_tell":                 fdTell,
		"fd_write":                fdWrite,
		"path_create_directory":   deadlined(pathCreateDirectory),
		"path_filestat_get":       deadlined(pathFilestatGet),
		"path_filestat_set_times": deadlined(pathFilestatSetTimes),
		"path_link":               deadlined(pathLink),
		"path_open":               deadlined(pathOpen),
		"path_readlink":           deadlined(pathReadlink),
		"path_remove_directory":   deadlined(pathRemoveDirectory),
		"path_rename":             deadlined(pathRename),
		"path_symlink":            deadlined(pathSymlink),
		"path_unlink_file":        deadlined(pathUnlinkFile),
		"poll_oneoff":             deadlined(pollOneoff),
		"proc_exit":               nil,
		"proc_raise":              procRaise,
		"sched_yield":             schedYield,
		"random_get":              randomGet,
		"sock_accept":             sockAccept,
		"sock_recv":               sockRecv,
		"sock_send":               sockSend,
		"sock_shutdown":           sockShutdown,
	}
}

// Instantiate defines the host module "wasi_snapshot_preview1" in r. Call it
// once per runtime, before instantiating guests.
func Instantiate(ctx context.Context, r wazero.Runtime) (api.Closer, error) {
	b := r.NewHostModuleBuilder(moduleName)
	fns := impls()
	for f := range abi.Functions(moduleName) {
		name := f.Name
		if name == "proc_exit" {
			b.NewFunctionBuilder().WithGoModuleFunction(api.GoModuleFunc(procExit), f.Params(), f.Results()).Export(name)
			continue
		}
		impl := fns[name]
		if impl == nil {
			return nil, fmt.Errorf("wasi: %s has no implementation", name)
		}
		fn := func(ctx context.Context, mod api.Module, stack []uint64) {
			stack[0] = uint64(impl(ctx, instanceFrom(ctx, name), mod, stack))
		}
		b.NewFunctionBuilder().WithGoModuleFunction(api.GoModuleFunc(fn), f.Params(), f.Results()).Export(name)
	}
	m, err := b.Instantiate(ctx)
	if err != nil {
		return nil, fmt.Errorf("wasi: defining %s: %w", moduleName, err)
	}
	return m, nil
}

// deadlined marks a host function whose work grows with what the guest
// passes (a path's resolution, a directory's listing, a poll's
// subscriptions). Called once the call's deadline has passed or the call
// was cancelled, it ends the instance with the context's exit code before
// doing anything, as the long host calls do between their chunks; and
// when its work stopped because the context ended meanwhile (errnoIntr
// from the resolver, the link lock or walkLinks), it ends the instance
// too. The call then ends as the timeout or cancellation it is, and the
// guest never sees an EINTR it did not cause.
func deadlined(fn hostFunc) hostFunc {
	return func(ctx context.Context, in *Instance, mod api.Module, p []uint64) errnum {
		checkContext(ctx, mod)
		errno := fn(ctx, in, mod, p)
		if errno == errnoIntr {
			checkContext(ctx, mod)
		}
		return errno
	}
}

type instanceKey struct{}

// WithInstance attaches in to ctx; pass the result to InstantiateModule and
// to every Function.Call of that module.
func WithInstance(ctx context.Context, in *Instance) context.Context {
	return context.WithValue(ctx, instanceKey{}, in)
}

// instanceFrom returns the Instance attached to ctx; without one, function
// ends by the rule of abi.ErrNoState.
func instanceFrom(ctx context.Context, function string) *Instance {
	in, _ := ctx.Value(instanceKey{}).(*Instance)
	if in == nil {
		abi.NoState(moduleName, function, "wasi.WithInstance")
	}
	return in
}

// exit ends the instance with code, as proc_exit does: other callers see the
// exit code, and no guest code runs after this host function.
func exit(ctx context.Context, mod api.Module, code uint32) {
	_ = mod.CloseWithExitCode(ctx, code)
	panic(sys.NewExitError(code))
}

// exitForContext ends the instance because ctx is done.
func exitForContext(ctx context.Context, mod api.Module) {
	code := sys.ExitCodeContextCanceled
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		code = sys.ExitCodeDeadlineExceeded
	}
	exit(ctx, mod, code)
}

func procExit(ctx context.Context, mod api.Module, stack []uint64) {
	instanceFrom(ctx, "proc_exit") // a missing instance is a host bug worth reporting
	exit(ctx, mod, uint32(stack[0]))
}

// Memory helpers: every guest pointer goes through these, so an out-of-range
// pointer is EFAULT and never a host panic.

type memory struct{ m api.Memory }

func memOf(mod api.Module) memory { return memory{mod.Memory()} }

// slice returns the guest bytes [ptr, ptr+n) (a view, not a copy).
func (m memory) slice(ptr, n uint32) ([]byte, bool) {
	if m.m == nil {
		return nil, n == 0
	}
	if uint64(ptr)+uint64(n) > uint64(m.m.Size()) {
		return nil, false
	}
	return m.m.Read(ptr, n)
}

func (m memory) ok(ptr, n uint32) bool { _, ok := m.slice(ptr, n); return ok }

func (m memory) putU32(ptr, v uint32) bool {
	b, ok := m.slice(ptr, 4)
	if ok {
		le32(b, v)
	}
	return ok
}

func (m memory) putU64(ptr uint32, v uint64) bool {
	b, ok := m.slice(ptr, 8)
	if ok {
		le64(b, v)
	}
	return ok
}

func le16(b []byte, v uint16) { b[0], b[1] = byte(v), byte(v>>8) }
func le32(b []byte, v uint32) {
	b[0], b[1], b[2], b[3] = byte(v), byte(v>>8), byte(v>>16), byte(v>>24)
}
func le64(b []byte, v uint64) { le32(b, uint32(v)); le32(b[4:], uint32(v>>32)) }
func rd16(b []byte) uint16    { return uint16(b[0]) | uint16(b[1])<<8 }
func rd32(b []byte) uint32 {
	return uint32(b[0]) | uint32(b[1])<<8 | uint32(b[2])<<16 | uint32(b[3])<<24
}
func rd64(b []byte) uint64 { return uint64(rd32(b)) | uint64(rd32(b[4:]))<<32 }

// maxIovecs is the most iovecs one fd_read, fd_write, fd_pread or
// fd_pwrite takes, as POSIX's IOV_MAX (1024 on Linux and in wasi-libc);
// more is EINVAL, as readv(2) answers, before any is looked at. The host
// then walks at most 1024 records per call, whatever count the guest
// passes.
const maxIovecs = 1024

// iovecList is a validated iovec array in guest memory. Its buffers are
// read from guest memory as they are used, never gathered into a host
// slice: a call costs the host nothing per iovec.
type iovecList struct {
	m   memory
	arr []byte // the iovec records, a view of guest memory
}

// all yields each buffer as a view of guest memory (no copy).
func (l iovecList) all() iter.Seq[[]byte] {
	return func(yield func([]byte) bool) {
		for i := 0; i+sizeIovec <= len(l.arr); i += sizeIovec {
			b, ok := l.m.slice(rd32(l.arr[i:]), rd32(l.arr[i+4:]))
			if !ok || !yield(b) {
				return // iovecs checks every buffer first; !ok cannot happen
			}
		}
	}
}

// iovecs validates an iovec array: more than maxIovecs is EINVAL, any
// buffer out of range EFAULT, before anything is read or written.
func (m memory) iovecs(ptr, n uint32) (iovecList, uint64, errnum) {
	if n > maxIovecs {
		return iovecList{}, 0, errnoInval
	}
	arr, ok := m.slice(ptr, n*sizeIovec)
	if !ok {
		return iovecList{}, 0, errnoFault
	}
	var total uint64
	for i := uint32(0); i < n; i++ {
		p, l := rd32(arr[i*8:]), rd32(arr[i*8+4:])
		if !m.ok(p, l) {
			return iovecList{}, 0, errnoFault
		}
		total += uint64(l)
	}
	return iovecList{m, arr}, total, errnoSuccess
}

// str reads a guest string (not NUL-terminated).
func (m memory) str(ptr, n uint32) (string, bool) {
	b, ok := m.slice(ptr, n)
	if !ok {
		return "", false
	}
	return string(b), true
}
