;; features.wat: a module using the features the fuel rewriter must carry
;; through unchanged: a start function, a data count section with passive
;; data (memory.init, data.drop), bulk memory, reference types (funcref and
;; externref tables, every element segment form, ref.func in a global and
;; in segments, table.* instructions), multi-value (functions and blocks
;; with several results and parameters), SIMD, tail calls, typed select,
;; and a name section (wat2wasm --debug-names). The test calls every export
;; with and without instrumentation and compares the results.
;; Build: make -C testdata/fuel fixtures
(module
  (type $ii_i (func (param i32 i32) (result i32)))
  (type $v_i (func (result i32)))
  (memory (export "memory") 1)
  (table $t 8 funcref)
  (table $ext 2 externref)
  (global $started (mut i32) (i32.const 0))
  (global $fref funcref (ref.func $seven))
  (data $passive "passive-data-0123456789")
  (data (i32.const 512) "active")

  ;; element segments in each encoding
  (elem (i32.const 0) $seven $eight)                        ;; flags 0
  (elem $p func $nine $seven)                               ;; flags 1: passive, indices
  (elem (table $t) (i32.const 2) func $eight)               ;; flags 2: explicit table
  (elem declare func $add)                                  ;; flags 3: declarative
  (elem (i32.const 4) funcref (ref.func $nine) (ref.null func)) ;; flags 4
  (elem $pe funcref (ref.func $add) (ref.func $seven))      ;; flags 5: passive, exprs
  (elem (table $t) (i32.const 6) funcref (ref.func $eight)) ;; flags 6

  (func $seven (type $v_i) i32.const 7)
  (func $eight (type $v_i) i32.const 8)
  (func $nine (type $v_i) i32.const 9)
  (func $add (type $ii_i) local.get 0 local.get 1 i32.add)

  (func $start
    global.get $started
    i32.const 1
    i32.add
    global.set $started)
  (start $start)

  (func (export "started") (result i32) global.get $started)

  ;; calls through the table: slots 0, 1, 2, 4, 6 and a funcref global
  (func (export "indirect") (result i32)
    (call_indirect (type $v_i) (i32.const 0))
    (call_indirect (type $v_i) (i32.const 1))
    i32.add
    (call_indirect (type $v_i) (i32.const 2))
    i32.add
    (call_indirect (type $v_i) (i32.const 4))
    i32.add
    (call_indirect (type $v_i) (i32.const 6))
    i32.add
    (table.set $t (i32.const 7) (global.get $fref))
    (call_indirect (type $v_i) (i32.const 7))
    i32.add)

  ;; table.init from passive segments, table.copy, table.grow, table.fill,
  ;; table.size, elem.drop, ref.is_null, externref
  (func (export "tables") (result i32)
    (table.init $t $p (i32.const 3) (i32.const 0) (i32.const 2))
    (table.init $t $pe (i32.const 5) (i32.const 1) (i32.const 1))
    elem.drop $p
    (table.copy $t $t (i32.const 0) (i32.const 3) (i32.const 1))
    (drop (table.grow $t (ref.null func) (i32.const 3)))
    (table.fill $t (i32.const 8) (ref.func $eight) (i32.const 2))
    (table.set $ext (i32.const 1) (ref.null extern))
    (call_indirect (type $v_i) (i32.const 0))   ;; 9 (copied from 3)
    (call_indirect (type $v_i) (i32.const 4))   ;; 7
    i32.add
    (call_indirect (type $v_i) (i32.const 5))   ;; 7
    i32.add
    (call_indirect (type $v_i) (i32.const 9))   ;; 8
    i32.add
    table.size $t
    i32.add
    (ref.is_null (table.get $ext (i32.const 1)))
    i32.add)

  ;; memory.init, data.drop, memory.copy, memory.fill, and a checksum
  (func (export "bulk") (result i32) (local $i i32) (local $sum i32)
    (memory.init $passive (i32.const 100) (i32.const 0) (i32.const 23))
    data.drop $passive
    (memory.copy (i32.const 200) (i32.const 100) (i32.const 23))
    (memory.fill (i32.const 205) (i32.const 33) (i32.const 5))
    (memory.copy (i32.const 300) (i32.const 512) (i32.const 6))
    (loop $l
      (local.set $sum
        (i32.add
          (i32.mul (local.get $sum) (i32.const 31))
          (i32.load8_u offset=200 (local.get $i))))
      (br_if $l (i32.lt_u (local.tee $i (i32.add (local.get $i) (i32.const 1))) (i32.const 112))))
    local.get $sum)

  ;; multi-value: a function with two results and a block with parameters
  (func $divmod (param i32 i32) (result i32 i32)
    (i32.div_u (local.get 0) (local.get 1))
    (i32.rem_u (local.get 0) (local.get 1)))
  (func (export "multi") (result i32)
    (call $divmod (i32.const 47) (i32.const 5))   ;; 9 2
    (block (param i32 i32) (result i32)
      i32.const 100
      i32.mul
      i32.add)                                      ;; 9 + 200
    (i32.const 1) (i32.const 2)
    i32.const 1
    if (param i32 i32) (result i32)
      i32.sub
    else
      i32.add
    end
    i32.add)

  ;; SIMD: lanes, arithmetic, shuffles, a v128 local across a loop
  (func (export "simd") (result i32) (local $v v128) (local $i i32)
    (local.set $v (v128.const i32x4 1 2 3 4))
    (loop $l
      (local.set $v (i32x4.add (local.get $v) (i32x4.splat (local.get $i))))
      (br_if $l (i32.lt_u (local.tee $i (i32.add (local.get $i) (i32.const 1))) (i32.const 10))))
    (local.set $v (i8x16.shuffle 4 5 6 7 0 1 2 3 12 13 14 15 8 9 10 11 (local.get $v) (local.get $v)))
    (v128.store (i32.const 1024) (local.get $v))
    (i32.add
      (i32x4.extract_lane 0 (local.get $v))
      (i32.mul (i32x4.extract_lane 3 (v128.load (i32.const 1024))) (i32.const 1000))))

  ;; tail calls and typed select
  (func $count (param i32 i32) (result i32)
    (if (result i32) (i32.eqz (local.get 0))
      (then local.get 1)
      (else (return_call $count (i32.sub (local.get 0) (i32.const 1)) (i32.add (local.get 1) (i32.const 2))))))
  (func (export "tail") (result i32)
    (call $count (i32.const 1000) (i32.const 0))
    (select (result i32) (i32.const 1) (i32.const 2) (i32.const 0))
    i32.add)

  ;; br_table inside a loop with results, and early returns
  (func (export "control") (param i32) (result i32) (local $acc i32)
    (loop $l
      (block $b2
        (block $b1
          (block $b0
            (br_table $b0 $b1 $b2 (i32.rem_u (local.get 0) (i32.const 3))))
          (local.set $acc (i32.add (local.get $acc) (i32.const 1)))
          (br $b2))
        (local.set $acc (i32.add (local.get $acc) (i32.const 10)))
        (if (i32.gt_u (local.get $acc) (i32.const 1000)) (then (return (local.get $acc)))))
      (local.set $acc (i32.add (local.get $acc) (i32.const 100)))
      (br_if $l (local.tee 0 (i32.sub (local.get 0) (i32.const 1)))))
    local.get $acc))
