package runtime

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"go.uber.org/zap"

	"github.com/subako/subako-runner/internal/fuel"
	"github.com/subako/subako-runner/protocol"
)

// ArtifactFormat is the version of the artifact layout this runner writes
// and opens.
const ArtifactFormat = 1

// Files of a saved artifact directory.
const (
	artifactJSON    = "artifact.json"
	artifactMetered = "metered.wasm"
)

// Artifact is the durable result of an upload: everything a later process
// needs to open the package without checking, metering or discovering it
// again. With the runtime's compilation cache on disk, opening it does not
// compile either.
//
//	pkg, _ := rt.Load(ctx, dir)          // upload: checks, metering, compile, discovery
//	_ = pkg.Artifact().Save(store)        // keep it
//	...                                   // later, in another process:
//	a, _ := runtime.ReadArtifact(store)
//	pkg, _ = rt.Open(ctx, a, dir)         // verifies the hashes, runs nothing
//
// # Notes
//
//   - Open re-verifies the package's module.wasm against ModuleSHA256 and
//     that the stored metered module is this runner's metering of it, so a
//     changed package, a corrupted or tampered store, or an artifact of
//     another runner version is refused, never run.
//   - The package directory itself is still needed: its assets are
//     mounted at /package.
type Artifact struct {
	Format int `json:"format"`
	// Runner is the runner version that made the artifact.
	Runner string `json:"runner"`
	// Name is the package's name (manifest name or file name).
	Name string `json:"name"`
	// ModuleSHA256 is the hex SHA-256 of the package's module.wasm.
	ModuleSHA256 string `json:"moduleSha256"`
	// MeteredSHA256 is the hex SHA-256 of Metered.
	MeteredSHA256 string    `json:"meteredSha256"`
	Manifest      *Manifest `json:"manifest,omitempty"`
	HasAssets     bool      `json:"hasAssets"`
	// Discover is the module's server/discover result.
	Discover json.RawMessage `json:"discover"`
	// Tools is the tool list exactly as the module sent it.
	Tools []json.RawMessage `json:"tools"`
	// Metered is the fuel-metered module that runs; Save writes it beside
	// the JSON rather than inside it.
	Metered []byte `json:"-"`
}

// Artifact returns the package's durable artifact.
func (p *Package) Artifact() *Artifact {
	tools := p.tools.Tools()
	raw := make([]json.RawMessage, len(tools))
	for i, t := range tools {
		raw[i] = t.Raw
	}
	metered := sha256.Sum256(p.checked.Metered)
	return &Artifact{
		Format:        ArtifactFormat,
		Runner:        Version,
		Name:          p.name,
		ModuleSHA256:  hex.EncodeToString(p.checked.Hash[:]),
		MeteredSHA256: hex.EncodeToString(metered[:]),
		Manifest:      p.checked.Source.Manifest,
		HasAssets:     p.checked.Source.HasAssets,
		Discover:      p.Discovery.Result.Raw,
		Tools:         raw,
		Metered:       p.checked.Metered,
	}
}

// Save writes the artifact into dir (created if needed): artifact.json and
// metered.wasm. Each file is written to a temporary name and renamed, so a
// reader never sees half an artifact file.
func (a *Artifact) Save(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	doc, err := json.MarshalIndent(a, "", "  ")
	if err != nil {
		return err
	}
	if err := writeAtomic(filepath.Join(dir, artifactMetered), a.Metered); err != nil {
		return err
	}
	return writeAtomic(filepath.Join(dir, artifactJSON), append(doc, '\n'))
}

func writeAtomic(path string, b []byte) error {
	f, err := os.CreateTemp(filepath.Dir(path), ".tmp-"+filepath.Base(path)+"-")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
	if _, err := f.Write(b); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(f.Name(), path)
}

