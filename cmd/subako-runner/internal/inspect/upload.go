package inspect

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"sync"

	"github.com/subako/subako-runner/protocol"
	"github.com/subako/subako-runner/runtime"
)

// uploadCheck is one row of the page's upload report.
type uploadCheck struct {
	Code  string `json:"code"`
	Title string `json:"title"`
	// Status is "pass", "fail" or "not_run" (an earlier failure left
	// nothing to judge, e.g. the tool list of a module that does not link).
	Status   string   `json:"status"`
	Messages []string `json:"messages,omitempty"`
}

// uploadChecks are the rejection codes of host-contract §1, §2 and §4 in the
// order an upload meets them, each with what passing it means, by stage:
// the manifest, the module file, the module's structure, discovery.
var uploadChecks = []struct {
	code, title string
	stage       stage
}{
	{runtime.CodeBadManifest, "subako-package.json is JSON with \"abi\": 1", stageManifest},
	{runtime.CodeMissingModule, "module.wasm is present", stageFile},
	{runtime.CodeModuleTooLarge, "module.wasm is within the module size limit", stageFile},
	{runtime.CodeNotWasm, "module.wasm is a WebAssembly binary", stageFile},
	{runtime.CodeComponent, "a core module, not a component", stageFile},
	{runtime.CodeInvalidModule, "the module decodes and validates", stageModule},
	{runtime.CodeThreads, "no shared memory or atomics", stageModule},
	{runtime.CodeExceptions, "no exception handling", stageModule},
	{runtime.CodeMissingStart, "exports _start", stageModule},
	{runtime.CodeBadStartSignature, "_start is () -> ()", stageModule},
	{runtime.CodeReactor, "a command, not a reactor (no _initialize)", stageModule},
	{runtime.CodeMissingMemory, "exports its memory as \"memory\"", stageModule},
	{runtime.CodeUnknownImport, "imports only what wasi_snapshot_preview1 and subako_http provide", stageModule},
	{runtime.CodeImportSignature, "every import has the provided signature", stageModule},
	{runtime.CodeNonFunctionImport, "imports functions only", stageModule},
	{runtime.CodeMemoryTooLarge, "initial memory within the memory limit", stageModule},
	{runtime.CodeDiscoveryFailed, "discovery runs without crashing", stageDiscovery},
	{runtime.CodeDiscoverUnsupported, "server/discover supports 2026-07-28 and tools", stageDiscovery},
	{runtime.CodeTooManyPages, "tools/list ends within 16 pages", stageDiscovery},
	{runtime.CodeNoTools, "lists at least one tool", stageDiscovery},
	{runtime.CodeInvalidTool, "every tool is valid (name, inputSchema, outputSchema)", stageDiscovery},
	{runtime.CodeDuplicateTool, "tool names are unique", stageDiscovery},
}

// stage is how far an upload got.
type stage int

const (
	stageManifest stage = iota
	stageFile
	stageModule
	stageDiscovery
)

// packageState is one load of the package: what the page shows about it,
// and the package itself when it was accepted.
type packageState struct {
	pkg    *runtime.Package // nil when rejected
	report packageReport
	// inflight counts the calls running on pkg (Server.acquire).
	inflight sync.WaitGroup
}

// packageReport is the JSON of GET /api/package.
type packageReport struct {
	Path         string             `json:"path"`
	Name         string             `json:"name"`
	Manifest     *runtime.Manifest  `json:"manifest,omitempty"`
	ModuleBytes  int64              `json:"moduleBytes"`
	ModuleSHA256 string             `json:"moduleSha256,omitempty"`
	Accepted     bool               `json:"accepted"`
	Upload       []uploadCheck      `json:"upload"`
	Crash        *runtime.Crash     `json:"crash,omitempty"`
	Tools        []json.RawMessage  `json:"tools"`
	ToolWarnings []protocol.Warning `json:"toolWarnings,omitempty"`
	Discovery    *discoveryReport   `json:"discovery,omitempty"`
}

