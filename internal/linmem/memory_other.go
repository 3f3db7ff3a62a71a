//go:build !((linux || darwin) && (amd64 || arm64))

package linmem

func newLinearMemory(owner *Allocator, max uint64) linearMemory {
	return &sliceMemory{owner: owner, max: max}
}

// Pool is empty where memories are Go slices: the Go heap reuses
// their pages itself.
type Pool struct{}

func NewPool(int) *Pool { return &Pool{} }

func (*Pool) Close() {}
