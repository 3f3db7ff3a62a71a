// Command subako-runner is the command-line face of the subako-runner
// library: it validates, discovers, calls and conformance-checks ABI 1
// packages, and runs plain WASI preview 1 commands under the same host.
//
//	subako-runner validate PACKAGE
//	subako-runner discover PACKAGE
//	subako-runner call PACKAGE TOOL [ARGS_JSON]
//	subako-runner run MODULE [ARG...]
//	subako-runner check PACKAGE
//	subako-runner version
//	subako-runner completion bash|zsh|fish
//
// Exit status: 0 success, 1 tool error, 2 usage or host error, 3 the module
// crashed, 4 the package was rejected. See docs/cli.md.
package main
