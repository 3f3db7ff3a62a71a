;; hosttail.wat: hostcalls.wat's loop over sched_yield, each call made
;; by return_call_indirect from a function of its own ("tail" makes n).
;; Build: make -C testdata/fuel fixtures
(module
  (type $yield (func (result i32)))
  (import "wasi_snapshot_preview1" "sched_yield" (func $sched_yield (type $yield)))
  (memory (export "memory") 1)
  (table 1 funcref)
  (elem (i32.const 0) $sched_yield)
  (func $once (result i32)
    (return_call_indirect (type $yield) (i32.const 0)))
  (func (export "tail") (param $n i32)
    (loop $l
      (drop (call $once))
      (br_if $l (local.tee $n (i32.sub (local.get $n) (i32.const 1)))))))
