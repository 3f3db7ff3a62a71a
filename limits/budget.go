package limits

import "sync/atomic"

// WriteBudget is the per-call account of bytes written to files. Every host
// module that writes on the guest's behalf (the WASI layer's fd_write,
// fd_pwrite and fd_filestat_set_size, subako_http's file outputs) charges the
// same account, so the 1 GiB of ABI 1 holds across all of them: exactly 1
// GiB of file data, not a byte less.
//
// Directory entries are bounded by a cap of their own (ReserveEntry): each
// new file, directory, symbolic or hard link counts one against
// MaxEntries, and a symbolic link's target may be at most MaxLinkTarget
// bytes, so that empty directories and links cannot fill the host's disk
// or make the volume's removal take minutes (10,000 entries and their
// targets are at most 41 MB of metadata). Neither costs any of the bytes:
// a guest that writes exactly the quota into new files gets all of it.
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
	maxEntries int64
	entries    atomic.Int64
	linkBytes  atomic.Int64
}

// MaxLinkTarget is the longest symbolic link target ReserveEntry accepts,
// in bytes: Linux's PATH_MAX less the NUL it counts, which is what the
// WASI layer refuses past with ENAMETOOLONG before it gets here.
const MaxLinkTarget = 4095

// NewCallBudget returns the account of one call under l: l.WriteBudget
// bytes and at most l.MaxEntries new directory entries (DefaultMaxEntries
// when l.MaxEntries is not positive: entries are never unbounded).
func NewCallBudget(l Limits) *WriteBudget {
	maxEntries := int64(l.MaxEntries)
	if maxEntries <= 0 {
		maxEntries = DefaultMaxEntries
	}
	return &WriteBudget{limit: l.WriteBudget, maxEntries: maxEntries}
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

// ReserveEntry charges one new directory entry against the cap on
// entries; extra is a symbolic link's target length (0 for any other
// entry), refused past MaxLinkTarget and counted in LinkBytes. It charges
// none of the bytes of file data. It is all or nothing, like Reserve: when
// it reports false, nothing is charged and the caller must not create the
// entry.
func (b *WriteBudget) ReserveEntry(extra int64) bool {
	if extra > MaxLinkTarget {
		return false
	}
	for {
		n := b.entries.Load()
		if n >= b.maxEntries {
			return false
		}
		if b.entries.CompareAndSwap(n, n+1) {
			break
		}
	}
	b.linkBytes.Add(max(extra, 0))
	return true
}

// RefundEntry gives back a ReserveEntry(extra) whose entry was not created.
func (b *WriteBudget) RefundEntry(extra int64) {
	b.entries.Add(-1)
	b.linkBytes.Add(-max(extra, 0))
}

// LinkBytes is the sum of the targets of the symbolic links charged: at
// most MaxEntries × MaxLinkTarget.
func (b *WriteBudget) LinkBytes() int64 { return b.linkBytes.Load() }

// Entries is how many directory entries have been charged.
func (b *WriteBudget) Entries() int64 { return b.entries.Load() }

// MaxEntries is the cap on entries.
func (b *WriteBudget) MaxEntries() int64 { return b.maxEntries }

// Used is how many bytes have been charged.
func (b *WriteBudget) Used() int64 { return b.used.Load() }

// Limit is the budget's size in bytes.
func (b *WriteBudget) Limit() int64 { return b.limit }

// Remaining is how many bytes may still be written.
func (b *WriteBudget) Remaining() int64 { return b.limit - b.used.Load() }
