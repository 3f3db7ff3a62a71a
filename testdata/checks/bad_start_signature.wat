;; bad_start_signature: _start takes a parameter and returns a value.
(module
  (memory (export "memory") 1)
  (func (export "_start") (param i32) (result i32) (local.get 0)))
