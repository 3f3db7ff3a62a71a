package compile

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/tetratelabs/wazero"
	"go.uber.org/zap"
)

// hostCompileError is a compilation that failed for the host's reasons
// (the runtime closed, the compilation cache broke), not the module's:
// compileWith returns err as it is, never as an invalid_module rejection.
type hostCompileError struct{ err error }

func (e *hostCompileError) Error() string { return e.err.Error() }
func (e *hostCompileError) Unwrap() error { return e.err }

// compileCached is wz.CompileModule with the faults of the host kept the
// host's. A compilation through the on-disk cache (the runtime's Config.CompilationCacheDir)
// fails when the cache's entry for the module is damaged (wazero:
// "compilationcache: checksum mismatch", a truncated or unreadable file)
// or cannot be written; wazero neither drops such an entry nor compiles
// without it, so every later Load and Open of the module, in this process
// and the next, would fail, and the failure would read as the package's
// invalid_module.
//
// So when a compilation through the cache fails, the module is compiled
// again on a scratch runtime with an empty cache of its own: if that fails
// too, the failure is the module's and comes back as it was. If it
// succeeds, the failure was the cache's: the scratch compilation's entry
// (the same key, a sound file) replaces the damaged one, the module is
// compiled again through the runtime's cache, and the fault is logged. A
// cache that still fails is a host error, never a rejection.
func (c *Compiler) compileCached(ctx context.Context, wz wazero.Runtime, wasm []byte) (wazero.CompiledModule, error) {
	compiled, err := wz.CompileModule(ctx, wasm)
	if err == nil {
		return compiled, nil
	}
	if c.isClosed() {
		return nil, &hostCompileError{fmt.Errorf("compile: %w", c.closedErr)}
	}
	if wz != c.wz || c.cacheDir == "" {
		return nil, err
	}
	return c.recompile(ctx, wasm, c.cacheDir, err)
}

// recompile handles a compilation through the cache in dir that failed
// with cause (see compileCached).
func (c *Compiler) recompile(ctx context.Context, wasm []byte, dir string, cause error) (wazero.CompiledModule, error) {
	// The scratch cache sits beside the real one when it can (a rename
	// then moves its entry across), in the temporary directory otherwise.
	scratch, err := os.MkdirTemp(dir, ".recompile-")
	if err != nil {
		if scratch, err = os.MkdirTemp("", "subako-recompile-"); err != nil {
			return nil, &hostCompileError{fmt.Errorf("compilation cache %s: %v; no scratch directory to compile again without it: %w", dir, cause, err)}
		}
	}
	defer os.RemoveAll(scratch)
	fresh, err := c.scratchCompile(ctx, wasm, scratch)
	if err != nil {
		return nil, cause // the module's own failure, with or without a cache
	}
	entry := ""
	replaced := false
	if fresh != "" {
		rel, _ := filepath.Rel(scratch, fresh)
		entry = filepath.Join(dir, rel)
		if replaced = os.Rename(fresh, entry) == nil; !replaced {
			// A directory in the entry's place, or another file system:
			// drop the damaged entry; the compilation writes a new one.
			if err := os.RemoveAll(entry); err == nil {
				replaced = os.Rename(fresh, entry) == nil
			}
		}
	}
	compiled, err := c.wz.CompileModule(ctx, wasm)
	if err != nil {
		if c.isClosed() {
			return nil, &hostCompileError{fmt.Errorf("compile: %w", c.closedErr)}
		}
		return nil, &hostCompileError{fmt.Errorf("compilation cache %s: the module compiles without it, but not through it (%v; again: %w): remove the cache's damaged entry", dir, cause, err)}
	}
	c.log.Warn("compilation cache failed for a module that compiles: its entry was replaced and the module compiled again",
		zap.String("cache", dir), zap.String("entry", entry), zap.Bool("replaced", replaced), zap.Error(cause))
	return compiled, nil
}

// scratchCompile compiles wasm on a runtime of its own whose cache is in
// scratch, and returns the path of the one entry that compilation wrote
// there ("" when it wrote none).
func (c *Compiler) scratchCompile(ctx context.Context, wasm []byte, scratch string) (string, error) {
	cache, err := wazero.NewCompilationCacheWithDir(scratch)
	if err != nil {
		return "", err
	}
	defer cache.Close(ctx)
	wz := wazero.NewRuntimeWithConfig(ctx, RuntimeConfig().WithCompilationCache(cache))
	defer wz.Close(ctx)
	compiled, err := wz.CompileModule(ctx, wasm)
	if err != nil {
		return "", err
	}
	_ = compiled.Close(ctx)
	var entry string
	found := errors.New("found")
	err = filepath.WalkDir(scratch, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Type().IsRegular() {
			entry = p
			return found
		}
		return nil
	})
	if err != nil && err != found {
		return "", nil
	}
	return entry, nil
}
