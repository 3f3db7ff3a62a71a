// Package linmem is the linear memory of module instances: one Allocator
// per instance (wazero's experimental.MemoryAllocator, and the table
// budget of internal/fuel) that holds the instance to its own memory
// limit and records its peak and any refusal, and one Pool per runtime
// that keeps a few zeroed reservations per CPU for the next instances.
//
// It is apart from the runtime because it is one job with its own
// platform files (mmap where the address space allows, Go slices
// elsewhere) and its own tests, and the instance code only needs its
// four verbs: New, Allocate, Refused, Release.
package linmem
