// Command conformguest is a well-behaved ABI 1 package whose faults are
// switched on one by one, so that every check of `subako-runner check` can
// be seen failing (or warning) for exactly the reason it names.
//
// Faults are words in the package asset /package/faults (whitespace
// separated; "name=value" for those that take a value). Without the file the
// guest passes every check. Faults that would break discovery itself only
// act on tools/call or on a run that received no request, so discovery
// stays clean and the probes see the fault. README.md lists them.
package main

import "conformguest/serve"

func main() { serve.Main() }
