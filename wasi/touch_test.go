package wasi

import (
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"testing"

	"github.com/subako/subako-runner/fsmount"
)

// mountState is everything the host can see of the test mount: the
// directory's metadata (atime and ctime included) and every entry's.
func mountState(t testing.TB, dir string) []any {
	t.Helper()
	info, err := os.Lstat(dir)
	if err != nil {
		t.Fatal(err)
	}
	state := []any{info.Sys()}
	// Listed without changing its atime, so that a guest's listing shows.
	f, err := os.OpenFile(dir, os.O_RDONLY|noAtime, 0)
	if err != nil {
		t.Fatal(err)
	}
	entries, err := f.ReadDir(-1)
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		info, err := os.Lstat(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		state = append(state, e.Name(), info.Sys())
	}
	return state
}

// touchBench is a hostBench with guest memory laid out for path calls:
// "file" (it exists) at 100, "missing" at 110, "." at 120, "new" at 130,
// "../x" at 140; scratch at 1000 and 2000.
func touchBench(t *testing.T) (*hostBench, *fsmount.Set, string) {
	h := newHostBench(t)
	m := memOf(h.mod)
	for ptr, s := range map[uint32]string{100: "file", 110: "missing", 120: ".", 130: "new", 140: "../x"} {
		m.m.Write(ptr, []byte(s))
	}
	set := h.in.cfg.Mounts
	return h, set, set.Mounts()[0].Host
}

// Every host function that reaches the preopen's host directory, or a
// name in it, marks the mount touched, whether it succeeds or fails: the
// runtime recycles an untouched /volume/tmp without looking at it again,
// so a missed mark would hand the next call a directory an earlier call
// listed (its atime changed), wrote in, or set the times of. Those that
// only read the descriptor table (prestat, fdstat, renumber, close, a
// set_times that sets nothing, a path the guest's memory does not hold)
// reach nothing and leave the mount untouched.
func TestMountUseIsRecorded(t *testing.T) {
	const bad = 0xfffffff0
	times := uint64(fstAtimNow | fstMtimNow)
	tests := []struct {
		fn      string
		args    []uint64
		touches bool
	}{
		{"fd_readdir", []uint64{3, 1000, 256, 0, 2000}, true},
		{"fd_filestat_get", []uint64{3, 2000}, true},
		{"fd_filestat_set_times", []uint64{3, 0, 0, times}, true},
		{"path_open", []uint64{3, 0, 120, 1, uint64(oflagDirectory), dirRights, dirRights | fileRights, 0, 2000}, true},
		{"path_open", []uint64{3, 0, 110, 7, 0, rightFdRead, 0, 0, 2000}, true},
		{"path_open", []uint64{3, 0, 130, 3, uint64(oflagCreat), rightFdRead | rightFdWrite, 0, 0, 2000}, true},
		{"path_create_directory", []uint64{3, 130, 3}, true},
		{"path_filestat_get", []uint64{3, 0, 110, 7, 2000}, true},
		{"path_filestat_get", []uint64{3, 1, 120, 1, 2000}, true},
		{"path_filestat_set_times", []uint64{3, 0, 110, 7, 0, 0, times}, true},
		{"path_filestat_set_times", []uint64{3, 0, 100, 4, 0, 0, 0}, true},
		{"path_link", []uint64{3, 0, 110, 7, 3, 130, 3}, true},
		{"path_link", []uint64{3, 0, 100, 4, 3, 130, 3}, true},
		{"path_readlink", []uint64{3, 110, 7, 1000, 100, 2000}, true},
		{"path_remove_directory", []uint64{3, 110, 7}, true},
		{"path_unlink_file", []uint64{3, 110, 7}, true},
		{"path_rename", []uint64{3, 110, 7, 3, 130, 3}, true},
		{"path_symlink", []uint64{140, 4, 3, 130, 3}, true},
		{"path_symlink", []uint64{100, 4, 3, 130, 3}, true},

		{"fd_prestat_get", []uint64{3, 2000}, false},
		{"fd_prestat_dir_name", []uint64{3, 1000, 11}, false},
		{"fd_fdstat_get", []uint64{3, 2000}, false},
		{"fd_fdstat_set_flags", []uint64{3, 0}, false},
		{"fd_fdstat_set_rights", []uint64{3, dirRights, dirRights | fileRights}, false},
		{"fd_filestat_set_times", []uint64{3, 0, 0, 0}, false},
		{"fd_renumber", []uint64{3, 9}, false},
		{"fd_close", []uint64{3}, false},
		{"path_open", []uint64{3, 0, bad, 4, 0, rightFdRead, 0, 0, 2000}, false},
	}
	for _, tt := range tests {
		h, set, dir := touchBench(t)
		before := mountState(t, dir)
		h.call(h.ctx, fnByName(tt.fn), tt.args...)
		if got := set.Touched(fsmount.GuestTmp); got != tt.touches {
			t.Errorf("%s%v: touched %v, want %v", tt.fn, tt.args, got, tt.touches)
		}
		if !tt.touches && !reflect.DeepEqual(mountState(t, dir), before) {
			t.Errorf("%s%v changed the mount without touching it", tt.fn, tt.args)
		}
	}
}

// Whatever a host function is called with, a mount the Set saw untouched
// is exactly as it was: nothing reached it behind the Set's back.
func TestUntouchedMountIsUnchanged(t *testing.T) {
	patterns := [][]uint64{
		{3, 0, 100, 4, 3, 130, 3, 0, 2000},
		{3, 1, 120, 1, uint64(oflagDirectory), dirRights, dirRights | fileRights, 0, 2000},
		{100, 4, 3, 130, 3, 0, 0, 0, 0},
		{3, 1000, 256, 0, 2000, 0, 0, 0, 0},
		{3, 0, 0, uint64(fstAtimNow | fstMtimNow), 0, 0, 0, 0, 0},
	}
	for _, ent := range table() {
		if ent.fn == nil {
			continue // proc_exit
		}
		for _, p := range patterns {
			h, set, dir := touchBench(t)
			before := mountState(t, dir)
			h.call(h.ctx, ent.fn, p[:len(ent.params)]...)
			if !set.Touched(fsmount.GuestTmp) && !reflect.DeepEqual(mountState(t, dir), before) {
				t.Errorf("%s%v changed the mount without touching it", ent.name, p[:len(ent.params)])
			}
		}
	}
	if !slices.ContainsFunc(table(), func(e entry) bool { return e.name == "path_open" }) {
		t.Fatal("the table lists no path_open: the test proves nothing")
	}
}
