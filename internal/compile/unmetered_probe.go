//go:build subakoprobe

package compile

// DisableMeteringForTests makes every later Meter return the module as it
// is: both metering lines (fuel and the deadline's tick) are gone, so only
// what is outside the process (the worker's parent and its kill) can stop
// a guest that loops. It exists only in builds with the subakoprobe tag,
// which the tests of the process layer use; no release build has it.
func (c *Compiler) DisableMeteringForTests() { c.unmetered.Store(true) }
