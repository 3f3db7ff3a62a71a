;; counts.wat: small functions whose fuel the tests in internal/fuel pin
;; exactly (the way wasmtime's tests/all/fuel.wast does). The cost model is
;; in internal/fuel/doc.go: 1 per instruction (block, loop, nop and the end
;; of a block, loop or if cost nothing; a function's final end, its return,
;; costs 1), charged per segment when the segment is entered; code of at most 8 instructions that an if or a
;; forward br_if may skip is charged with the code before it; plus size
;; charges for memory.grow (4096 a page) and the bulk instructions (1 per
;; 16 bytes).
;; Each function's comment gives its fuel. Build: make -C testdata/fuel fixtures
(module
  (memory 1 100)
  (data $d "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef")

  ;; 4: i32.const i32.const i32.add end
  (func (export "straight") (result i32)
    i32.const 1
    i32.const 2
    i32.add)

  ;; 7n+1 for n >= 1: loop (0), 7 per iteration, the loop's end (0), end (1)
  (func (export "loop") (param $n i32) (local $i i32)
    (loop $l
      local.get $i
      i32.const 1
      i32.add
      local.tee $i
      local.get $n
      i32.lt_u
      br_if $l))

  ;; 5n+2 for n >= 1: local.get (1), loop (0), 5 per iteration, the
  ;; loop's end (0), end (1). The loop takes a parameter, so its check's
  ;; refuel arm cannot branch back to the header and falls through.
  (func (export "loopparam") (param $n i32) (result i32)
    local.get $n
    (loop $l (param i32) (result i32)
      i32.const 1
      i32.sub
      local.tee $n
      local.get $n
      br_if $l))

  ;; local.get if + the small then arm i32.const else (4), always;
  ;; true: 4 + end (1) = 5; false: 4 + i32.const i32.const i32.add end (3) + end (1) = 8
  (func (export "branch") (param i32) (result i32)
    local.get 0
    if (result i32)
      i32.const 10
    else
      i32.const 20
      i32.const 1
      i32.add
    end)

  ;; 4 per call
  (func $add1 (param i32) (result i32)
    local.get 0
    i32.const 1
    i32.add)

  ;; i32.const call call call end (5) + 3 * 4 = 17
  (func (export "calls") (result i32)
    i32.const 0
    call $add1
    call $add1
    call $add1)

  ;; block block block local.get br_table (2), then
  ;; 0: i32.const i32.const i32.add return (4) = 6
  ;; 1: i32.const return (2) = 4
  ;; 2 and above: i32.const nop end (2) = 4
  (func (export "brtable") (param i32) (result i32)
    (block $b2
      (block $b1
        (block $b0
          local.get 0
          br_table $b0 $b1 $b2)
        i32.const 100
        i32.const 1
        i32.add
        return)
      i32.const 101
      return)
    i32.const 102
    nop)

  ;; local.get memory.grow end (3) + 4096 per page asked
  (func (export "grow") (param i32) (result i32)
    local.get 0
    memory.grow)

  ;; i32.const i32.const local.get memory.fill end (5) + n/16
  (func (export "fill") (param i32)
    i32.const 0
    i32.const 7
    local.get 0
    memory.fill)

  ;; (5) + n/16
  (func (export "copy") (param i32)
    i32.const 1024
    i32.const 0
    local.get 0
    memory.copy)

  ;; (5) + n/16
  (func (export "init") (param i32)
    i32.const 2048
    i32.const 0
    local.get 0
    memory.init $d)

  ;; i32.const drop unreachable (3); the end after it is dead
  (func (export "trap")
    i32.const 1
    drop
    unreachable)

  ;; fib(n) recursively. F(n) = 6 for n < 2 (local.get i32.const i32.lt_u if
  ;; local.get return, the small then arm charged always); else
  ;; 6 + 10 (the code after the if) + F(n-1) + F(n-2)
  (func $fib (export "fib") (param i32) (result i32)
    local.get 0
    i32.const 2
    i32.lt_u
    if
      local.get 0
      return
    end
    local.get 0
    i32.const 1
    i32.sub
    call $fib
    local.get 0
    i32.const 2
    i32.sub
    call $fib
    i32.add)

;; a then arm of more than 8 instructions is charged only when it runs:
  ;; local.get if (2) + [then arm: 10 + end (10)] + local.get end (2)
  ;; true: 14; false: 4
  (func (export "bigthen") (param i32) (result i32) (local $x i32)
    local.get 0
    if
      i32.const 1
      local.set $x
      i32.const 2
      local.set $x
      i32.const 3
      local.set $x
      i32.const 4
      local.set $x
      i32.const 5
      local.set $x
    end
    local.get $x)

  ;; block i32.const local.get br_if (3) + the small tail drop i32.const
  ;; end (2), charged whether or not the branch is taken, + end (1) = 6
  (func (export "skip") (param i32) (result i32)
    block (result i32)
      i32.const 1
      local.get 0
      br_if 0
      drop
      i32.const 2
    end)

  ;; br (1) per iteration, forever: the runaway guest
  (func (export "spin")
    (loop $l
      br $l)))
