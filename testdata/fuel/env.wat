;; env.wat: the module imports.wat imports from (instantiated as "env" by
;; the tests, not instrumented). Build: make -C testdata/fuel fixtures
(module
  (global (export "base") i32 (i32.const 1000))
  (global (export "mut") (mut i32) (i32.const 5))
  (table (export "table") 2 funcref)
  (func (export "double") (param i32) (result i32)
    local.get 0
    i32.const 2
    i32.mul))
