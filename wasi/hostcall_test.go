package wasi

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/subako/subako-runner/fsmount"
	"github.com/subako/subako-runner/internal/abi"
	"github.com/subako/subako-runner/limits"
	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/sys"
)

// memoryOnly is a module with one exported page of memory and nothing else:
// the host functions are called directly against it.
var memoryOnly = []byte{
	0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00,
	0x05, 0x03, 0x01, 0x00, 0x01, // memory: min 1 page
	0x07, 0x0a, 0x01, 0x06, 'm', 'e', 'm', 'o', 'r', 'y', 0x02, 0x00, // export "memory"
}

type hostBench struct {
	t   testing.TB
	ctx context.Context
	r   wazero.Runtime
	mod api.Module
	in  *Instance

	lastExit uint32 // exit code of the last call that ended the instance
}

func newHostBench(t testing.TB) *hostBench {
	t.Helper()
	ctx := context.Background()
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "file"), []byte("content"), 0o644)
	os.Symlink("file", filepath.Join(dir, "link"))
	set, err := fsmount.Open([]fsmount.Mount{{Guest: "/volume/tmp", Host: dir}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { set.Close() })
	h := &hostBench{t: t, ctx: ctx, r: wazero.NewRuntime(ctx)}
	t.Cleanup(func() { h.r.Close(ctx) })
	h.in = NewInstance(Config{Stdin: NewStdin(), Mounts: set, Budget: limits.NewCallBudget(limits.Limits{WriteBudget: 1 << 20})})
	t.Cleanup(func() { h.in.Close() })
	h.fresh()
	return h
}

// fresh instantiates the memory module again (after an exit closed it).
func (h *hostBench) fresh() {
	if h.mod != nil {
		h.mod.Close(h.ctx)
	}
	m, err := h.r.Instantiate(h.ctx, memoryOnly)
	if err != nil {
		h.t.Fatal(err)
	}
	h.mod = m
}

// call runs one host function; a panic other than a *sys.ExitError fails.
func (h *hostBench) call(ctx context.Context, fn hostFunc, args ...uint64) (errno errnum, exited bool) {
	defer func() {
		if r := recover(); r != nil {
			var ee *sys.ExitError
			if err, ok := r.(error); ok && errors.As(err, &ee) {
				exited = true
				h.lastExit = ee.ExitCode()
				h.fresh()
				return
			}
			h.t.Fatalf("host function panicked: %v", r)
		}
	}()
	stack := make([]uint64, max(len(args), 1))
	copy(stack, args)
	return fn(ctx, h.in, h.mod, stack), false
}

// entry is one function of the table in witx order, with its
// implementation (nil for proc_exit).
type entry struct {
	name   string
	params []api.ValueType
	fn     hostFunc
}

func table() []entry {
	fns := impls()
	var out []entry
	for f := range abi.Functions(moduleName) {
		out = append(out, entry{f.Name, f.Params(), fns[f.Name]})
	}
	return out
}

func fnByName(name string) hostFunc {
	for _, e := range table() {
		if e.name == name {
			return e.fn
		}
	}
	panic(name)
}