// ReadArtifact reads an artifact saved with Save. It checks the layout and
// the metered module's hash; Open checks the package against it.
func ReadArtifact(dir string) (*Artifact, error) {
	doc, err := os.ReadFile(filepath.Join(dir, artifactJSON))
	if err != nil {
		return nil, err
	}
	a := &Artifact{}
	dec := json.NewDecoder(bytes.NewReader(doc))
	dec.DisallowUnknownFields()
	if err := dec.Decode(a); err != nil {
		return nil, fmt.Errorf("artifact %s: %v", dir, err)
	}
	if a.Format != ArtifactFormat {
		return nil, fmt.Errorf("artifact %s has format %d; this runner opens format %d (upload the package again)", dir, a.Format, ArtifactFormat)
	}
	if a.Metered, err = os.ReadFile(filepath.Join(dir, artifactMetered)); err != nil {
		return nil, err
	}
	if sum := sha256.Sum256(a.Metered); hex.EncodeToString(sum[:]) != a.MeteredSHA256 {
		return nil, fmt.Errorf("artifact %s: %s does not match its recorded hash (corrupted store?)", dir, artifactMetered)
	}
	return a, nil
}

// Open opens a package from its artifact and its directory (or bare .wasm
// file) without running it: the module's hash must match the artifact,
// the metered module is compiled (from the compilation cache when the
// runtime has one), and the stored tool list is restored. A package that
// changed since its upload is refused. When ctx ends first, the error
// wraps ctx.Err().
func (rt *Runtime) Open(ctx context.Context, a *Artifact, path string) (*Package, error) {
	started := time.Now()
	if err := canceled(ctx, "open "+path); err != nil {
		return nil, err
	}
	if a.Format != ArtifactFormat || a.Runner != Version {
		return nil, fmt.Errorf("the artifact was made by runner %s (format %d); this is runner %s (format %d): upload the package again", a.Runner, a.Format, Version, ArtifactFormat)
	}
	src, err := ReadSource(path, rt.limits.ModuleSize)
	if err != nil {
		return nil, err
	}
	hash := sha256.Sum256(src.Module)
	if src.Module == nil || hex.EncodeToString(hash[:]) != a.ModuleSHA256 {
		return nil, fmt.Errorf("%s: module.wasm does not match the artifact (sha256 %s, artifact %s): the package changed since its upload", path, hex.EncodeToString(hash[:]), a.ModuleSHA256)
	}
	// The metered module must be what this runner makes of module.wasm: a
	// store that was written to cannot plant code that escapes metering.
	// Metering is ~100 ms for a 14 MB module, a few percent of compiling it.
	metered, err := fuel.Instrument(src.Module)
	if err != nil || !bytes.Equal(metered, a.Metered) {
		return nil, fmt.Errorf("the artifact's metered module is not this runner's metering of module.wasm: upload the package again")
	}
	src.Manifest, src.HasAssets = a.Manifest, a.HasAssets
	tools := make([]protocol.Tool, len(a.Tools))
	for i, raw := range a.Tools {
		tools[i] = protocol.ParseTool(raw)
	}
	set, problems := protocol.ValidateTools(tools, 0)
	if len(problems) > 0 {
		return nil, fmt.Errorf("the artifact's tool list does not validate: %v", problems[0])
	}
	if err := canceled(ctx, "open "+path); err != nil {
		return nil, err
	}
	compiled, err := rt.wz.CompileModule(ctx, a.Metered)
	if cerr := canceled(ctx, "open "+path); cerr != nil {
		if err == nil {
			compiled.Close(context.WithoutCancel(ctx))
		}
		return nil, cerr
	}
	if err != nil {
		return nil, fmt.Errorf("compiling the artifact's module: %w", err)
	}
	p := &Package{
		rt:      rt,
		checked: &Checked{Source: src, Hash: hash, Metered: a.Metered, compiled: compiled},
		name:    a.Name,
		tools:   set,
	}
	if len(a.Discover) > 0 {
		if p.Discovery.Result, err = protocol.ParseDiscover(a.Discover); err != nil {
			compiled.Close(ctx)
			return nil, fmt.Errorf("the artifact's discover result: %v", err)
		}
	}
	rt.log.Debug("package opened from artifact", zap.String("package", a.Name), zap.Duration("duration", time.Since(started)))
	return p, nil
}
