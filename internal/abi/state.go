package abi

import (
	"errors"
	"fmt"
)

// ErrNoState is the one rule for a host function that runs without its
// instance's state in the context (an embedder's wiring mistake: the
// runtime always attaches all of it): the function panics with a
// *NoStateError, wazero recovers it, and the call of the instance fails
// with that error (errors.Is(err, ErrNoState)). The guest runs no further
// and the process does not crash; nothing runs unmetered, unconfined or
// with state shared between instances.
var ErrNoState = errors.New("host function called without its instance's state")

// NoStateError says which host function ran without which state.
type NoStateError struct {
	Module, Function string
	// Attach names the function that attaches the missing state.
	Attach string
}

func (e *NoStateError) Error() string {
	return fmt.Sprintf("%s.%s: %v; attach it to the context of InstantiateModule and of every call with %s", e.Module, e.Function, ErrNoState, e.Attach)
}

// Is makes errors.Is(err, ErrNoState) true.
func (e *NoStateError) Is(target error) bool { return target == ErrNoState }

// NoState ends the running host function by the rule of ErrNoState.
func NoState(module, function, attach string) {
	panic(&NoStateError{Module: module, Function: function, Attach: attach})
}
