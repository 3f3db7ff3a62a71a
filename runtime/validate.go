package runtime

import (
	"context"
	"crypto/sha256"
	"fmt"
	"sync"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"

	"github.com/subako/subako-runner/internal/fuel"
	"github.com/subako/subako-runner/limits"
)

// validators holds the wazero runtime that validates modules as uploaded.
//
// wazero validates a module in full (every index, type and instruction)
// only as the first step of compiling it, and what the runtime compiles is
// the metered module, which has a local, globals, types and imports the
// upload did not. Validating only that let an invalid module pass: one
// whose function sets "local 1" with a single local is valid once the
// rewriter appends its counter as local 1, and then refills its own fuel.
// So the module as uploaded is compiled once more, by wazero's interpreter
// (the same decoder and validator as its compiler, and the cheapest
// engine: 1.3 s of a 14 MB Go module's 8 s compile on this machine), and
// the result is thrown away. fuel.Instrument checks the indices it makes
// room for on its own as well (fuel.ErrIndex), so Open's re-metering of a
// stored module.wasm keeps that line even without this one.
type validators struct {
	once sync.Once
	wz   wazero.Runtime
	mu   sync.Mutex // guards closed against a first use racing Close
	done bool
}

func (v *validators) get(ctx context.Context) wazero.Runtime {
	v.once.Do(func() {
		v.mu.Lock()
		defer v.mu.Unlock()
		if v.done {
			return
		}
		v.wz = wazero.NewRuntimeWithConfig(context.WithoutCancel(ctx), wazero.NewRuntimeConfigInterpreter().
			WithCoreFeatures(api.CoreFeaturesV2).WithMemoryLimitPages(65536))
	})
	return v.wz
}

func (v *validators) close(ctx context.Context) error {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.done = true
	if v.wz == nil {
		return nil
	}
	return v.wz.Close(ctx)
}

// validateModule validates module as uploaded, in full, as wazero's
// compiler would: a module it refuses is an invalid_module rejection
// naming what is wrong and where.
func (rt *Runtime) validateModule(ctx context.Context, module []byte, lim limits.Limits) error {
	wz := rt.validators.get(ctx)
	if wz == nil {
		return closedError("validate") // the runtime closed first
	}
	c, err := rt.compileWith(ctx, wz, module, lim.CompileTimeout, "the module is not valid WebAssembly")
	if err != nil {
		return err
	}
	return c.Close(context.WithoutCancel(ctx))
}

// meter validates module as uploaded and injects fuel metering: every
// module the runtime meters passes through here.
//
// A module this host metered before at this metering version (a record in
// rt.meterings, kept beside the compilation cache) was validated then, and
// is not validated again: the records are as trusted as the machine code
// next to them.
func (rt *Runtime) meter(ctx context.Context, module []byte, lim limits.Limits) ([]byte, error) {
	if !rt.meterings.known(sha256.Sum256(module), fuel.MeteringVersion) {
		endValidate := phase(ctx, "validate")
		err := rt.validateModule(ctx, module, lim)
		endValidate()
		if err != nil {
			return nil, err
		}
	}
	defer phase(ctx, "meter")()
	metered, err := fuel.Instrument(module)
	if err != nil {
		return nil, &RejectedError{Rejections: []Rejection{{CodeInvalidModule, fmt.Sprintf("the module cannot be metered: %v", err)}}}
	}
	return metered, nil
}
