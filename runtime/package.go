package runtime

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/subako/subako-runner/internal/modcheck"
	"github.com/subako/subako-runner/internal/regfile"
)

// File names inside a package directory (docs/abi.md §1).
const (
	ManifestFile = "subako-package.json"
	ModuleFile   = "module.wasm"
)

// maxManifestSize is the largest manifest accepted (docs/abi.md §1).
const maxManifestSize = 64 << 10

// Manifest is subako-package.json.
type Manifest struct {
	ABI         int    `json:"abi"`
	Name        string `json:"name,omitempty"`
	Version     string `json:"version,omitempty"`
	Description string `json:"description,omitempty"`
	// Unknown lists fields this runner does not know, sorted; they are
	// tolerated for forward compatibility, and `check` warns about them.
	Unknown []string `json:"-"`
}

// Source is a package as found on disk, before any check of its module.
type Source struct {
	// Dir is the package directory, or "" for a bare .wasm file.
	Dir string
	// Manifest is nil for a bare .wasm file.
	Manifest *Manifest
	// Module is the bytes of module.wasm. It is nil when the file was over
	// the size limit (then Rejections says so and nothing was read).
	Module []byte
	// HasAssets is true when the directory holds any file besides the
	// manifest and the module; the directory is then mounted at /package.
	HasAssets bool
	// Rejections are the problems found while reading the package
	// (bad_manifest, module_too_large, missing_module).
	Rejections []Rejection
}

// ReadSource reads a package directory or a bare .wasm file. Problems of the
// package itself are collected in Source.Rejections; an error means the path
// could not be read at all (it does not exist, permission denied).
//
// The module is never read past maxModuleSize bytes: a larger file is
// rejected as module_too_large from its size alone.
func ReadSource(path string, maxModuleSize int64) (*Source, error) {
	src, _, err := readSource(path, maxModuleSize, nil)
	return src, err
}

// readSource is ReadSource, except that with sum set module.wasm is only
// hashed into it as it is read, never held: Source.Module stays nil, and
// found reports whether a module within the limit was there to hash.
func readSource(path string, maxModuleSize int64, sum hash.Hash) (src *Source, found bool, err error) {
	info, err := os.Stat(path)
	if err != nil {
		return nil, false, err
	}
	src = &Source{}
	modulePath := path
	if info.IsDir() {
		src.Dir = path
		modulePath = filepath.Join(path, ModuleFile)
		src.Manifest, src.Rejections = readManifest(filepath.Join(path, ManifestFile))
		src.HasAssets, err = hasAssets(path)
		if err != nil {
			return nil, false, err
		}
	} else if !info.Mode().IsRegular() {
		return nil, false, fmt.Errorf("%s is neither a package directory nor a .wasm file", path)
	}
	var rej []Rejection
	if sum != nil {
		found, rej, err = readModule(modulePath, maxModuleSize, sum)
	} else {
		var buf bytes.Buffer
		if found, rej, err = readModule(modulePath, maxModuleSize, &buf); found {
			src.Module = buf.Bytes()
		}
	}
	if err != nil {
		return nil, false, err
	}
	src.Rejections = append(src.Rejections, rej...)
	return src, found, nil
}

// readModule writes module.wasm to w, unless it is missing, not a regular
// file or over maxSize (then the rejection says so and found is false).
// A *bytes.Buffer is sized first, so a 14 MB module is read into one
// allocation instead of a chain of growing copies.
func readModule(path string, maxSize int64, w io.Writer) (found bool, _ []Rejection, _ error) {
	f, info, err := regfile.Open(path)
	var notRegular *regfile.NotRegularError
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return false, []Rejection{{CodeMissingModule, fmt.Sprintf("the package has no %s: put the compiled WebAssembly module next to %s", ModuleFile, ManifestFile)}}, nil
	case errors.As(err, &notRegular):
		return false, []Rejection{{CodeMissingModule, fmt.Sprintf("%s is not a regular file (it is %s)", ModuleFile, notRegular.Kind())}}, nil
	case err != nil:
		return false, nil, err
	}
	defer f.Close()
	if info.Size() > maxSize {
		return false, []Rejection{tooLarge(info.Size(), maxSize)}, nil
	}
	if buf, ok := w.(*bytes.Buffer); ok {
		buf.Grow(int(info.Size()) + bytes.MinRead)
	}
	// The file may grow between Stat and Read; never read more than allowed.
	n, err := io.Copy(w, io.LimitReader(f, maxSize+1))
	if err != nil {
		return false, nil, err
	}
	if n > maxSize {
		return false, []Rejection{tooLarge(n, maxSize)}, nil
	}
	return true, nil, nil
}

func tooLarge(size, maxSize int64) Rejection {
	p := modcheck.ModuleTooLarge(size, maxSize)
	return Rejection{Code: p.Code, Message: p.Message}
}

// readManifest parses subako-package.json, reporting every problem found.
func readManifest(path string) (*Manifest, []Rejection) {
	bad := func(format string, a ...any) []Rejection {
		return []Rejection{{CodeBadManifest, fmt.Sprintf(format, a...)}}
	}
	f, _, err := regfile.Open(path)
	var notRegular *regfile.NotRegularError
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, bad("the package has no %s: add one with {\"abi\": 1}", ManifestFile)
	case errors.As(err, &notRegular):
		return nil, bad("%s is not a regular file (it is %s)", ManifestFile, notRegular.Kind())
	case err != nil:
		return nil, bad("%s cannot be read: %v", ManifestFile, err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxManifestSize+1))
	if err != nil {
		return nil, bad("%s cannot be read: %v", ManifestFile, err)
	}
	if len(b) > maxManifestSize {
		return nil, bad("%s is over %d KiB", ManifestFile, maxManifestSize>>10)
	}
	return ParseManifest(b)
}

