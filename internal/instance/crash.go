package instance

import (
	"errors"
	"fmt"

	"github.com/subako/subako-runner/protocol"
)

// Crash reasons of docs/abi.md §6 that the instance finds itself (the
// protocol layer owns the others); the runtime's Crash constants are
// these values.
const (
	ReasonExitedBeforeResponse = "exited_before_response"
	ReasonExitCode             = "exit_code"
	ReasonExitTimeout          = "exit_timeout"
	ReasonTrap                 = "trap"
	ReasonOutOfMemory          = "out_of_memory"
	ReasonOutOfFuel            = "out_of_fuel"
	ReasonTimeout              = "timeout"
)

// Crash is how a run broke the rules of docs/abi.md §6; the runtime hands
// it to the embedder as its own Crash.
type Crash struct {
	Reason, Message, Stderr string
}

// Error makes a Crash the error that ends the guest's fd_write.
func (c *Crash) Error() string { return fmt.Sprintf("module crashed (%s): %s", c.Reason, c.Message) }

// MaxCrashMessage bounds Crash.Message. The messages quote what the guest
// sent through protocol's builders, each quote cut far shorter; this is
// the backstop that keeps any message, whatever it quotes, from carrying
// a guest's megabytes into logs, reports and the model's context.
const MaxCrashMessage = 2048

// ErrMessage is the message of a protocol error without its code (the
// crash carries the code), or err's text.
func ErrMessage(err error) string {
	var perr *protocol.Error
	if errors.As(err, &perr) {
		return perr.Message
	}
	return err.Error()
}
