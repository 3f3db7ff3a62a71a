;; unknown_import: an env import, the pre-snapshot wasi_unstable module, and
;; a name wasi_snapshot_preview1 does not provide.
(module
  (import "env" "foo" (func))
  (import "wasi_unstable" "fd_write" (func (param i32 i32 i32 i32) (result i32)))
  (import "wasi_snapshot_preview1" "sock_open" (func (param i32 i32 i32) (result i32)))
  (memory (export "memory") 1)
  (func (export "_start")))
