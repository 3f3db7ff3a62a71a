package wasmvalid

import (
	"context"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/experimental"
)

// validated is what Validate's listener factory panics with.
type validated struct{}

// Validate is wz.CompileModule stopped once wazero has decoded and
// validated module in full, before its engine compiles a single function:
// it returns nil, nil then. The error is wazero's, for a module it
// refuses. A module without functions is compiled whole (there is nothing
// to compile) and returned; the caller closes it.
//
// wazero asks a function listener factory for each defined function's
// listener after validating the module and before the engine's
// compilation (runtime.CompileModule in wazero 1.12); the factory here
// panics, and the panic, recovered here, ends the compilation at that
// point, where nothing holds a lock or has been registered with the
// runtime. A panic of any other value goes on up. TestValidateRefuses pins
// the order: were a wazero release to ask for listeners before validating,
// the invalid modules with functions in it would pass.
func Validate(ctx context.Context, wz wazero.Runtime, module []byte) (compiled wazero.CompiledModule, err error) {
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
