package main

import (
	"context"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"

	"github.com/subako/subako-runner/internal/wasmbin"
	"github.com/subako/subako-runner/runtime"
)

// benchEstimate measures only the rows of the package set's estimate
// (benchCost) for the C, Go SDK and popcnt-heavy packages, without the
// many measure's worker and Zipf runs: the check of the compile cost
// model's machine code bytes (internal/modcheck.CodeBytes).
func benchEstimate(ctx context.Context, o options, t *table) error {
	m := o.many
	m.cPackages, m.goPackages = min(m.cPackages, m.costC), min(m.goPackages, m.costGo)
	sdkDir, err := goPackage(o.work, "sdkgreet")
	if err != nil {
		return err
	}
	cache := filepath.Join(o.work, "estimate-cache")
	store := runtime.DirLoader{Artifacts: filepath.Join(o.work, "estimate-artifacts"), Packages: filepath.Join(o.work, "estimate-packages")}
	cKeys, goKeys, popcntKeys, err := storeMany(ctx, m, cache, store, sdkDir)
	if err != nil {
		return fmt.Errorf("storing: %w", err)
	}
	return benchCost(ctx, m, t, cache, store, cKeys, goKeys, popcntKeys)
}

// popcntPackage writes, in a temporary directory, the C greet package with
// one more function: a live chain of n i8x16.popcnt (2 bytes each, about
// 83 bytes of machine code each), stored to memory so that the compiler
// keeps it. It returns the directory.
func popcntPackage(work string, n int) (string, error) {
	module, err := os.ReadFile(filepath.Join("testdata", "packages", "cgreet", runtime.ModuleFile))
	if err != nil {
		return "", err
	}
	body := []byte{0x00, 0x41, 0x00, 0xfd, 0x0c} // no locals; i32.const 0; v128.const
	body = append(body, make([]byte, 16)...)
	for range n {
		body = append(body, 0xfd, 0x62)
	}
	body = append(body, 0xfd, 0x0b, 0x04, 0x00, 0x0b) // v128.store; end
	out, err := appendFunction(module, body)
	if err != nil {
		return "", err
	}
	dir := filepath.Join(work, fmt.Sprintf("popcnt%d", n))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	return dir, os.WriteFile(filepath.Join(dir, runtime.ModuleFile), out, 0o644)
}

// appendFunction adds a function of type () -> () with body (its locals
// and code) to module: a new type, its entry in the function section and
// the body in the code section.
func appendFunction(module, body []byte) ([]byte, error) {
	secs, err := wasmbin.ReadSections(module)
	if err != nil {
		return nil, err
	}
	out := append([]byte(nil), module[:wasmbin.HeaderSize]...)
	var types uint64
	for _, s := range secs {
		if s.ID == wasmbin.SectionCustom {
			out = append(out, module[s.Offset:s.End]...)
			continue
		}
		n, k := binary.Uvarint(s.Content)
		if k <= 0 {
			return nil, fmt.Errorf("section %d: bad count", s.ID)
		}
		content := wasmbin.AppendU32(nil, uint32(n+1))
		content = append(content, s.Content[k:]...)
		switch s.ID {
		case wasmbin.SectionType:
			types = n
			content = wasmbin.AppendFuncType(content, wasmbin.FuncType{})
		case wasmbin.SectionFunction:
			content = wasmbin.AppendU32(content, uint32(types))
		case wasmbin.SectionCode:
			content = wasmbin.AppendU32(content, uint32(len(body)))
			content = append(content, body...)
		default:
			out = append(out, module[s.Offset:s.End]...)
			continue
		}
		out = wasmbin.AppendSection(out, s.ID, content)
	}
	return out, nil
}
