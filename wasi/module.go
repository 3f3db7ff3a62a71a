package wasi

import (
	"context"
	"errors"
	"fmt"
	"iter"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/sys"
)

// ModuleName is the import module name of WASI preview 1.
const ModuleName = "wasi_snapshot_preview1"

// ExitCodeAborted is the exit code an instance ends with when the host
// stopped it for a reason of its own: a Stdout or Stderr writer returned an
// error, or the Instance was closed while the guest waited. The host knows
// (and records) the reason; the guest never sees this code.
const ExitCodeAborted uint32 = 0xfffffffe

// ErrNoInstance is the panic value (surfacing as the error of
// InstantiateModule or Call) when a WASI function runs without an Instance
// attached to the context.
var ErrNoInstance = errors.New("wasi: no Instance in the context; attach one with wasi.WithInstance")

// Function is the name and signature of one preview-1 import.
type Function struct {
	Name    string
	Params  []api.ValueType
	Results []api.ValueType
}

type hostFunc func(ctx context.Context, in *Instance, mod api.Module, p []uint64) Errno

type entry struct {
	name   string
	params []api.ValueType
	fn     hostFunc
}

const (
	i32 = api.ValueTypeI32
	i64 = api.ValueTypeI64
)

func sig(ts ...api.ValueType) []api.ValueType { return ts }

// table lists every function of wasi_snapshot_preview1. All return an errno
// (i32) except proc_exit, which never returns.
func table() []entry {
	return []entry{
		{"args_get", sig(i32, i32), argsGet},
		{"args_sizes_get", sig(i32, i32), argsSizesGet},
		{"environ_get", sig(i32, i32), environGet},
		{"environ_sizes_get", sig(i32, i32), environSizesGet},
		{"clock_res_get", sig(i32, i32), clockResGet},
		{"clock_time_get", sig(i32, i64, i32), clockTimeGet},
		{"fd_advise", sig(i32, i64, i64, i32), fdAdvise},
		{"fd_allocate", sig(i32, i64, i64), fdAllocate},
		{"fd_close", sig(i32), fdClose},
		{"fd_datasync", sig(i32), fdDatasync},
		{"fd_fdstat_get", sig(i32, i32), fdFdstatGet},
		{"fd_fdstat_set_flags", sig(i32, i32), fdFdstatSetFlags},
		{"fd_fdstat_set_rights", sig(i32, i64, i64), fdFdstatSetRights},
		{"fd_filestat_get", sig(i32, i32), fdFilestatGet},
		{"fd_filestat_set_size", sig(i32, i64), fdFilestatSetSize},
		{"fd_filestat_set_times", sig(i32, i64, i64, i32), fdFilestatSetTimes},
		{"fd_pread", sig(i32, i32, i32, i64, i32), fdPread},
		{"fd_prestat_get", sig(i32, i32), fdPrestatGet},
		{"fd_prestat_dir_name", sig(i32, i32, i32), fdPrestatDirName},
		{"fd_pwrite", sig(i32, i32, i32, i64, i32), fdPwrite},
		{"fd_read", sig(i32, i32, i32, i32), fdRead},
		{"fd_readdir", sig(i32, i32, i32, i64, i32), fdReaddir},
		{"fd_renumber", sig(i32, i32), fdRenumber},
		{"fd_seek", sig(i32, i64, i32, i32), fdSeek},
		{"fd_sync", sig(i32), fdSync},
		{"fd_tell", sig(i32, i32), fdTell},
		{"fd_write", sig(i32, i32, i32, i32), fdWrite},
		{"path_create_directory", sig(i32, i32, i32), pathCreateDirectory},
		{"path_filestat_get", sig(i32, i32, i32, i32, i32), pathFilestatGet},
		{"path_filestat_set_times", sig(i32, i32, i32, i32, i64, i64, i32), pathFilestatSetTimes},
		{"path_link", sig(i32, i32, i32, i32, i32, i32, i32), pathLink},
		{"path_open", sig(i32, i32, i32, i32, i32, i64, i64, i32, i32), pathOpen},
		{"path_readlink", sig(i32, i32, i32, i32, i32, i32), pathReadlink},
		{"path_remove_directory", sig(i32, i32, i32), pathRemoveDirectory},
		{"path_rename", sig(i32, i32, i32, i32, i32, i32), pathRename},
		{"path_symlink", sig(i32, i32, i32, i32, i32), pathSymlink},
		{"path_unlink_file", sig(i32, i32, i32), pathUnlinkFile},
		{"poll_oneoff", sig(i32, i32, i32, i32), pollOneoff},
		{"proc_exit", sig(i32), nil}, // special: no result
		{"proc_raise", sig(i32), procRaise},
		{"sched_yield", sig(), schedYield},
		{"random_get", sig(i32, i32), randomGet},
		{"sock_accept", sig(i32, i32, i32), sockAccept},
		{"sock_recv", sig(i32, i32, i32, i32, i32, i32), sockRecv},
		{"sock_send", sig(i32, i32, i32, i32, i32), sockSend},
		{"sock_shutdown", sig(i32, i32), sockShutdown},
	}
}

