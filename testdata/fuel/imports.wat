;; imports.wat: imported functions, globals and a table come first in their
;; index spaces, so the fuel rewriter's import (appended after the imported
;; functions) and counter (appended after every global) shift exactly the
;; defined functions. The test compares each export with and without
;; instrumentation. Build: make -C testdata/fuel fixtures
(module
  (import "env" "double" (func $double (param i32) (result i32)))
  (import "env" "base" (global $base i32))
  (import "env" "mut" (global $mut (mut i32)))
  (import "env" "table" (table $t 2 funcref))
  (global $own (mut i32) (i32.const 3))
  (global $ref funcref (ref.func $triple))
  (elem (table $t) (i32.const 0) func $triple $double)
  (func $triple (param i32) (result i32)
    local.get 0
    i32.const 3
    i32.mul)
  (func (export "globals") (result i32)
    (global.set $mut (i32.add (global.get $mut) (global.get $own)))
    (i32.add (global.get $base) (global.get $mut)))
  (func (export "calls") (result i32)
    (call $double (call $triple (i32.const 7))))
  (func (export "table") (result i32)
    (i32.add
      (call_indirect (param i32) (result i32) (i32.const 5) (i32.const 0))
      (call_indirect (param i32) (result i32) (i32.const 5) (i32.const 1))))
  (func (export "loop") (result i32) (local $i i32) (local $s i32)
    (loop $l
      (local.set $s (i32.add (local.get $s) (call $double (local.get $i))))
      (br_if $l (i32.lt_u (local.tee $i (i32.add (local.get $i) (i32.const 1))) (i32.const 50))))
    local.get $s))
