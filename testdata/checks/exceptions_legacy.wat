;; exceptions: legacy exception handling (try/catch/throw, a tag section),
;; built with wabt 1.0.32's wat2wasm --enable-exceptions.
(module
  (tag $oops (param i32))
  (memory (export "memory") 1)
  (func $risky (throw $oops (i32.const 7)))
  (func (export "_start")
    (try
      (do (call $risky))
      (catch $oops (drop)))))
