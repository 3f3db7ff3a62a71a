//go:build !((linux || darwin) && (amd64 || arm64))

package runtime

func newLinearMemory(owner *memoryLimit, max uint64) linearMemory {
	return &sliceMemory{owner: owner, max: max}
}
