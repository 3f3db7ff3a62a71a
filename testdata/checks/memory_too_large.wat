;; memory_too_large: 4097 initial pages (256 MiB + 64 KiB), one page over the
;; default 256 MiB memory limit.
(module
  (memory (export "memory") 4097)
  (func (export "_start")))
