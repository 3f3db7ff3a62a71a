// Package testguest builds the Go guest modules under testdata/ for tests,
// with GOOS=wasip1, once per source tree: the result is cached by a hash of
// the sources, the Go version and the build flags, so a test run pays for
// each guest's link step only the first time.
//
// It is test support: nothing outside _test.go files imports it.
package testguest
