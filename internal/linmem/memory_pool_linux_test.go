//go:build linux && (amd64 || arm64)

package linmem

import (
	goruntime "runtime"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

// onCPU runs fn on the calling goroutine's thread pinned to one CPU, and
// gives the thread its CPUs back afterwards.
func onCPU(t *testing.T, cpu int, fn func()) {
	t.Helper()
	goruntime.LockOSThread()
	defer goruntime.UnlockOSThread()
	var old, one unix.CPUSet
	if err := unix.SchedGetaffinity(0, &old); err != nil {
		t.Fatal(err)
	}
	one.Set(cpu)
	if err := unix.SchedSetaffinity(0, &one); err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := unix.SchedSetaffinity(0, &old); err != nil {
			t.Fatal(err)
		}
	}()
	if got := currentCPU(); got != cpu {
		t.Fatalf("currentCPU() = %d on a thread pinned to CPU %d", got, cpu)
	}
	fn()
}

// A memory goes back to the CPU that cleared it: the next instance on that
// CPU gets the memory its cache holds, not whichever one was released
// last, anywhere. The attack this stops is not a guest's but the
// machine's: one shared shelf made two cores pull every cleared line from
// each other's cache.
func TestMemoryPoolKeepsAMemoryOnItsCPU(t *testing.T) {
	var cpus unix.CPUSet
	if err := unix.SchedGetaffinity(0, &cpus); err != nil {
		t.Fatal(err)
	}
	var usable []int
	for c := 0; c < 1024 && len(usable) < 2; c++ {
		if cpus.IsSet(c) {
			usable = append(usable, c)
		}
	}
	if len(usable) < 2 || goruntime.NumCPU() < 2 {
		t.Skip("one CPU: there is no other shelf to tell apart (CI has two)")
	}
	const page = 65536
	pool := NewPool(2)
	defer pool.Close()
	// Two memories in use at once, one on each CPU, released on the CPU
	// that used them.
	var lims [2]*Allocator
	var bases [2]*byte
	for i, cpu := range usable {
		onCPU(t, cpu, func() {
			lims[i] = New(16*page, pool)
			mem := lims[i].Allocate(0, 16*page)
			b := mem.Reallocate(page)
			b[0] = byte(cpu + 1)
			bases[i] = unsafe.SliceData(b)
		})
	}
	for i, cpu := range usable {
		onCPU(t, cpu, func() {
			lims[i].memories[0].Free()
			lims[i].Release()
		})
	}
	if pool.idle() != 2 {
		t.Fatalf("%d memories pooled, want 2", pool.idle())
	}
	first, second := bases[0], bases[1]
	take := func(cpu int) *byte {
		var base *byte
		onCPU(t, cpu, func() {
			lim := New(16*page, pool)
			// Held to the end: the next take must find the other memory.
			t.Cleanup(lim.Release)
			mem := lim.Allocate(0, 16*page)
			b := mem.Reallocate(page)
			if b[0] != 0 {
				t.Fatal("a pooled memory was handed out unzeroed")
			}
			base = unsafe.SliceData(b)
		})
		return base
	}
	if got := take(usable[0]); got != first {
		t.Errorf("CPU %d got the memory released on CPU %d, not its own", usable[0], usable[1])
	}
	if got := take(usable[1]); got != second {
		t.Errorf("CPU %d did not get the memory released on it", usable[1])
	}
	if n := pool.idle(); n != 0 {
		t.Errorf("%d memories still pooled after both were taken", n)
	}
}
