;; Several problems at once: an env import, a reactor export, no _start, no
;; memory export, and an atomic instruction. Every one must be reported.
(module
  (import "env" "log" (func $log (param i32)))
  (memory 1)
  (func (export "_initialize")
    (drop (i32.atomic.load (i32.const 0)))
    (call $log (i32.const 1))))
