package modcheck

import "testing"

func TestLookupImport(t *testing.T) {
	tests := []struct {
		module, name string
		want         string
		ok           bool
	}{
		{"subako_http", "request", "(i32, i32) -> i32", true},
		{"subako_http", "read_response", "(i32, i32) -> i32", true},
		{"wasi_snapshot_preview1", "proc_exit", "(i32) -> ()", true},
		{"wasi_snapshot_preview1", "sched_yield", "() -> i32", true},
		{"wasi_snapshot_preview1", "path_open", "(i32, i32, i32, i32, i32, i64, i64, i32, i32) -> i32", true},
		{"wasi_snapshot_preview1", "request", "", false},
		{"subako_http", "fd_write", "", false},
		{"wasi_unstable", "fd_write", "", false},
		{"env", "memory", "", false},
		// The metering module is the host's, injected after the checks.
		{"subako_fuel", "refuel", "", false},
	}
	for _, tt := range tests {
		f, _, ok := lookupImport(tt.module, tt.name)
		if ok != tt.ok || (ok && funcType(f).String() != tt.want) {
			t.Errorf("lookupImport(%q, %q) = %s, %v; want %s, %v", tt.module, tt.name, funcType(f), ok, tt.want, tt.ok)
		}
	}
}
