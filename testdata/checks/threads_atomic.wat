;; threads: an atomic instruction on an ordinary (unshared) memory.
(module
  (memory (export "memory") 1)
  (func $bump (export "bump")
    (drop (i32.atomic.rmw.add (i32.const 0) (i32.const 1))))
  (func (export "_start") (call $bump)))
