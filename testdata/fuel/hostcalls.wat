;; hostcalls.wat: a guest that loops over a cheap host function
;; (sched_yield) through a table, the red team's shape: a call_indirect
;; (or return_call_indirect) that reaches an imported function must pay
;; the host call's cost as a direct call does, and a host call must never
;; buy a long run without a check. _start makes 100,000 calls through
;; call_indirect; "direct" and "indirect" make n calls each way
;; (hosttail.wat: through return_call_indirect), and "pairs" n pairs of
;; calls with no loop or call of a guest function between the two.
;; Build: make -C testdata/fuel fixtures
(module
  (type $yield (func (result i32)))
  (import "wasi_snapshot_preview1" "sched_yield" (func $sched_yield (type $yield)))
  (memory (export "memory") 1)
  (table 1 funcref)
  (elem (i32.const 0) $sched_yield)
  (func $direct (export "direct") (param $n i32)
    (loop $l
      (drop (call $sched_yield))
      (br_if $l (local.tee $n (i32.sub (local.get $n) (i32.const 1))))))
  (func $indirect (export "indirect") (param $n i32)
    (loop $l
      (drop (call_indirect (type $yield) (i32.const 0)))
      (br_if $l (local.tee $n (i32.sub (local.get $n) (i32.const 1))))))
  (func $pair
    (drop (call $sched_yield))
    (drop (call_indirect (type $yield) (i32.const 0))))
  (func (export "pairs") (param $n i32)
    (loop $l
      (call $pair)
      (br_if $l (local.tee $n (i32.sub (local.get $n) (i32.const 1))))))
  (func (export "_start")
    (call $indirect (i32.const 100000))))
