// Package abi is the one table of the host functions a guest links to: the
// 46 functions of wasi_snapshot_preview1, the two of subako_http, and the
// two of subako_fuel that metering injects. The host modules (wasi,
// hostmod/subakohttp, internal/fuel) define their exports from it, and the
// upload checks (internal/modcheck) accept imports against it, so what an
// upload is checked against and what it links to cannot drift apart; a test
// instantiates each host module and compares its exports with this table.
package abi

import "iter"

// Names of the host modules.
const (
	ModuleWASI       = "wasi_snapshot_preview1"
	ModuleSubakoHTTP = "subako_http"
	// ModuleFuel is injected by the metering rewriter; uploads may not
	// import from it.
	ModuleFuel = "subako_fuel"
)

// Value types, as the binary format encodes them (and as wazero's
// api.ValueType and wasmbin.ValType spell them).
const (
	I32 byte = 0x7f
	I64 byte = 0x7e
)

// Func is one host function. Its signature is kept compact ('i' is i32,
// 'I' is i64) so that comparing it with a decoded type allocates nothing.
type Func struct {
	Module, Name    string
	params, results string
}

// Params returns a fresh copy of the parameter types.
func (f Func) Params() []byte { return valTypes(f.params) }

// Results returns a fresh copy of the result types.
func (f Func) Results() []byte { return valTypes(f.results) }

// Matches reports whether params and results are f's signature.
func Matches[T ~byte](f Func, params, results []T) bool {
	return sameVals(f.params, params) && sameVals(f.results, results)
}

func valTypes(s string) []byte {
	if s == "" {
		return nil
	}
	ts := make([]byte, len(s))
	for i := range s {
		ts[i] = code(s[i])
	}
	return ts
}

func code(c byte) byte {
	if c == 'I' {
		return I64
	}
	return I32
}

func sameVals[T ~byte](s string, ts []T) bool {
	if len(s) != len(ts) {
		return false
	}
	for i := range ts {
		if byte(ts[i]) != code(s[i]) {
			return false
		}
	}
	return true
}

type sig struct{ name, params, results string }

// wasi is wasi_snapshot_preview1 in witx order, with the signatures of the
// preview 1 witx: every function returns its errno as an i32, except
// proc_exit. A test compares it with wazero's own definitions.
var wasi = [...]sig{
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

// subakoHTTP is docs/abi.md's subako_http: request(ptr, len) and
// read_response(ptr, len), each returning a length or a negative error.
var subakoHTTP = [...]sig{
	{"request", "ii", "i"},
	{"read_response", "ii", "i"},
}

// fuel is what the metering rewriter injects: refuel(counter) -> counter,
// and grow_table(table, size, delta) -> granted.
var fuel = [...]sig{
	{"refuel", "I", "I"},
	{"grow_table", "iii", "i"},
}

func table(module string) []sig {
	switch module {
	case ModuleWASI:
		return wasi[:]
	case ModuleSubakoHTTP:
		return subakoHTTP[:]
	case ModuleFuel:
		return fuel[:]
	}
	return nil
}

// Functions yields the functions of module in table order; none for a
// module the host does not define.
func Functions(module string) iter.Seq[Func] {
	return func(yield func(Func) bool) {
		for _, s := range table(module) {
			if !yield(Func{module, s.name, s.params, s.results}) {
				return
			}
		}
	}
}

// Lookup returns the function module.name. moduleKnown reports whether
// the host defines module at all, ok whether it has a function name.
func Lookup(module, name string) (f Func, moduleKnown, ok bool) {
	t := table(module)
	for _, s := range t {
		if s.name == name {
			return Func{module, s.name, s.params, s.results}, true, true
		}
	}
	return Func{}, t != nil, false
}

// Importable reports whether an upload may import from module: the two
// host modules of ABI 1, not the one metering injects.
func Importable(module string) bool {
	return module == ModuleWASI || module == ModuleSubakoHTTP
}
