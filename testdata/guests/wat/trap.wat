;; trap.wat: the smallest ABI 1 module that traps. It reads once from stdin
;; (so the host has delivered the first request, server/discover or
;; tools/call), writes one line to stderr (so the crash report's stderr tail
;; is not empty) and executes `unreachable`: a real WebAssembly trap.
;; Expected host result: `trap` for a call, `discovery_failed` (trap) during
;; discovery. Build: make -C testdata/guests fixtures
(module
  (import "wasi_snapshot_preview1" "fd_read"
    (func $fd_read (param i32 i32 i32 i32) (result i32)))
  (import "wasi_snapshot_preview1" "fd_write"
    (func $fd_write (param i32 i32 i32 i32) (result i32)))
  (memory (export "memory") 1)
  (data (i32.const 64) "trap.wat: read a request, trapping\n")
  (func (export "_start")
    ;; iovec at 0 -> 4096 bytes at 1024; count out at 16
    (i32.store (i32.const 0) (i32.const 1024))
    (i32.store (i32.const 4) (i32.const 4096))
    (drop (call $fd_read (i32.const 0) (i32.const 0) (i32.const 1) (i32.const 16)))
    ;; iovec at 32 -> the message at 64
    (i32.store (i32.const 32) (i32.const 64))
    (i32.store (i32.const 36) (i32.const 35))
    (drop (call $fd_write (i32.const 2) (i32.const 32) (i32.const 1) (i32.const 16)))
    unreachable))
