// Package instance runs module instances: one Instance type that owns
// everything a single run has of its own (the context chain from the
// caller through the runtime's close, the deadline and the host's kill;
// its place at the admission gate; mounts, write budget, subako_http
// call, linear memory, fuel meter, stderr tail) and classifies how it
// ended, for calls, probes, discoveries and commands alike. A Session
// drives an Instance over stdio, request by request, as the host
// contract describes; a command runs one with its stdio passed through.
//
// The Engine is what a runtime's instances share, and Engine.run is the
// one place a guest module is instantiated and its _start called.
//
// It sits beneath the runtime package, which keeps the embedder's API:
// the runtime turns an Instance's crash, usage and trace events into its
// own public types, so this package is free to change with the machinery.
package instance
