;; import_signature: provided names imported with the wrong types.
(module
  (import "subako_http" "request" (func (param i32) (result i32)))
  (import "wasi_snapshot_preview1" "clock_time_get" (func (param i32 i32 i32) (result i32)))
  (memory (export "memory") 1)
  (func (export "_start")))
