// Package admission is the gate every module instance of a runtime passes
// (calls, probes, discoveries, commands): it bounds how many run at once,
// queues the others, and is what Runtime.Close shuts, ending the contexts
// of those it admitted so that a shutdown reads as the host's, never as a
// module's crash.
//
// It is apart from the runtime because it is one concurrency contract,
// tested on its own, that the instance code only needs three verbs of:
// Admit, Done and End.
package admission
