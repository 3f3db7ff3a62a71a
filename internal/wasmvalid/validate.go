package wasmvalid

import (
	"context"
	"errors"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/experimental"
)

// Validate decodes and validates module in full as a wazero runtime made
// with config does before it compiles, and returns wazero's error for a
// module it refuses, nil for one it accepts.
//
// Each call makes a runtime of its own and closes it (half a microsecond):
// a wazero runtime keeps an ID for every distinct function type it has
// compiled, for as long as it lives, so one runtime validating every
// upload would keep what each declared (670 KB for a module of 10,000
// function types no other module has, TestValidateKeepsNothing).
func Validate(ctx context.Context, config wazero.RuntimeConfig, module []byte) error {
	wz := wazero.NewRuntimeWithConfig(ctx, config)
	_, err := validate(ctx, wz, module) // closing wz closes what it compiled
	return errors.Join(err, wz.Close(ctx))
}

// validated is what validate's listener factory panics with.
type validated struct{}

// validate is wz.CompileModule stopped once wazero has decoded and
// validated module in full, before its engine compiles a single function:
// it returns nil, nil then. The error is wazero's, for a module it
// refuses. A module without functions is compiled whole (there is nothing
// to compile) and returned.
//
// wazero asks a function listener factory for each defined function's
// listener after validating the module and before the engine's
// compilation (runtime.CompileModule in wazero 1.12); the factory here
// panics, and the panic, recovered here, ends the compilation at that
// point, where nothing holds a lock or has been registered with the
// runtime but the module's function types. A panic of any other value
// goes on up. TestValidateRefuses pins the order: were a wazero release to
// ask for listeners before validating, the invalid modules with functions
// in it would pass.
func validate(ctx context.Context, wz wazero.Runtime, module []byte) (compiled wazero.CompiledModule, err error) {
	stop := experimental.FunctionListenerFactoryFunc(func(api.FunctionDefinition) experimental.FunctionListener {
		panic(validated{})
	})
	defer func() {
		if r := recover(); r != nil {
			if _, ok := r.(validated); !ok {
				panic(r)
			}
			compiled, err = nil, nil
		}
	}()
	return wz.CompileModule(experimental.WithFunctionListenerFactory(ctx, stop), module)
}
