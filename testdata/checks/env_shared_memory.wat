;; non_function_import + unknown_import + threads: the memory import clang
;; emits for -pthread (wasm-ld --import-memory --shared-memory), from "env",
;; a module the host does not provide.
(module
  (import "env" "memory" (memory 2 16 shared))
  (func (export "_start")))
