;; threads: a shared memory (wat2wasm --enable-threads), no atomic instructions.
(module
  (memory (export "memory") 1 1 shared)
  (func (export "_start")))
