// Package conformance is the conformance suite behind `subako-runner check`:
// it judges a third-party ABI 1 package item by item, the way a linter does,
// so that its author (or an operator judging a module nobody on the team
// wrote) learns what is wrong and how to fix it before uploading.
//
// Run takes a runtime.Runtime and a package path and returns a Report: the
// upload checks, discovery (twice, to see that it is deterministic), and a
// set of probes, each a fresh instance of the module: end of input without a
// request, exit after an answer, notifications, request ids of every form,
// tools/call with empty, invalid and generated valid arguments, an unknown
// tool, optional example arguments. Each finding is a Check with a stable
// id, a title naming the item of ABI 1's checklist (1–9, in docs/cli.md) it
// belongs to, a
// status (pass, warn, fail, skip) and a detail naming the evidence: the line
// the module wrote, the crash code, the tail of its stderr, the numbers.
//
// A failed check means the host would refuse the package or the model would
// be told that the function crashed in normal use. A warning is something
// the host tolerates but the author should change: a field the official MCP
// 2026-07-28 schema requires, behaviour that only breaks under inputs the
// host never sends (an unknown tool, ids beyond 2^53), resources close to a
// limit. A skip says why a check could not be judged.
//
// A Report renders as a human checklist (WriteHuman), as the JSON document
// of cli.md (WriteJSON) and as JUnit XML for CI systems (WriteJUnit).
package conformance
