package limits_test

import (
	"fmt"

	"github.com/subako/subako-runner/limits"
)

// Per-call limits start from the ABI 1 defaults; flags are parsed with
// ParseSize and ParseDuration.
func ExampleDefault() {
	l := limits.Default()
	mem, _ := limits.ParseSize("64MiB")
	l.Memory = mem
	timeout, _ := limits.ParseDuration("5s")
	l.CallTimeout = timeout
	fmt.Println(limits.FormatSize(l.Memory), l.CallTimeout, limits.FormatSize(l.WriteBudget))
	// Output: 64MiB 5s 1GiB
}
