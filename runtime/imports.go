package runtime

import "github.com/subako/subako-runner/internal/abi"

// Import is one function a module imports, named as in the module.
type Import struct {
	// Module is the import's module name, e.g. "wasi_snapshot_preview1".
	Module string
	// Name is the function's name within it, e.g. "path_open".
	Name string
}

// Imports lists the functions the module as uploaded imports, in the
// module's order (a duplicate import listed again). The host's own
// metering imports are not among them.
func (c *Checked) Imports() []Import {
	if c.remote != nil {
		return append([]Import(nil), c.imports...)
	}
	var out []Import
	for _, f := range c.compiled.ImportedFunctions() {
		module, name, _ := f.Import()
		if module == abi.ModuleFuel {
			continue
		}
		out = append(out, Import{Module: module, Name: name})
	}
	return out
}

// Imports lists the functions the package's module imports, as
// Checked.Imports.
func (p *Package) Imports() []Import { return p.checked.Imports() }