func TestOutOfRangePointersAreEFAULT(t *testing.T) {
	h := newHostBench(t)
	m := memOf(h.mod)
	const bad = 0xfffffff0
	end := uint64(m.m.Size())
	// Valid scratch: a path "file" at 100, an iovec at 200 whose buffer is
	// out of range, and an open file descriptor for the fd_* calls.
	m.m.Write(100, []byte("file"))
	m.putU32(200, bad)
	m.putU32(204, 16)
	errno, _ := h.call(h.ctx, pathOpen, 3, 1, 100, 4, 0, rightFdRead|rightFdWrite|rightFdSeek|rightFdTell, 0, 0, 300)
	if errno != errnoSuccess {
		t.Fatalf("path_open: %d", errno)
	}
	file, _ := m.u32(300)
	f := uint64(file)
	tests := []struct {
		name string
		args []uint64
	}{
		{"args_get", []uint64{bad, bad}},
		{"args_sizes_get", []uint64{bad, 0}},
		{"args_sizes_get", []uint64{0, end - 2}},
		{"environ_get", []uint64{bad, 0}},
		{"environ_sizes_get", []uint64{0, bad}},
		{"clock_res_get", []uint64{0, bad}},
		{"clock_time_get", []uint64{1, 0, end - 4}},
		{"random_get", []uint64{end - 8, 16}},
		{"fd_fdstat_get", []uint64{1, bad}},
		{"fd_filestat_get", []uint64{1, end - 10}},
		{"fd_prestat_get", []uint64{3, bad}},
		{"fd_prestat_dir_name", []uint64{3, bad, 100}},
		{"fd_read", []uint64{0, bad, 1, 0}},
		{"fd_read", []uint64{f, 200, 1, 0}},
		{"fd_write", []uint64{1, 200, 1, 0}},
		{"fd_write", []uint64{1, end - 8, 2, 0}},
		{"fd_write", []uint64{f, 0, 0, bad}},
		{"fd_pread", []uint64{f, 200, 1, 0, 0}},
		{"fd_pwrite", []uint64{f, 200, 1, 0, 0}},
		{"fd_seek", []uint64{f, 0, 0, bad}},
		{"fd_tell", []uint64{f, bad}},
		{"fd_readdir", []uint64{3, bad, 100, 0, 0}},
		{"fd_readdir", []uint64{3, 0, 100, 0, bad}},
		{"path_open", []uint64{3, 0, bad, 5, 0, 0, 0, 0, 0}},
		{"path_open", []uint64{3, 0, 100, 4, 0, 0, 0, 0, bad}},
		{"path_create_directory", []uint64{3, bad, 5}},
		{"path_filestat_get", []uint64{3, 0, 100, 4, bad}},
		{"path_filestat_set_times", []uint64{3, 0, bad, 4, 0, 0, 0}},
		{"path_link", []uint64{3, 0, bad, 4, 3, 100, 4}},
		{"path_readlink", []uint64{3, 100, 4, bad, 10, 0}},
		{"path_remove_directory", []uint64{3, bad, 4}},
		{"path_rename", []uint64{3, 100, 4, 3, bad, 4}},
		{"path_symlink", []uint64{bad, 4, 3, 100, 4}},
		{"path_unlink_file", []uint64{3, 100, bad}},
		{"poll_oneoff", []uint64{bad, 0, 1, 0}},
		{"poll_oneoff", []uint64{end - sizeSubscription, 0, 2, 0}},
	}
	for _, tt := range tests {
		errno, exited := h.call(h.ctx, fnByName(tt.name), tt.args...)
		if exited || errno != errnoFault {
			t.Errorf("%s%v = %d (exited %v), want EFAULT", tt.name, tt.args, errno, exited)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(h.in.cfg.Mounts.Mounts()[0].Host, "file")); string(b) != "content" {
		t.Errorf("a faulting call changed the file: %q", b)
	}
}

// FuzzHostCalls calls any host function with any arguments: the host must
// answer an errno (or end the instance), never panic.
func FuzzHostCalls(f *testing.F) {
	f.Add(uint8(0), uint64(0), uint64(0), uint64(0), uint64(0), uint64(0), uint64(0), uint64(0), uint64(0), uint64(0))
	f.Add(uint8(31), uint64(3), uint64(1), uint64(100), uint64(4), uint64(1), uint64(0xffff), uint64(0), uint64(0), uint64(300))
	f.Add(uint8(26), uint64(1), uint64(0xfff8), uint64(1), uint64(0), uint64(0), uint64(0), uint64(0), uint64(0), uint64(0))
	f.Add(uint8(37), uint64(0), uint64(1000), uint64(3), uint64(2000), uint64(0), uint64(0), uint64(0), uint64(0), uint64(0))
	f.Add(uint8(20), uint64(3), uint64(0), uint64(65536), uint64(0), uint64(65532), uint64(0), uint64(0), uint64(0), uint64(0))
	entries := table()
	f.Fuzz(func(t *testing.T, which uint8, a, b, c, d, e, g, h2, i, j uint64) {
		h := newHostBench(t)
		memOf(h.mod).m.Write(100, []byte("file"))
		ent := entries[int(which)%len(entries)]
		if ent.fn == nil {
			return // proc_exit
		}
		ctx, cancel := context.WithCancel(h.ctx)
		cancel() // anything that would wait ends the instance at once
		args := []uint64{a, b, c, d, e, g, h2, i, j}
		for k, p := range ent.params {
			if p == api.ValueTypeI32 {
				args[k] = uint64(uint32(args[k]))
			}
		}
		errno, _ := h.call(ctx, ent.fn, args[:len(ent.params)]...)
		if errno > errnoNotcapable {
			t.Fatalf("%s returned errno %d", ent.name, errno)
		}
	})
}
