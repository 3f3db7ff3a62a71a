package runtime

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/tetratelabs/wazero"
	"go.uber.org/zap"

	"github.com/subako/subako-runner/internal/fuel"
	"github.com/subako/subako-runner/internal/modcheck"
	"github.com/subako/subako-runner/internal/regfile"
	"github.com/subako/subako-runner/limits"
	"github.com/subako/subako-runner/protocol"
)

// ArtifactFormat is the version of the artifact layout this runner writes
// and opens. Format 2 added the integrity record (Artifact.SHA256). An
// artifact of format 1 (artifactFormatUnsealed) still opens as it did (an
// upgrade never asks for uploads again), its metered module verified as
// ever but its tool list taken as stored; Opened.Unsealed says so, and
// Package.Artifact is the sealed artifact to save in its place.
const ArtifactFormat = 2

// artifactFormatUnsealed is the format before the integrity record.
const artifactFormatUnsealed = 1

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
//   - An artifact stays valid across runner versions: Runner is a record,
//     not a condition. What matters is Metering, the version of the fuel
//     rewriter that made Metered: an artifact of another metering version
//     is metered again from module.wasm when it is opened (Package.Opened
//     says so), never refused for it and never run as stored.
//   - Open re-verifies the package's module.wasm against ModuleSHA256, and
//     runs the stored metered module only when this host derived that very
//     module from that module.wasm itself; otherwise it meters module.wasm
//     again and refuses a stored module that differs. A changed package or
//     a corrupted or tampered store is refused or ignored, never run.
//   - The package directory itself is still needed: its assets are
//     mounted at /package.
type Artifact struct {
	Format int `json:"format"`
	// Runner is the runner version that made the artifact (a record: Open
	// does not compare it with its own).
	Runner string `json:"runner"`
	// Metering is the fuel.MeteringVersion of the rewriter that made
	// Metered; 0 in artifacts made before it was recorded.
	Metering int `json:"metering,omitempty"`
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
	// Key is the key the artifact was stored under (DirLoader.Save), so
	// that a store holding another key's artifact is told apart from a
	// package that changed; "" when it was saved otherwise.
	Key string `json:"key,omitempty"`
	// SHA256 is the artifact's integrity record: the hex SHA-256 of every
	// other field, as compact JSON (Metered through MeteredSHA256), so of
	// everything Open restores. An artifact whose record does not match is
	// refused: its metadata was changed.
	SHA256 string `json:"sha256"`
	// Metered is the fuel-metered module that runs; Save writes it beside
	// the JSON rather than inside it.
	Metered []byte `json:"-"`

	// sum is the SHA-256 ReadArtifact computed of hashed, the slice it
	// read; Open reuses it while Metered is still that slice.
	sum    [sha256.Size]byte
	hashed []byte
}

// meteredSum returns the SHA-256 of a.Metered, computed once.
func (a *Artifact) meteredSum() [sha256.Size]byte {
	if len(a.Metered) > 0 && len(a.hashed) == len(a.Metered) && &a.hashed[0] == &a.Metered[0] {
		return a.sum
	}
	a.sum, a.hashed = sha256.Sum256(a.Metered), a.Metered
	return a.sum
}

// Artifact returns the package's durable artifact.
func (p *Package) Artifact() *Artifact {
	tools := p.tools.Tools()
	raw := make([]json.RawMessage, len(tools))
	for i, t := range tools {
		raw[i] = t.Raw
	}
	metered := sha256.Sum256(p.checked.metered)
	a := &Artifact{
		Format:        ArtifactFormat,
		Runner:        Version,
		Metering:      fuel.MeteringVersion,
		Name:          p.name,
		ModuleSHA256:  hex.EncodeToString(p.checked.Hash[:]),
		MeteredSHA256: hex.EncodeToString(metered[:]),
		Manifest:      p.checked.Source.Manifest,
		HasAssets:     p.checked.Source.HasAssets,
		Discover:      p.discovery.Result.Raw,
		Tools:         raw,
		Metered:       p.checked.metered,
	}
	a.seal()
	return a
}

