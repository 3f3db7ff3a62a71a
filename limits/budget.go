package limits

import "sync/atomic"

// WriteBudget is the per-call account of bytes written to files. Every host
// module that writes on the guest's behalf (the WASI layer's fd_write,
// fd_pwrite and fd_filestat_set_size, subako_http's file outputs) charges the
// same account, so the 1 GiB of ABI 1 holds across all of them.
//
// Directory entries are charged too (ReserveEntry): each new file,
// directory, symbolic or hard link costs EntryCost bytes plus, for a
// symbolic link, its target's length, and counts against a cap on entries,
// so that empty directories cannot fill the host's disk or make the
// volume's removal take minutes.
//
//	b := limits.NewCallBudget(limits.Default())
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
	limit      int64
	used       atomic.Int64
	maxEntries int64 // 0: no cap on the count (entries still cost bytes)
	entries    atomic.Int64
}

// NewCallBudget returns the account of one call under l: l.WriteBudget
// bytes and at most l.MaxEntries new directory entries.
func NewCallBudget(l Limits) *WriteBudget {
	return &WriteBudget{limit: l.WriteBudget, maxEntries: int64(max(l.MaxEntries, 0))}
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

// ReserveEntry charges one new directory entry: one against the cap on
// entries and EntryCost+extra bytes (extra is a symbolic link's target
// length). It is all or nothing, like Reserve: when either does not fit,
// nothing is charged and the caller must not create the entry.
func (b *WriteBudget) ReserveEntry(extra int64) bool {
	if b.maxEntries > 0 {
		for {
			n := b.entries.Load()
			if n >= b.maxEntries {
				return false
			}
			if b.entries.CompareAndSwap(n, n+1) {
				break
			}
		}
	} else {
		b.entries.Add(1)
	}
	if !b.Reserve(EntryCost + max(extra, 0)) {
		b.entries.Add(-1)
		return false
	}
	return true
}

// RefundEntry gives back a ReserveEntry(extra) whose entry was not created.
func (b *WriteBudget) RefundEntry(extra int64) {
	b.entries.Add(-1)
	b.Refund(EntryCost + max(extra, 0))
}

// Entries is how many directory entries have been charged.
func (b *WriteBudget) Entries() int64 { return b.entries.Load() }

// MaxEntries is the cap on entries; 0 means none beyond the bytes.
func (b *WriteBudget) MaxEntries() int64 { return b.maxEntries }

// Used is how many bytes have been charged.
func (b *WriteBudget) Used() int64 { return b.used.Load() }

// Limit is the budget's size in bytes.
func (b *WriteBudget) Limit() int64 { return b.limit }

// Remaining is how many bytes may still be written.
func (b *WriteBudget) Remaining() int64 { return b.limit - b.used.Load() }
