;; The table attack of issue 17 as a WASI command: table.grow of 2^32-2
;; elements (it killed the host with a fatal out-of-memory before growth was
;; checked), then growths that fit and one that would pass the memory limit
;; beside the linear memory. Exits 0 when every table.grow answered as the
;; host's limits say, else with the number of the first wrong answer.
;; The test runs it with a 1 MiB memory limit and 1 page (64 KiB) of memory:
;; 120,000 elements (960,000 bytes) fit beside it, 130,000 do not.
(module
  (import "wasi_snapshot_preview1" "proc_exit" (func $exit (param i32)))
  (memory (export "memory") 1)
  (table $t 0 funcref)
  (func (export "_start")
    ;; 1: the attack gets -1.
    (if (i32.ne (table.grow $t (ref.null func) (i32.const -2)) (i32.const -1))
      (then (call $exit (i32.const 1))))
    ;; 2: a growth that fits returns the old size, 0.
    (if (i32.ne (table.grow $t (ref.null func) (i32.const 120000)) (i32.const 0))
      (then (call $exit (i32.const 2))))
    (if (i32.ne (table.size $t) (i32.const 120000))
      (then (call $exit (i32.const 3))))
    ;; 4: 10,000 more would pass the limit: -1, and the size stays.
    (if (i32.ne (table.grow $t (ref.null func) (i32.const 10000)) (i32.const -1))
      (then (call $exit (i32.const 4))))
    (if (i32.ne (table.size $t) (i32.const 120000))
      (then (call $exit (i32.const 5))))
    ;; 6: linear memory cannot take the tables' share either.
    (if (i32.ne (memory.grow (i32.const 1)) (i32.const -1))
      (then (call $exit (i32.const 6))))
    (call $exit (i32.const 0))))
