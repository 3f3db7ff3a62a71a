package modcheck

import (
	"github.com/subako/subako-runner/internal/wasmbin"
)

// Module names a guest may import from.
const (
	ModuleWASI       = "wasi_snapshot_preview1"
	ModuleSubakoHTTP = "subako_http"
)

// HostFunc is one function the host provides to guests.
type HostFunc struct {
	Module, Name string
	Type         wasmbin.FuncType
}

// sig is a compact signature: 'i' is i32, 'I' is i64.
type sig struct {
	name, params, results string
}

// wasiSigs is the whole wasi_snapshot_preview1 function set with the
// signatures of the preview 1 witx (every function returns its errno as an
// i32, except proc_exit). Checked against wazero's definitions by a test.
var wasiSigs = [...]sig{
	{"args_get", "ii", "i"},
	{"args_sizes_get", "ii", "i"},
	{"environ_get", "ii", "i"},
	{"environ_sizes_get", "ii", "i"},
	{"clock_res_get", "ii", "i"},
	{"clock_time_get", "iIi", "i"},
	{"fd_advise", "iIIi", "i"},
	{"fd_allocate", "iII", "i"},
	{"fd_close", "i", "i"},
	{"fd_datasync", "i", "i"},
	{"fd_fdstat_get", "ii", "i"},
	{"fd_fdstat_set_flags", "ii", "i"},
	{"fd_fdstat_set_rights", "iII", "i"},
	{"fd_filestat_get", "ii", "i"},
	{"fd_filestat_set_size", "iI", "i"},
	{"fd_filestat_set_times", "iIIi", "i"},
	{"fd_pread", "iiiIi", "i"},
	{"fd_prestat_get", "ii", "i"},
	{"fd_prestat_dir_name", "iii", "i"},
	{"fd_pwrite", "iiiIi", "i"},
	{"fd_read", "iiii", "i"},
	{"fd_readdir", "iiiIi", "i"},
	{"fd_renumber", "ii", "i"},
	{"fd_seek", "iIii", "i"},
	{"fd_sync", "i", "i"},
	{"fd_tell", "ii", "i"},
	{"fd_write", "iiii", "i"},
	{"path_create_directory", "iii", "i"},
	{"path_filestat_get", "iiiii", "i"},
	{"path_filestat_set_times", "iiiiIIi", "i"},
	{"path_link", "iiiiiii", "i"},
	{"path_open", "iiiiiIIii", "i"},
	{"path_readlink", "iiiiii", "i"},
	{"path_remove_directory", "iii", "i"},
	{"path_rename", "iiiiii", "i"},
	{"path_symlink", "iiiii", "i"},
	{"path_unlink_file", "iii", "i"},
	{"poll_oneoff", "iiii", "i"},
	{"proc_exit", "i", ""},
	{"proc_raise", "i", "i"},
	{"sched_yield", "", "i"},
	{"random_get", "ii", "i"},
	{"sock_accept", "iii", "i"},
	{"sock_recv", "iiiiii", "i"},
	{"sock_send", "iiiii", "i"},
	{"sock_shutdown", "ii", "i"},
}

// subakoHTTPSigs is the subako_http function table (host-contract §8).
var subakoHTTPSigs = [...]sig{
	{"request", "ii", "i"},
	{"read_response", "ii", "i"},
}

func (s sig) funcType() wasmbin.FuncType {
	return wasmbin.FuncType{Params: valTypes(s.params), Results: valTypes(s.results)}
}

func valTypes(s string) []wasmbin.ValType {
	if s == "" {
		return nil
	}
	ts := make([]wasmbin.ValType, len(s))
	for i := range s {
		ts[i] = wasmbin.I32
		if s[i] == 'I' {
			ts[i] = wasmbin.I64
		}
	}
	return ts
}

// sameType compares a decoded type with a compact signature without
// allocating: LookupImport runs for every import of every upload.
func (s sig) sameType(t wasmbin.FuncType) bool {
	return sameVals(s.params, t.Params) && sameVals(s.results, t.Results)
}

func sameVals(s string, ts []wasmbin.ValType) bool {
	if len(s) != len(ts) {
		return false
	}
	for i := range ts {
		want := wasmbin.I32
		if s[i] == 'I' {
			want = wasmbin.I64
		}
		if ts[i] != want {
			return false
		}
	}
	return true
}

func hostFuncs(module string, sigs []sig) []HostFunc {
	out := make([]HostFunc, len(sigs))
	for i, s := range sigs {
		out[i] = HostFunc{Module: module, Name: s.name, Type: s.funcType()}
	}
	return out
}

// WASIFunctions returns the 46 functions of wasi_snapshot_preview1 in witx
// order, as a fresh copy the caller may keep or change.
func WASIFunctions() []HostFunc { return hostFuncs(ModuleWASI, wasiSigs[:]) }

// SubakoHTTPFunctions returns the functions of subako_http, as a fresh copy.
func SubakoHTTPFunctions() []HostFunc { return hostFuncs(ModuleSubakoHTTP, subakoHTTPSigs[:]) }

func lookupSig(module, name string) (sig, bool, bool) {
	var table []sig
	switch module {
	case ModuleWASI:
		table = wasiSigs[:]
	case ModuleSubakoHTTP:
		table = subakoHTTPSigs[:]
	default:
		return sig{}, false, false
	}
	for _, s := range table {
		if s.name == name {
			return s, true, true
		}
	}
	return sig{}, true, false
}

// LookupImport returns the type of a function the host provides, and
// whether it provides one of that name.
func LookupImport(module, name string) (wasmbin.FuncType, bool) {
	s, _, ok := lookupSig(module, name)
	if !ok {
		return wasmbin.FuncType{}, false
	}
	return s.funcType(), true
}