// digest is what SHA256 must be: the SHA-256 of the artifact's other
// fields as compact JSON. json.Marshal compacts the raw messages (the
// discover result, the tools), so the indentation Save adds is not part
// of it.
func (a *Artifact) digest() string {
	c := *a
	c.SHA256, c.Metered, c.hashed = "", nil, nil
	b, err := json.Marshal(&c)
	if err != nil {
		return "" // a raw message that is not JSON: no record matches it
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// seal sets the integrity record after the fields were set.
func (a *Artifact) seal() { a.SHA256 = a.digest() }

// errMetadataChanged is the refusal of an artifact whose integrity record
// does not match its fields.
var errMetadataChanged = errors.New("the artifact's metadata was changed: its integrity record does not match (a corrupted or edited store); upload the package again")

// checkIntegrity refuses an artifact whose metadata is not what its
// integrity record says.
func (a *Artifact) checkIntegrity() error {
	if want := a.digest(); want == "" || a.SHA256 != want {
		return errMetadataChanged
	}
	return nil
}

// errOtherPackage is the refusal of an artifact that belongs to another
// package than the one it was loaded for: the store, not the package, is
// at fault.
var errOtherPackage = errors.New("the artifact store holds another package's artifact for this key")

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

// Bounds on the files of an artifact, checked before they are read: a
// store that was written to must not make the host read a 1 GiB sparse
// file into memory only to refuse it by its hash.
const (
	// maxArtifactMetered bounds metered.wasm: four times the default
	// limits.ModuleSize. Metering grows a module by 1.21 to 1.44 times on
	// the toolchain guests of testdata and by 2.75 times on a module made
	// of nothing but branches (each one followed by a charge).
	maxArtifactMetered = 4 * 64 * limits.MiB
	// maxArtifactJSON bounds artifact.json, the tool list and discover
	// result indented: four times the default limits.StdoutTotal, all
	// the discovery output those came from.
	maxArtifactJSON = 4 * 64 * limits.MiB
)

// ReadArtifact reads an artifact saved with Save. It checks the layout and
// the metered module's hash; Open checks the package against it. Files
// over their bounds (artifact.json or metered.wasm over 256 MiB) are
// refused from their size, before anything is read.
func ReadArtifact(dir string) (*Artifact, error) {
	doc, err := readBounded(filepath.Join(dir, artifactJSON), maxArtifactJSON)
	if err != nil {
		return nil, err
	}
	metered, err := readBounded(filepath.Join(dir, artifactMetered), maxArtifactMetered)
	if err != nil {
		return nil, err
	}
	a, err := parseArtifact(doc, metered)
	if err != nil {
		return nil, fmt.Errorf("artifact %s: %w", dir, err)
	}
	return a, nil
}

// parseArtifact is an artifact from its two files' bytes, with the checks
// of ReadArtifact: the layout, the format, the integrity record and the
// metered module's hash. A worker process receives its artifacts this way.
func parseArtifact(doc, metered []byte) (*Artifact, error) {
	if int64(len(doc)) > maxArtifactJSON || int64(len(metered)) > maxArtifactMetered {
		return nil, fmt.Errorf("over the bounds of an artifact's files")
	}
	a := &Artifact{}
	dec := json.NewDecoder(bytes.NewReader(doc))
	dec.DisallowUnknownFields()
	if err := dec.Decode(a); err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, fmt.Errorf("%s has data after its JSON object (corrupted store?)", artifactJSON)
	}
	if a.Format != ArtifactFormat && a.Format != artifactFormatUnsealed {
		return nil, fmt.Errorf("format %d; this runner opens format %d (upload the package again)", a.Format, ArtifactFormat)
	}
	if a.Format == ArtifactFormat {
		if err := a.checkIntegrity(); err != nil {
			return nil, err
		}
	}
	a.Metered = metered
	if sum := a.meteredSum(); hex.EncodeToString(sum[:]) != a.MeteredSHA256 {
		return nil, fmt.Errorf("%s does not match its recorded hash (corrupted store?)", artifactMetered)
	}
	return a, nil
}

// readBounded reads the regular file at path, refusing it from its size
// when it is over limit bytes, and never reading more than limit+1 bytes
// of one that grows meanwhile.
func readBounded(path string, limit int64) ([]byte, error) {
	b, err := regfile.ReadFile(path, limit)
	var notRegular *regfile.NotRegularError
	var tooLarge *regfile.TooLargeError
	switch {
	case errors.As(err, &notRegular):
		return nil, fmt.Errorf("%s is not a regular file (corrupted store?)", path)
	case errors.As(err, &tooLarge):
		return nil, fmt.Errorf("%s is %d bytes, over the %d bytes an artifact's file may be (corrupted store?)", path, tooLarge.Size, limit)
	}
	return b, err
}

// Open opens a package from its artifact and its directory (or bare .wasm
// file) without running it: the module's hash must match the artifact,
// the metered module is compiled (from the compilation cache when the
// runtime has one), and the stored tool list is restored. A package that
// changed since its upload is refused. When ctx ends first, the error
// wraps ctx.Err().
//
// The stored metered module runs only when this host recorded that it
// derived it from this module.wasm at this metering version (at the
// upload, or at an earlier Open); then Open costs two hashes and wazero's
// own load from its cache. Otherwise module.wasm is metered again: at the
// artifact's metering version the result must equal the stored module (a
// store that was written to cannot plant code that escapes metering); at
// another version it replaces it (Package.Opened reports MeteringRederived,
// and Package.Artifact returns the artifact to save for the next time).
func (rt *Runtime) Open(ctx context.Context, a *Artifact, path string) (p *Package, err error) {
	started := time.Now()
	if err := canceled(ctx, "open "+path); err != nil {
		return nil, err
	}
	if rt.eng.IsClosed() {
		return nil, closedError("open " + path)
	}
	unsealed := a.Format == artifactFormatUnsealed
	if a.Format != ArtifactFormat && !unsealed {
		return nil, fmt.Errorf("the artifact has format %d; this runner (%s) opens format %d: upload the package again", a.Format, Version, ArtifactFormat)
	}
	if !unsealed {
		if err := a.checkIntegrity(); err != nil {
			return nil, fmt.Errorf("open %s: %w", path, err)
		}
	}
	if rt.workers != nil {
		return rt.openRemote(ctx, a, path)
	}
	// The package is read and hashed on its own goroutine while wazero
	// loads a stored metered module this host vouches for: on two cores the
	// hash of a 14 MB module.wasm then adds nothing to Open. Nothing is
	// returned, let alone run, before both are verified. module.wasm is
	// only hashed as it streams, never held: an Open this host vouches
	// for needs nothing else of it.
	reading := readPackage(path, rt.limits.ModuleSize, false)
	tools, discover, err := a.restore()
	if err != nil {
		return nil, err
	}
	var compiled wazero.CompiledModule
	defer func() { // every failure after the compilation leaves it unused
		if err != nil && compiled != nil {
			compiled.Close(context.WithoutCancel(ctx))
		}
	}()
	var (
		src        *Source
		hash       [sha256.Size]byte
		metered    = a.Metered
		how        = MeteringStored
		errCompile error
	)
	if rt.vouchesFor(a) {
		compiled, errCompile = rt.compiler.Compile(ctx, metered, rt.limits.CompileTimeout)
		if src, hash, err = (<-reading).verify(a, path); err != nil {
			return nil, err
		}
	} else {
		// Metering needs the bytes: they are read again, and what is
		// metered is what was hashed and verified here.
		if src, hash, err = (<-readPackage(path, rt.limits.ModuleSize, true)).verify(a, path); err != nil {
			return nil, err
		}
		if metered, how, err = rt.meterAgain(ctx, a, src.Module, hash); err != nil {
			return nil, err
		}
		compiled, errCompile = rt.compiler.Compile(ctx, metered, rt.limits.CompileTimeout)
	}
	if err := canceled(ctx, "open "+path); err != nil {
		return nil, err
	}
	if errCompile != nil {
		return nil, fmt.Errorf("compiling the artifact's module: %w", rejection(errCompile))
	}
	src.Manifest, src.HasAssets = a.Manifest, a.HasAssets
	// Nothing reads module.wasm's bytes once the package is open: they go,
	// and with them 14 MB of heap for a Go SDK package.
	src.Module = nil
	p = &Package{
		rt:        rt,
		checked:   newChecked(src, hash, metered, compiled), // the Package holds the only reference
		name:      a.Name,
		tools:     tools,
		discovery: Discovery{Result: discover},
		Opened:    &Opened{Metering: how, ArtifactMetering: a.Metering, ArtifactRunner: a.Runner, Unsealed: unsealed, Duration: time.Since(started)},
	}
	fields := []zap.Field{zap.String("package", a.Name), zap.String("metering", how), zap.Duration("duration", p.Opened.Duration)}
	if unsealed {
		rt.log.Warn("package opened from an artifact without an integrity record (format 1): its tool list is taken as stored; save pkg.Artifact() to seal it",
			append(fields, zap.String("artifact_runner", a.Runner))...)
	}
	if how == MeteringRederived {
		rt.log.Info("package opened from an artifact of another metering version: module.wasm metered again (save pkg.Artifact() to skip this next time)",
			append(fields, zap.Int("artifact_metering", a.Metering), zap.Int("metering_version", fuel.MeteringVersion), zap.String("artifact_runner", a.Runner))...)
	} else {
		rt.log.Debug("package opened from artifact", fields...)
	}
	return p, nil
}

// restore is the artifact's tool list and discover result, as they were
// when the package was uploaded; parsed before anything is compiled, so
// that an artifact that does not restore costs no compilation.
func (a *Artifact) restore() (*protocol.ToolSet, protocol.DiscoverResult, error) {
	tools := make([]protocol.Tool, len(a.Tools))
	for i, raw := range a.Tools {
		tools[i] = protocol.ParseTool(raw)
	}
	set, problems := protocol.ValidateTools(tools, 0)
	if len(problems) > 0 {
		return nil, protocol.DiscoverResult{}, fmt.Errorf("the artifact's tool list does not validate: %v", problems[0])
	}
	var discover protocol.DiscoverResult
	if len(a.Discover) > 0 {
		var err error
		if discover, err = protocol.ParseDiscover(a.Discover); err != nil {
			return nil, protocol.DiscoverResult{}, fmt.Errorf("the artifact's discover result: %v", err)
		}
	}
	return set, discover, nil
}

// packageRead is a package read from disk and its module hashed.
type packageRead struct {
	src   *Source
	found bool // module.wasm was there, within the size limit
	hash  [sha256.Size]byte
	err   error
}

// readPackage reads and hashes the package at path on a goroutine of its
// own; the channel delivers the result once. Without keep, module.wasm is
// hashed as it streams from the file and never held (Source.Module is
// nil): an Open of a module this host vouches for needs only its hash.
func readPackage(path string, maxModuleSize int64, keep bool) <-chan packageRead {
	reading := make(chan packageRead, 1)
	go func() {
		var r packageRead
		if keep {
			if r.src, r.err = ReadSource(path, maxModuleSize); r.err == nil && r.src.Module != nil {
				r.found, r.hash = true, sha256.Sum256(r.src.Module)
			}
		} else {
			sum := sha256.New()
			if r.src, r.found, r.err = readSource(path, maxModuleSize, sum); r.found {
				sum.Sum(r.hash[:0])
			}
		}
		reading <- r
	}()
	return reading
}

// verify returns the package read when its module is the one the artifact
// names.
func (r packageRead) verify(a *Artifact, path string) (*Source, [sha256.Size]byte, error) {
	if r.err != nil {
		return nil, r.hash, r.err
	}
	if r.found && hex.EncodeToString(r.hash[:]) != a.ModuleSHA256 && r.src != nil && r.src.displayName(path) != a.Name {
		return nil, r.hash, fmt.Errorf("%s: %w (the artifact is package %q's, module sha256 %s; the package here is %q, module sha256 %s)", path, errOtherPackage, a.Name, a.ModuleSHA256, r.src.displayName(path), hex.EncodeToString(r.hash[:]))
	}
	if !r.found || hex.EncodeToString(r.hash[:]) != a.ModuleSHA256 {
		return nil, r.hash, fmt.Errorf("%s: module.wasm does not match the artifact (sha256 %s, artifact %s): the package changed since its upload", path, hex.EncodeToString(r.hash[:]), a.ModuleSHA256)
	}
	return r.src, r.hash, nil
}

// How Open obtained the metered module that runs (Opened.Metering).
const (
	// MeteringStored: the artifact's metered module, which this host had
	// recorded deriving from this module.wasm at this metering version.
	MeteringStored = "stored"
	// MeteringVerified: module.wasm was metered again and the result was
	// the artifact's metered module (the first Open on a host that did not
	// make the artifact; later ones are MeteringStored).
	MeteringVerified = "verified"
	// MeteringRederived: the artifact was made at another metering
	// version; module.wasm was metered again and that runs instead.
	MeteringRederived = "rederived"
)

// Opened describes how Open opened a package.
type Opened struct {
	// Metering is MeteringStored, MeteringVerified or MeteringRederived.
	Metering string
	// ArtifactMetering and ArtifactRunner are the metering version and
	// runner version that made the artifact.
	ArtifactMetering int
	ArtifactRunner   string
	// Unsealed: the artifact had no integrity record (format 1, made
	// before it), so its tool list and discover result were taken as
	// stored, as that runner did. Save Package.Artifact (sealed) in its
	// place.
	Unsealed bool
	// Duration is the whole Open, from the module's read to the compiled
	// module.
	Duration time.Duration
}

// vouchesFor reports whether the artifact's metered module may run as
// stored: this host recorded deriving exactly it (by SHA-256) from the
// module.wasm the artifact names, at this runner's metering version. Open
// still checks that the package's module.wasm is that module.
func (rt *Runtime) vouchesFor(a *Artifact) bool {
	var module [sha256.Size]byte
	b, err := hex.DecodeString(a.ModuleSHA256)
	if err != nil || len(b) != len(module) {
		return false
	}
	copy(module[:], b)
	return a.Metering == fuel.MeteringVersion && rt.meterings.has(module, fuel.MeteringVersion, a.meteredSum())
}

// meterAgain meters module.wasm (already verified against the artifact,
// with SHA-256 hash) for an artifact this host does not vouch for, and
// says how the result relates to the stored one: at the artifact's own
// metering version they must be equal (MeteringVerified), at another the
// result replaces it (MeteringRederived).
func (rt *Runtime) meterAgain(ctx context.Context, a *Artifact, module []byte, hash [sha256.Size]byte) ([]byte, string, error) {
	// The structural bounds hold here too: an artifact store is not a place
	// to smuggle in a module that upload would have refused. (A module this
	// host vouches for passed them when it was recorded.)
	if ps := modcheck.CheckStructure(module, rt.checkOptions(rt.limits)); len(ps) > 0 {
		return nil, "", fmt.Errorf("the package's module is over a structural bound: %s", ps[0])
	}
	metered, err := rt.compiler.Meter(ctx, module, rt.limits.CompileTimeout) // validated as at upload: a store is not trusted
	if err != nil {
		return nil, "", fmt.Errorf("module.wasm cannot be metered: %w", rejection(err))
	}
	how := MeteringRederived
	if a.Metering == fuel.MeteringVersion {
		if !bytes.Equal(metered, a.Metered) {
			return nil, "", fmt.Errorf("the artifact's metered module is not this runner's metering of module.wasm at the metering version it records (%d): the artifact store was changed; upload the package again", a.Metering)
		}
		how = MeteringVerified
	}
	if err := rt.meterings.record(hash, fuel.MeteringVersion, sha256.Sum256(metered)); err != nil {
		rt.log.Warn("cannot record a verified metering; the next process will meter this module again", zap.Error(err))
	}
	return metered, how, nil
}
