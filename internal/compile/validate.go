package compile

import (
	"context"
	"crypto/sha256"
	"fmt"
	"time"

	"github.com/tetratelabs/wazero"

	"github.com/subako/subako-runner/internal/fuel"
	"github.com/subako/subako-runner/internal/modcheck"
	"github.com/subako/subako-runner/internal/wasmvalid"
)

// Validate validates module as uploaded, in full, as wazero's compiler
// would: a module it refuses is an invalid_module rejection naming what
// is wrong and where.
//
// The runtime compiles the metered module, whose added local, globals,
// types and imports can make an invalid upload valid (a function that sets
// "local 1" with one local would set the meter's counter): the upload is
// refused here first. wazero validates only as the first step of compiling,
// so internal/wasmvalid compiles on a runtime of its own and stops before
// the engine starts, on the interpreter so that a module without functions
// costs nothing (measured in docs/RATIONALE.md, "Why two lines for the time
// limit…"). fuel.Instrument refuses the indices it gives a meaning to on its
// own as well (fuel.ErrIndex), for the re-metering that skips this.
func (c *Compiler) Validate(ctx context.Context, module []byte, timeout time.Duration) error {
	if c.isClosed != nil && c.isClosed() {
		return fmt.Errorf("validate: %w", c.closedErr)
	}
	module, err := engineBytes(module) // customs.go
	if err != nil {
		return err
	}
	config := wazero.NewRuntimeConfigInterpreter().WithCoreFeatures(features).WithMemoryLimitPages(maxPages).WithDebugInfoEnabled(false)
	_, err = c.compileWith(ctx, timeout, "the module is not valid WebAssembly", func(ctx context.Context) (wazero.CompiledModule, error) {
		return nil, wasmvalid.Validate(ctx, config, module)
	})
	return err
}

// Meter validates module as uploaded and injects fuel metering: every
// module the runtime meters passes through here.
//
// A module this host metered before at this metering version (Config.Known:
// the runtime's records, kept beside the compilation cache) was validated
// then, and is not validated again: the records are as trusted as the
// machine code next to them.
func (c *Compiler) Meter(ctx context.Context, module []byte, timeout time.Duration) ([]byte, error) {
	if c.known != nil && c.known(sha256.Sum256(module)) {
		return c.meter(ctx, module)
	}
	// Validation and metering read the same bytes and need nothing of
	// each other, so the rewrite runs beside wazero's validation (on the
	// SDK module, the two longest steps of an upload before the compile);
	// its output is used only once the module as uploaded is valid. The
	// rewriter takes any bytes (FuzzInstrument).
	type result struct {
		metered []byte
		err     error
	}
	metering := make(chan result, 1)
	endValidate := c.phase(ctx, "validate") // begun first: the phases are listed so
	go func() {
		metered, err := c.meter(ctx, module)
		metering <- result{metered, err}
	}()
	err := c.Validate(ctx, module, timeout)
	endValidate()
	r := <-metering
	if err != nil {
		return nil, err
	}
	return r.metered, r.err
}

// meter is fuel.Instrument, timed as the upload's "meter" phase.
func (c *Compiler) meter(ctx context.Context, module []byte) ([]byte, error) {
	defer c.phase(ctx, "meter")()
	if c.unmetered.Load() {
		return module, nil // a test build's worker, proving the process layer alone stops a guest
	}
	metered, err := fuel.Instrument(module)
	if err != nil {
		return nil, &Rejected{modcheck.CodeInvalidModule, fmt.Sprintf("the module cannot be metered: %v", err)}
	}
	return metered, nil
}