// ParseManifest parses the bytes of subako-package.json. Every problem is
// reported as a bad_manifest rejection; the manifest is nil when any exists.
func ParseManifest(b []byte) (*Manifest, []Rejection) {
	var rej []Rejection
	bad := func(format string, a ...any) {
		rej = append(rej, Rejection{CodeBadManifest, fmt.Sprintf(format, a...)})
	}
	if len(b) > maxManifestSize {
		bad("%s is over %d KiB", ManifestFile, maxManifestSize>>10)
		return nil, rej
	}
	var fields map[string]json.RawMessage
	dec := json.NewDecoder(bytes.NewReader(b))
	if err := dec.Decode(&fields); err != nil || fields == nil {
		msg := "it is not a JSON object"
		if err != nil {
			msg = "it is not valid JSON: " + err.Error()
		}
		bad("%s: %s", ManifestFile, msg)
		return nil, rej
	}
	if _, err := dec.Token(); err != io.EOF {
		bad("%s: unexpected data after the JSON object", ManifestFile)
	}
	if key, ok := duplicateKey(b); ok {
		bad("%s: the key %s appears twice in one object (JSON readers differ on which one counts)", ManifestFile, key)
		return nil, rej
	}
	m := &Manifest{}
	raw, ok := fields["abi"]
	switch {
	case !ok:
		bad("%s has no \"abi\" field: add \"abi\": %d", ManifestFile, ABIVersion)
	default:
		// Any JSON number equal to ABIVersion is that number (1.0 and 1e0
		// are 1); a string "1" is not.
		var n float64
		if bytes.HasPrefix(bytes.TrimSpace(raw), []byte(`"`)) || json.Unmarshal(raw, &n) != nil || n != ABIVersion {
			bad("%s: \"abi\" is %s, but this runner implements ABI %d (the number %d)", ManifestFile, raw, ABIVersion, ABIVersion)
		} else {
			m.ABI = ABIVersion
		}
	}
	for _, field := range []struct {
		name string
		dst  *string
	}{{"name", &m.Name}, {"version", &m.Version}, {"description", &m.Description}} {
		raw, ok := fields[field.name]
		if !ok {
			continue
		}
		if err := json.Unmarshal(raw, field.dst); err != nil || !bytes.HasPrefix(bytes.TrimSpace(raw), []byte(`"`)) {
			bad("%s: %q must be a string, got %s", ManifestFile, field.name, raw)
		}
	}
	for k := range fields {
		switch k {
		case "abi", "name", "version", "description":
		default:
			m.Unknown = append(m.Unknown, k)
		}
	}
	sort.Strings(m.Unknown)
	if len(rej) > 0 {
		return nil, rej
	}
	return m, nil
}

// duplicateKey finds the first name that appears twice in one object of
// the JSON document b, at any depth, and returns its path (e.g. "abi", or
// "x"."y" for a nested one). A duplicate anywhere is refused, not only
// among the fields the runner reads: RFC 8259 leaves the meaning of a
// duplicate to each reader, and the manifest is read by other tools too.
func duplicateKey(b []byte) (path string, found bool) {
	type level struct {
		seen   map[string]bool // nil for an array
		key    string          // the member being read, in an object
		expect bool            // an object's next string token is a key
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var stack []*level
	where := func(last string) string {
		var parts []string
		for _, l := range stack[:len(stack)-1] {
			if l.seen != nil {
				parts = append(parts, strconv.Quote(l.key))
			}
		}
		return strings.Join(append(parts, strconv.Quote(last)), ".")
	}
	for {
		tok, err := dec.Token()
		if err != nil {
			return "", false
		}
		var top *level
		if len(stack) > 0 {
			top = stack[len(stack)-1]
		}
		if key, isString := tok.(string); isString && top != nil && top.seen != nil && top.expect {
			if top.seen[key] {
				return where(key), true
			}
			top.seen[key], top.key, top.expect = true, key, false
			continue
		}
		switch tok {
		case json.Delim('{'):
			stack = append(stack, &level{seen: map[string]bool{}, expect: true})
			continue
		case json.Delim('['):
			stack = append(stack, &level{})
			continue
		case json.Delim('}'), json.Delim(']'):
			stack = stack[:len(stack)-1]
		}
		// A value ended: in an object, a key comes next.
		if len(stack) > 0 && stack[len(stack)-1].seen != nil {
			stack[len(stack)-1].expect = true
		}
	}
}

// hasAssets reports whether dir holds any regular file (at any depth) other
// than the manifest and the module at its top.
func hasAssets(dir string) (bool, error) {
	found := errors.New("found")
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			return nil
		}
		rel, _ := filepath.Rel(dir, p)
		if rel == ManifestFile || rel == ModuleFile {
			return nil
		}
		if d.Type().IsRegular() || d.Type()&fs.ModeSymlink != 0 {
			return found
		}
		return nil
	})
	if err == found {
		return true, nil
	}
	return false, err
}

// displayName is how messages and logs name a package.
func (s *Source) displayName(path string) string {
	if s.Manifest != nil && s.Manifest.Name != "" {
		return s.Manifest.Name
	}
	return strings.TrimSuffix(filepath.Base(path), ".wasm")
}