// Functions returns every function of wasi_snapshot_preview1 with its
// signature, for import checks before instantiation.
func Functions() []Function {
	var fs []Function
	for _, e := range table() {
		f := Function{Name: e.name, Params: e.params, Results: []api.ValueType{i32}}
		if e.name == "proc_exit" {
			f.Results = nil
		}
		fs = append(fs, f)
	}
	return fs
}

// Instantiate defines the host module "wasi_snapshot_preview1" in r. Call it
// once per runtime, before instantiating guests.
func Instantiate(ctx context.Context, r wazero.Runtime) (api.Closer, error) {
	b := r.NewHostModuleBuilder(ModuleName)
	for _, e := range table() {
		e := e
		if e.name == "proc_exit" {
			b.NewFunctionBuilder().WithGoModuleFunction(api.GoModuleFunc(procExit), e.params, nil).Export(e.name)
			continue
		}
		fn := func(ctx context.Context, mod api.Module, stack []uint64) {
			in := instanceFrom(ctx)
			stack[0] = uint64(e.fn(ctx, in, mod, stack))
		}
		b.NewFunctionBuilder().WithGoModuleFunction(api.GoModuleFunc(fn), e.params, []api.ValueType{i32}).Export(e.name)
	}
	m, err := b.Instantiate(ctx)
	if err != nil {
		return nil, fmt.Errorf("wasi: defining %s: %w", ModuleName, err)
	}
	return m, nil
}

type instanceKey struct{}

// WithInstance attaches in to ctx; pass the result to InstantiateModule and
// to every Function.Call of that module.
func WithInstance(ctx context.Context, in *Instance) context.Context {
	return context.WithValue(ctx, instanceKey{}, in)
}

func instanceFrom(ctx context.Context) *Instance {
	in, _ := ctx.Value(instanceKey{}).(*Instance)
	if in == nil {
		panic(ErrNoInstance)
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
	instanceFrom(ctx) // a missing instance is a host bug worth reporting
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

func (m memory) u32(ptr uint32) (uint32, bool) {
	b, ok := m.slice(ptr, 4)
	if !ok {
		return 0, false
	}
	return uint32(b[0]) | uint32(b[1])<<8 | uint32(b[2])<<16 | uint32(b[3])<<24, true
}

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
func (m memory) iovecs(ptr, n uint32) (iovecList, uint64, Errno) {
	if n > maxIovecs {
		return iovecList{}, 0, ErrnoInval
	}
	arr, ok := m.slice(ptr, n*sizeIovec)
	if !ok {
		return iovecList{}, 0, ErrnoFault
	}
	var total uint64
	for i := uint32(0); i < n; i++ {
		p, l := rd32(arr[i*8:]), rd32(arr[i*8+4:])
		if !m.ok(p, l) {
			return iovecList{}, 0, ErrnoFault
		}
		total += uint64(l)
	}
	return iovecList{m, arr}, total, ErrnoSuccess
}

// str reads a guest string (not NUL-terminated).
func (m memory) str(ptr, n uint32) (string, bool) {
	b, ok := m.slice(ptr, n)
	if !ok {
		return "", false
	}
	return string(b), true
}
