// Command subako-runner is the command-line face of the subako-runner
// library: it validates, discovers, calls and conformance-checks ABI 1
// packages, and runs plain WASI preview 1 commands under the same host.
//
//	subako-runner validate PACKAGE
//	subako-runner discover PACKAGE
//	subako-runner call PACKAGE TOOL [ARGS_JSON]
//	subako-runner mcp PACKAGE
//	subako-runner inspect PACKAGE
//	subako-runner check PACKAGE
//	subako-runner run MODULE [ARG...]
//	subako-runner version
//	subako-runner init NAME
//	subako-runner completion bash|zsh|fish|powershell
//
// Exit status: 0 success, 1 the tool answered `isError` (or a check
// failed), 2 usage or host error, 3 the module crashed, 4 the package was
// rejected, 130 interrupted (SIGINT or SIGTERM), 134 `run`: the module
// trapped or ran out of memory, fuel or time. Otherwise `run` exits with
// the module's own status. See docs/cli.md.
package main
