package modcheck

import (
	"github.com/subako/subako-runner/internal/abi"
	"github.com/subako/subako-runner/internal/wasmbin"
)

// lookupImport finds the host function an upload imports, in the table
// the host modules are defined from. moduleKnown is false for any module
// an upload may not import from, the metering module included.
func lookupImport(module, name string) (f abi.Func, moduleKnown, ok bool) {
	if !abi.Importable(module) {
		return abi.Func{}, false, false
	}
	return abi.Lookup(module, name)
}

func funcType(f abi.Func) wasmbin.FuncType {
	return wasmbin.FuncType{Params: vals(f.Params()), Results: vals(f.Results())}
}

func vals(ts []byte) []wasmbin.ValType {
	if len(ts) == 0 {
		return nil
	}
	out := make([]wasmbin.ValType, len(ts))
	for i, t := range ts {
		out[i] = wasmbin.ValType(t)
	}
	return out
}
