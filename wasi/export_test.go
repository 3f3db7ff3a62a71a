package wasi

// ExitCodeAborted is exitCodeAborted for the external tests.
const ExitCodeAborted = exitCodeAborted
