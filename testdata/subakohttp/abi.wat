;; A guest for the subako_http host function tests: it re-exports the two
;; imports so a test can call them with any arguments, and exports its memory
;; so the test can place request documents and read responses.
;; Rebuild with `make` in this directory (needs wat2wasm from wabt).
(module
  (import "subako_http" "request" (func $request (param i32 i32) (result i32)))
  (import "subako_http" "read_response" (func $read_response (param i32 i32) (result i32)))
  (memory (export "memory") 8 64)
  (func (export "request") (param i32 i32) (result i32)
    (call $request (local.get 0) (local.get 1)))
  (func (export "read_response") (param i32 i32) (result i32)
    (call $read_response (local.get 0) (local.get 1)))
  ;; call: request then read_response into a buffer the host chose
  ;; (out_ptr), the way a real guest does; returns the length or the first
  ;; negative value.
  (func (export "call") (param $ptr i32) (param $len i32) (param $out i32) (result i32)
    (local $n i32)
    (local.set $n (call $request (local.get $ptr) (local.get $len)))
    (if (i32.lt_s (local.get $n) (i32.const 0)) (then (return (local.get $n))))
    (call $read_response (local.get $out) (local.get $n)))
  (func (export "_start")))
