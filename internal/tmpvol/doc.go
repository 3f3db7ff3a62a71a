// Package tmpvol is the pool of the /volume/tmp directories one runtime
// hands its calls: each call gets a fresh, empty directory, made before
// the call asks, and gives it back through Release, which reuses one the
// call never touched and removes any other off the caller's path. A
// runtime holds a lock on its own directory under the root for as long
// as it is open, and one that starts sweeps the directories of runtimes
// that died without cleaning up.
//
// It is a package of its own because it is one job, with its own
// platform files (flock, stat stamps) and its own failure modes, that
// the runtime's API only needs four verbs of: Get, Release, Owns and
// Overlap.
package tmpvol
