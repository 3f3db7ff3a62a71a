//go:build !linux

package sandbox

import "runtime"

// Enter locks nothing down outside Linux: every layer here is a Linux
// kernel feature. The Report says so, line by line, and is not Complete.
func Enter(cfg Config) (Report, error) {
	why := "not available on " + runtime.GOOS + " (Linux only)"
	return Report{Missing: []string{
		"no_new_privs: " + why,
		"rlimits: " + why,
		"landlock: " + why,
		"landlock_net: " + why,
		"seccomp: " + why,
	}}, nil
}