type discoveryReport struct {
	Pages         int     `json:"pages"`
	Notifications int     `json:"notifications"`
	DurationMs    float64 `json:"durationMs"`
	FuelUsed      uint64  `json:"fuelUsed"`
	MemoryBytes   int64   `json:"memoryBytes"`
	Stderr        string  `json:"stderr,omitempty"`
}

// loadPackage runs the upload (checks, compilation, discovery) and records
// what the page shows. A rejection is a report, not an error.
func loadPackage(ctx context.Context, rt *runtime.Runtime, path string) (*packageState, error) {
	rep := packageReport{Path: path, Name: filepath.Base(path), Tools: []json.RawMessage{}}
	if fi, err := os.Stat(path); err == nil && fi.IsDir() {
		if b, err := os.ReadFile(filepath.Join(path, runtime.ManifestFile)); err == nil {
			if m, _ := runtime.ParseManifest(b); m != nil {
				rep.Manifest = m
			}
		}
		path = filepath.Join(path, runtime.ModuleFile)
	}
	if fi, err := os.Stat(path); err == nil {
		rep.ModuleBytes = fi.Size()
	}
	pkg, err := rt.Load(ctx, rep.Path)
	var rej *runtime.RejectedError
	switch {
	case err == nil:
		rep.Accepted = true
		rep.Name = pkg.Name()
		h := pkg.Hash()
		rep.ModuleSHA256 = hex.EncodeToString(h[:])
		for _, t := range pkg.Tools() {
			rep.Tools = append(rep.Tools, t.Raw)
		}
		rep.ToolWarnings = pkg.ToolWarnings()
		d := pkg.Discovery()
		rep.Discovery = &discoveryReport{Pages: d.Pages, Notifications: d.Notifications, DurationMs: runtime.Milliseconds(d.Duration), FuelUsed: d.FuelUsed, MemoryBytes: d.MemoryBytes, Stderr: d.Stderr}
		rep.Upload = judgeUpload(nil)
	case errors.As(err, &rej):
		rep.Upload = judgeUpload(rej.Rejections)
		rep.Crash = rej.Crash
		if rep.ModuleBytes > 0 && rep.ModuleBytes <= rt.Limits().ModuleSize {
			if b, err := os.ReadFile(path); err == nil {
				sum := sha256.Sum256(b)
				rep.ModuleSHA256 = hex.EncodeToString(sum[:])
			}
		}
	default:
		return nil, err
	}
	return &packageState{pkg: pkg, report: rep}, nil
}

// judgeUpload turns the rejections into the checklist: a check fails when
// a rejection has its code, is not run when an earlier failure left nothing
// to judge (no module checks without a module, no discovery after any
// refusal, no tool rules after a crashed discovery), and passes otherwise.
// A code this list does not know (a newer check) is a failed row of its own.
func judgeUpload(rejections []runtime.Rejection) []uploadCheck {
	byCode := map[string][]string{}
	for _, r := range rejections {
		byCode[r.Code] = append(byCode[r.Code], r.Message)
	}
	known := map[string]bool{}
	var fileFailed, refused bool
	for _, c := range uploadChecks {
		known[c.code] = true
		if len(byCode[c.code]) > 0 {
			fileFailed = fileFailed || c.stage == stageFile
			refused = refused || c.stage < stageDiscovery
		}
	}
	crashed := len(byCode[runtime.CodeDiscoveryFailed]) > 0
	var out []uploadCheck
	for _, c := range uploadChecks {
		row := uploadCheck{Code: c.code, Title: c.title, Status: "pass"}
		switch {
		case len(byCode[c.code]) > 0:
			row.Status, row.Messages = "fail", byCode[c.code]
		case c.stage == stageModule && fileFailed,
			c.stage == stageDiscovery && (refused || crashed):
			row.Status = "not_run"
		}
		out = append(out, row)
	}
	for _, r := range rejections {
		if !known[r.Code] {
			known[r.Code] = true
			out = append(out, uploadCheck{Code: r.Code, Title: r.Code, Status: "fail", Messages: byCode[r.Code]})
		}
	}
	return out
}

func (st *packageState) close(ctx context.Context) error {
	if st.pkg == nil {
		return nil
	}
	return st.pkg.Close(ctx)
}
