;; leaves.wat: small leaf functions, whose callers pay for them
;; (internal/fuel/leaf.go): a function of at most 96 bytes of code with no
;; loop, no call and no instruction charged by size charges nothing
;; itself; a call that can reach it pays its whole body, every
;; instruction once, taken or not. The rest of the cost model is
;; counts.wat's. Each function's comment gives its fuel.
;; Build: make -C testdata/fuel fixtures
(module
  (type $binop (func (param i32 i32) (result i32)))
  (type $unop (func (param i32) (result i32)))
  (memory 1)
  (table 4 funcref)
  (elem (i32.const 0) $pick $less $inc $twice)

  ;; A small leaf of 6: local.get if local.get else i32.const end (0) end (1)
  (func $pick (type $binop)
    local.get 0
    if (result i32)
      local.get 1
    else
      i32.const 0
    end)

  ;; A small leaf of 4: local.get local.get i32.lt_s end
  (func $less (type $binop)
    local.get 0
    local.get 1
    i32.lt_s)

  ;; A small leaf of 4: local.get i32.const i32.add end
  (func $inc (type $unop)
    local.get 0
    i32.const 1
    i32.add)

  ;; Not a leaf (it calls), so it charges itself: local.get call (1 + $inc's
  ;; 4) call (1 + 4) end = 12
  (func $twice (type $unop)
    local.get 0
    call $inc
    call $inc)

  ;; 4 + $pick's 6 = 10, whichever arm $pick takes:
  ;; local.get i32.const call end
  (func (export "direct") (param i32) (result i32)
    local.get 0
    i32.const 7
    call $pick)

  ;; 5 + the dearest small leaf of $binop in the table ($pick, 6) = 11,
  ;; whichever is called: i32.const i32.const local.get call_indirect end
  (func (export "indirect") (param i32) (result i32)
    i32.const 5
    i32.const 7
    local.get 0
    call_indirect (type $binop))

  ;; 4 + the dearest small leaf of $unop ($inc, 4) = 8, plus what the
  ;; callee charges itself: $inc (index 2) nothing, $twice (index 3) 12:
  ;; i32.const local.get call_indirect end
  (func (export "mixed") (param i32) (result i32)
    i32.const 3
    local.get 0
    call_indirect (type $unop))

  ;; Over 96 bytes, so it charges itself, by the path taken: local.get
  ;; if (2); the then arm, 50 times i32.const drop (100), its own charge;
  ;; end (0) end (1): 3 when the arm is skipped, 103 when it runs
  (func $big (param i32)
    local.get 0
    if
      i32.const 0 drop i32.const 0 drop i32.const 0 drop i32.const 0 drop i32.const 0 drop
      i32.const 0 drop i32.const 0 drop i32.const 0 drop i32.const 0 drop i32.const 0 drop
      i32.const 0 drop i32.const 0 drop i32.const 0 drop i32.const 0 drop i32.const 0 drop
      i32.const 0 drop i32.const 0 drop i32.const 0 drop i32.const 0 drop i32.const 0 drop
      i32.const 0 drop i32.const 0 drop i32.const 0 drop i32.const 0 drop i32.const 0 drop
      i32.const 0 drop i32.const 0 drop i32.const 0 drop i32.const 0 drop i32.const 0 drop
      i32.const 0 drop i32.const 0 drop i32.const 0 drop i32.const 0 drop i32.const 0 drop
      i32.const 0 drop i32.const 0 drop i32.const 0 drop i32.const 0 drop i32.const 0 drop
      i32.const 0 drop i32.const 0 drop i32.const 0 drop i32.const 0 drop i32.const 0 drop
      i32.const 0 drop i32.const 0 drop i32.const 0 drop i32.const 0 drop i32.const 0 drop
    end)

  ;; 3 + $big's: local.get call end
  (func (export "callbig") (param i32)
    local.get 0
    call $big)

  ;; A leaf with memory.fill, charged by size after it ran, so it charges
  ;; itself: i32.const i32.const local.get memory.fill end (5) + n/16
  (func $fill (param i32)
    i32.const 0
    i32.const 0
    local.get 0
    memory.fill)

  ;; 3 + $fill's: local.get call end
  (func (export "callfill") (param i32)
    local.get 0
    call $fill)

  ;; A leaf the host calls is exported, so it charges itself, by the path
  ;; taken: local.get if + the small then arm i32.const else (4), always;
  ;; true: 4 + end (1) = 5; false: 4 + i32.const end (2) = 6
  (func (export "hostleaf") (param i32) (result i32)
    local.get 0
    if (result i32)
      i32.const 1
    else
      i32.const 2
    end)
)
