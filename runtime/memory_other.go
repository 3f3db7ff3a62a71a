//go:build !((linux || darwin) && (amd64 || arm64))

package runtime

func newLinearMemory(owner *memoryLimit, max uint64) linearMemory {
	return &sliceMemory{owner: owner, max: max}
}

// memoryPool is empty where memories are Go slices: the Go heap reuses
// their pages itself.
type memoryPool struct{}

func newMemoryPool(int) *memoryPool { return &memoryPool{} }

func (*memoryPool) close() {}
