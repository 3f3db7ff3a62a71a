;; hostloop.wat: a command that calls a host function (sched_yield)
;; through call_indirect forever: only its deadline or the caller's
;; interruption ends it, and the host must see either soon after it comes.
;; Build: make -C testdata/fuel fixtures
(module
  (type $yield (func (result i32)))
  (import "wasi_snapshot_preview1" "sched_yield" (func $sched_yield (type $yield)))
  (memory (export "memory") 1)
  (table 1 funcref)
  (elem (i32.const 0) $sched_yield)
  (func (export "_start")
    (loop $l
      (drop (call_indirect (type $yield) (i32.const 0)))
      (br $l))))
