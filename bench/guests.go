package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/subako/subako-runner/internal/devtools/testguest"
	"github.com/subako/subako-runner/protocol"
	"github.com/subako/subako-runner/runtime"
)

// goPackage builds the Go guest at testdata/guests/<name> (cached by
// internal/devtools/testguest) and assembles a package directory for it under work:
// a manifest and the module, no assets.
func goPackage(work, name string) (string, error) {
	module, err := testguest.BuildGo(filepath.Join("testdata", "guests", name))
	if err != nil {
		return "", fmt.Errorf("building the %s guest: %w", name, err)
	}
	return packageDir(work, name, module)
}

// packageDir assembles a package directory named name under work from a
// module file.
func packageDir(work, name, module string) (string, error) {
	b, err := os.ReadFile(module)
	if err != nil {
		return "", err
	}
	dir := filepath.Join(work, "pkg-"+name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	manifest := fmt.Sprintf(`{"abi":1,"name":%q,"version":"0.1.0"}`, name)
	if err := os.WriteFile(filepath.Join(dir, runtime.ManifestFile), []byte(manifest), 0o644); err != nil {
		return "", err
	}
	if err := os.WriteFile(filepath.Join(dir, runtime.ModuleFile), b, 0o644); err != nil {
		return "", err
	}
	return dir, nil
}

// loadIn makes a runtime with cfg and loads the package at dir in it;
// closing it closes both.
func loadIn(ctx context.Context, cfg runtime.Config, dir string) (*runtime.Package, func(), error) {
	rt, err := runtime.New(ctx, cfg)
	if err != nil {
		return nil, nil, err
	}
	pkg, err := rt.Load(ctx, dir)
	if err != nil {
		rt.Close(ctx)
		return nil, nil, err
	}
	return pkg, func() { pkg.Close(ctx); rt.Close(ctx) }, nil
}

// callLine is the stdin of one call as the runtime writes it: a tools/call
// request line (the host then closes stdin once it has the answer).
func callLine(tool string, args json.RawMessage) ([]byte, error) {
	params, err := protocol.ToolsCallParams(tool, args)
	if err != nil {
		return nil, err
	}
	return protocol.EncodeRequest(protocol.StringID("bench-1"), protocol.MethodToolsCall, params,
		protocol.ClientInfo{Name: "subako", Version: runtime.Version})
}
