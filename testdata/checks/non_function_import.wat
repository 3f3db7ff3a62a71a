;; non_function_import: imported memory, table and global.
(module
  (import "env" "memory" (memory 1))
  (import "env" "table" (table 1 funcref))
  (import "env" "g" (global i32))
  (export "memory" (memory 0))
  (func (export "_start")))
