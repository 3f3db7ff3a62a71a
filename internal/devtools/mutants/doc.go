// Package mutants keeps a list of deliberate one-line bugs in the code that
// makes security decisions — the allowlist and destination checks of
// subako_http, the write budget, the WASI path, length and link rules, the
// mount prefixes — and a test that plants each one in turn and expects the
// planted package's own tests to fail. A mutant that survives is a
// decision no test pins.
//
// Each mutant is a file, a snippet that must occur in it exactly once, and
// its replacement. TestMutantsStillApply (part of make test) keeps the list
// true to the code: a snippet that no longer occurs once fails it, so a
// refactor updates the list instead of silently dropping a mutant.
// TestMutantsAreKilled plants them, through go test -overlay (the work tree
// is never written), and runs only when SUBAKO_MUTANTS is set:
//
//	make mutants                                   # all of them
//	make mutants MUTANTS=budget                  # those whose id contains "budget"
//
// It prints the score (killed/total) and each survivor. Before the mutants
// of a package it runs the package's tests unchanged: when those fail
// already, its mutants are reported as not judged rather than as killed.
package mutants
