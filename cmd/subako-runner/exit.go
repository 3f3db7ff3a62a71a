package main

import (
	"fmt"
	"strings"
)

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

// exitRow is one row of the exit-status table: the status, the words
// the package doc and the README give it, and the shorter words of the
// --help text ("" for run's own status, which --help gives apart).
type exitRow struct {
	code    int
	summary string
	help    string
}

// exitStatuses is every status a command can exit with besides `run`'s
// passing on of the module's own, in the order the docs list them.
func exitStatuses() []exitRow {
	return []exitRow{
		{exitOK, "success", "ok"},
		{exitToolError, "the tool answered `isError` (or a check failed)", "tool error or failed check"},
		{exitUsage, "usage or host error", "usage or host error"},
		{exitCrashed, "the module crashed", "module crashed"},
		{exitRejected, "the package was rejected", "package rejected"},
		{exitInterrupted, "interrupted (SIGINT or SIGTERM)", "interrupted"},
		{exitTrap, "`run`: the module trapped or ran out of memory, fuel or time", ""},
	}
}

// exitHelp is the exit-status paragraph of the root command's --help,
// made from exitStatuses and wrapped to 100 columns.
func exitHelp() string {
	var words []string
	for _, s := range exitStatuses() {
		if s.help != "" {
			words = append(words, fmt.Sprintf("%d %s,", s.code, s.help))
		}
	}
	last := words[len(words)-1]
	words[len(words)-1] = strings.TrimSuffix(last, ",") + ";"
	text := "Exit status: " + strings.Join(words, " ") + fmt.Sprintf(" run exits with the module's status (%d on a trap).", exitTrap)
	var b strings.Builder
	col := 0
	for i, w := range strings.Fields(text) {
		if i > 0 && col+1+len(w) > 100 {
			b.WriteByte('\n')
			col = 0
		} else if i > 0 {
			b.WriteByte(' ')
			col++
		}
		b.WriteString(w)
		col += len(w)
	}
	return b.String()
}
