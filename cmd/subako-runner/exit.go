package main

// The exit statuses, kept here once: docs/cli.md's table, the package doc
// and the README's summary are tested against exitStatuses
// (TestExitStatusesAreDocumented), so a status added here and not there,
// or there and not here, fails.
const (
	exitOK        = 0
	exitToolError = 1 // also: a check failed
	exitUsage     = 2 // also: the host could not work
	exitCrashed   = 3
	exitRejected  = 4
	// exitInterrupted is the status of a command stopped by SIGINT or
	// SIGTERM (main ends the command's context on either): 128 + SIGINT,
	// as a shell reports a process Ctrl-C killed. Nothing is said about
	// the module.
	exitInterrupted = 130
	// exitTrap is run's status when the module trapped or ran out of
	// memory, fuel or time, as `wasmtime run` exits on a trap.
	exitTrap = 134
)

// exitRow is one row of the exit-status table: the status and the
// words the package doc and the README give it.
type exitRow struct {
	code    int
	summary string
}

// exitStatuses is every status a command can exit with besides `run`'s
// passing on of the module's own, in the order the docs list them.
func exitStatuses() []exitRow {
	return []exitRow{
		{exitOK, "success"},
		{exitToolError, "the tool answered `isError` (or a check failed)"},
		{exitUsage, "usage or host error"},
		{exitCrashed, "the module crashed"},
		{exitRejected, "the package was rejected"},
		{exitInterrupted, "interrupted (SIGINT or SIGTERM)"},
		{exitTrap, "`run`: the module trapped or ran out of memory, fuel or time"},
	}
}
