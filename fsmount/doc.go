// Package fsmount names the host directories a module sees (its preopened
// mounts, in the order of ABI 1) and confines every access to them.
//
// Confinement is built on os.Root: every path is resolved by the kernel one
// component at a time beneath the mount's directory fd, so no path leaves its
// mount by "..", by an absolute or relative symbolic link (whoever created
// it), or by naming a file outside. String prefix checks are used only to
// choose which mount a guest path belongs to, never to decide whether a host
// path is allowed.
//
// The WASI layer (package wasi) uses the roots of a Set directly; the
// runtime uses OpenFile and Stat to reach files a module named in its output
// (resource links) or in subako_http requests. Either way the Set records
// which mounts were touched, so that the runtime can give an untouched
// /volume/tmp to the next call without looking at it again.
//
// Lock serialises, per host directory, what can carry a symbolic link to
// another depth (the WASI layer's link rule), across every Set, Runtime and
// process using the directory: it is flock(2) on the directory.
//
// RemoveAll removes a volume a guest filled, whatever its depth, without
// following links, and reports what it could not remove.
package fsmount
