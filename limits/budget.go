package limits

import "sync/atomic"

// WriteBudget is the per-call account of bytes written to files. Every host
// module that writes on the guest's behalf (the WASI layer's fd_write,
// fd_pwrite and fd_filestat_set_size, subako_http's file outputs) charges the
// same account, so the 1 GiB of ABI 1 holds across all of them.
//
//	b := limits.NewWriteBudget(limits.GiB)
//	if !b.Reserve(int64(len(p))) {
//		return EDQUOT // nothing was written
//	}
//	n, _ := f.Write(p)
//	b.Refund(int64(len(p) - n))
//
// # Notes
//
//   - Reserve is all or nothing: a write that would cross the limit is
//     refused whole, so the guest never sees a partial write caused by the
//     quota.
//   - Safe for concurrent use.
type WriteBudget struct {
	limit int64
	used  atomic.Int64
}

// NewWriteBudget returns an account that allows limit bytes in all.
func NewWriteBudget(limit int64) *WriteBudget {
	return &WriteBudget{limit: limit}
}

// Reserve charges n bytes and reports whether they fit. When they do not,
// nothing is charged. Reserve of zero or fewer bytes always succeeds.
func (b *WriteBudget) Reserve(n int64) bool {
	if n <= 0 {
		return true
	}
	for {
		used := b.used.Load()
		if n > b.limit-used {
			return false
		}
		if b.used.CompareAndSwap(used, used+n) {
			return true
		}
	}
}

// Refund returns n reserved bytes that were not written after all.
func (b *WriteBudget) Refund(n int64) {
	if n > 0 {
		b.used.Add(-n)
	}
}

// Used is how many bytes have been charged.
func (b *WriteBudget) Used() int64 { return b.used.Load() }

// Limit is the budget's size in bytes.
func (b *WriteBudget) Limit() int64 { return b.limit }

// Remaining is how many bytes may still be written.
func (b *WriteBudget) Remaining() int64 { return b.limit - b.used.Load() }
