package compile

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	goruntime "runtime"
	"strings"

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
// host's. A compilation through the on-disk cache (the runtime's
// Config.CompilationCacheDir) fails in two ways that are not the module's:
//
//   - The cache cannot be written (a full disk, a read-only directory).
//     wazero has compiled the module and registered it in memory before
//     the write fails, returns the write's error, and hands back no module:
//     its registration would stay until the runtime closes. The module is
//     compiled again, which finds that registration in memory (no disk is
//     touched), and the second reference it takes is given back at once,
//     so the module returned holds the only one and its Close releases
//     the machine code. The fault is logged once per runtime (later ones
//     at debug level): a cache that cannot be written stays so.
//   - The cache's entry for the module is damaged (wazero:
//     "compilationcache: checksum mismatch", a truncated or unreadable
//     file); wazero neither drops such an entry nor compiles without it,
//     so every later Load and Open of the module, in this process and the
//     next, would fail. See recompile.
//
// Neither ever reads as the package's invalid_module.
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
	if cacheWriteFailed(err) {
		return c.adoptUncached(ctx, wasm, err)
	}
	return c.recompile(ctx, wasm, c.cacheDir, err)
}

// cacheWriteFailed reports whether err is the failure of wazero's write of
// a compiled module to its file cache (internal/filecache's Add: every
// step works on a temporary file named <key>.<random>.tmp, then renames
// it), rather than of its read of an entry (the entry's own name) or of
// the compilation. Only after a failed write does wazero hold the module
// in memory.
func cacheWriteFailed(err error) bool {
	var perr *fs.PathError
	if errors.As(err, &perr) {
		return strings.HasSuffix(perr.Path, ".tmp")
	}
	var lerr *os.LinkError
	return errors.As(err, &lerr) && strings.HasSuffix(lerr.Old, ".tmp")
}

// adoptUncached takes over the module wazero compiled but could not write
// to the cache (cause): the compilation again finds it in memory, and one
// of the two references is given back.
func (c *Compiler) adoptUncached(ctx context.Context, wasm []byte, cause error) (wazero.CompiledModule, error) {
	compiled, err := c.wz.CompileModule(ctx, wasm)
	if err != nil {
		if c.isClosed() {
			return nil, &hostCompileError{fmt.Errorf("compile: %w", c.closedErr)}
		}
		return nil, &hostCompileError{fmt.Errorf("compilation cache %s cannot be written (%v), and the module did not compile again: %w", c.cacheDir, cause, err)}
	}
	_ = compiled.Close(ctx) // the reference the failed write left; this one stays
	level := zap.DebugLevel
	if c.writeFaultLogged.CompareAndSwap(false, true) {
		level = zap.WarnLevel
	}
	c.log.Log(level, CacheWriteFaultMessage, zap.String("cache", c.cacheDir), zap.Error(cause))
	return compiled, nil
}

// CacheWriteFaultMessage is the message of the log line of a compilation
// cache that cannot be written: at warn level the first time in a
// runtime, at debug level after.
const CacheWriteFaultMessage = "compilation cache cannot be written: modules are compiled into memory only"

// recompile handles a compilation through the cache in dir that failed
// with cause, not in its write (see compileCached): the module is
// compiled again on a scratch runtime with an empty cache of its own in
// the runtime's temporary directory (never beside the cache, whose disk
// may be full): if that fails too, the failure is the module's and comes
// back as it was. If it succeeds, the failure was the cache's: the
// scratch compilation's entry (the same key, a sound file) replaces the
// damaged one (or, across file systems, the damaged one is removed), the
// module is compiled again through the runtime's cache, and the fault is
// logged. A cache that still fails is a host error, never a rejection.
func (c *Compiler) recompile(ctx context.Context, wasm []byte, dir string, cause error) (wazero.CompiledModule, error) {
	scratch, err := os.MkdirTemp(c.scratchDir, "recompile-")
	if err != nil {
		return nil, &hostCompileError{fmt.Errorf("compilation cache %s: %v; no scratch directory to compile again without it: %w", dir, cause, err)}
	}
	defer os.RemoveAll(scratch)
	fresh, err := c.scratchCompile(ctx, wasm, scratch)
	if err != nil {
		if host := (*hostCompileError)(nil); cacheWriteFailed(err) || errors.As(err, &host) {
			return nil, &hostCompileError{fmt.Errorf("compilation cache %s: %v; the scratch compilation could not use its own cache: %w", dir, cause, err)}
		}
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
	if err != nil && cacheWriteFailed(err) {
		return c.adoptUncached(ctx, wasm, err)
	}
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
		return "", &hostCompileError{err}
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

// cacheProbeSize is what OpenCache writes to find out whether the cache can
// be written: about the size of a small module's machine code, so that a
// disk with a few blocks left counts as full.
const cacheProbeSize = 64 << 10

// OpenCache opens the compilation cache in dir and checks that it can be
// written: wazero's own check only makes the directory, and a read-only
// or full cache would otherwise be found by the first upload.
func OpenCache(dir string) (wazero.CompilationCache, error) {
	cache, err := wazero.NewCompilationCacheWithDir(dir)
	if err != nil {
		return nil, err
	}
	// wazero writes into its version directory (wazero-<version>-<arch>-<os>),
	// which may be another file system or a link.
	versions, _ := filepath.Glob(filepath.Join(dir, "wazero-*-"+goruntime.GOARCH+"-"+goruntime.GOOS))
	for _, d := range append([]string{dir}, versions...) {
		if err := probeWrite(d); err != nil {
			_ = cache.Close(context.Background())
			return nil, err
		}
	}
	return cache, nil
}

// probeWrite writes and removes a file of cacheProbeSize bytes in dir.
func probeWrite(dir string) (err error) {
	f, err := os.CreateTemp(dir, ".subako-probe-*")
	if err != nil {
		return fmt.Errorf("cannot be written: %w", err)
	}
	defer func() {
		f.Close()
		if rerr := os.Remove(f.Name()); rerr != nil && err == nil {
			err = fmt.Errorf("cannot be written: %w", rerr)
		}
	}()
	// No Sync: a full file system refuses the write itself (tmpfs, and
	// ext4 and xfs reserve blocks at write time), and a sync at every New
	// would cost every runtime a disk flush.
	if _, err := f.Write(make([]byte, cacheProbeSize)); err != nil {
		return fmt.Errorf("cannot be written: %w", err)
	}
	return nil
}
