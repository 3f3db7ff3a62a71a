;; stdio_flood: the attack of overlapping iovecs. _start builds 1,024 iovecs
;; that all name the same 1 MiB of memory (1 GiB per fd_write for 1 MiB of
;; guest memory) and writes them to stderr in an endless loop. The host must
;; neither copy what they name nor run past the call's deadline.
(module
  (import "wasi_snapshot_preview1" "fd_write"
    (func $fd_write (param i32 i32 i32 i32) (result i32)))
  (memory (export "memory") 17) ;; 1 MiB of buffer, then the iovecs at 1 MiB
  (func (export "_start")
    (local $i i32)
    ;; iovec i at 0x100000 + 8*i: { buf = 0, len = 0x100000 }
    (loop $fill
      (i32.store (i32.add (i32.const 0x100000) (i32.shl (local.get $i) (i32.const 3))) (i32.const 0))
      (i32.store (i32.add (i32.const 0x100004) (i32.shl (local.get $i) (i32.const 3))) (i32.const 0x100000))
      (local.set $i (i32.add (local.get $i) (i32.const 1)))
      (br_if $fill (i32.lt_u (local.get $i) (i32.const 1024))))
    (loop $flood
      ;; nwritten goes just past the iovecs
      (drop (call $fd_write (i32.const 2) (i32.const 0x100000) (i32.const 1024) (i32.const 0x102000)))
      (br $flood))))
