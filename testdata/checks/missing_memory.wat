;; missing_memory: a memory exists but is exported under another name.
(module
  (memory (export "mem") 1)
  (func (export "_start")))
