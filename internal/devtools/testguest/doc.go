// Package testguest builds the Go guest modules under testdata/ for tests,
// with GOOS=wasip1, once per source tree: the result is cached by a hash of
// the sources, the Go version and the build flags, so a test run pays for
// each guest's link step only the first time.
//
// It also assembles package directories for tests and shares a compilation
// cache between the passes of make test. It is test support: only tests and
// the bench/ harness import it.
package testguest
