package compile

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/subako/subako-runner/internal/modcheck"
	"github.com/subako/subako-runner/internal/wasmbin/wasmtest"
)

// Validate's three answers: nil for a valid module, an invalid_module
// rejection for one wazero refuses, and the runtime's closed error, with
// nothing validated, once the runtime has begun to close.
func TestValidateAnswers(t *testing.T) {
	errClosed := errors.New("closed")
	valid := wasmtest.Module{Bodies: [][]byte{{0x41, 0x01, 0x1a}}}.Bytes() // i32.const 1; drop
	invalid := wasmtest.Module{Bodies: [][]byte{{0x6a}}}.Bytes()           // i32.add on an empty stack
	tests := []struct {
		name     string
		closed   bool
		module   []byte
		rejected bool
		isClosed bool
	}{
		{"valid", false, valid, false, false},
		{"invalid", false, invalid, true, false},
		{"closed, invalid module", true, invalid, false, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := New(Config{IsClosed: func() bool { return tt.closed }, Closed: errClosed})
			err := c.Validate(context.Background(), tt.module, time.Minute)
			var rej *Rejected
			if got := errors.As(err, &rej) && rej.Code == modcheck.CodeInvalidModule; got != tt.rejected {
				t.Fatalf("Validate: %v; want an invalid_module rejection %v", err, tt.rejected)
			}
			if got := errors.Is(err, errClosed); got != tt.isClosed {
				t.Fatalf("Validate: %v; want the closed error %v", err, tt.isClosed)
			}
			if !tt.rejected && !tt.isClosed && err != nil {
				t.Fatalf("Validate: %v; want it accepted", err)
			}
		})
	}
}
