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
// wazero validates a module in full (every index, type and instruction)
// only as the first step of compiling it, and what the runtime compiles is
// the metered module, which has a local, globals, types and imports the
// upload did not. Validating only that let an invalid module pass: one
// whose function sets "local 1" with a single local is valid once the
// rewriter appends its counter as local 1, and then refills its own fuel.
// So the module as uploaded is validated too, by wazero's decoder and
// validator on a runtime of its own, made for it and closed after
// (internal/wasmvalid, which stops the compilation before the engine
// starts: 0.2 s of the 14 MB Go SDK module, against the 1.1 s the
// interpreter's compilation of it cost when the validation ran it to the
// end; the interpreter is the engine only so that a module without
// functions, compiled whole, costs nothing). fuel.Instrument checks the
// indices it makes room for on its own as well (fuel.ErrIndex), so Open's
// re-metering of a stored module.wasm keeps that line even without this
// one.
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
	metered, err := fuel.Instrument(module)
	if err != nil {
		return nil, &Rejected{modcheck.CodeInvalidModule, fmt.Sprintf("the module cannot be metered: %v", err)}
	}
	return metered, nil
}
