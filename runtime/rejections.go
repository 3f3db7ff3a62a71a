package runtime

import (
	"fmt"
	"time"

	"github.com/subako/subako-runner/limits"
	"github.com/subako/subako-runner/protocol"
)

// Stage is a step of an upload, in the order an upload takes them. A
// stage runs only when the stages before it passed, except that a bad
// manifest does not stop the module checks (RejectionCode.Stops).
type Stage int

// The stages of an upload.
const (
	// StageRead reads the package: the manifest and module.wasm (§1).
	StageRead Stage = iota
	// StageCheck runs the module checks of docs/abi.md §2 on the bytes.
	StageCheck
	// StageCompile validates the module as the compiler sees it, meters
	// it and compiles it.
	StageCompile
	// StageDiscovery runs the module: server/discover and tools/list (§4).
	StageDiscovery
	// StageTools applies the tool-list rules to what discovery listed.
	StageTools
)

var stageNames = [...]string{"read", "module checks", "compile", "discovery", "tool list"}

var stagesPassed = [...]string{
	"nothing: reading the package is the first step",
	"the package was read: " + ModuleFile + " is there and within the size limit",
	"the read and every module check",
	"the read, the module checks and the compilation",
	"discovery to its end: server/discover and every tools/list page",
}

// String is the stage's name as reports show it ("module checks").
func (s Stage) String() string {
	if s < 0 || int(s) >= len(stageNames) {
		return fmt.Sprintf("stage(%d)", int(s))
	}
	return stageNames[s]
}

// Passed says what passed before a code of this stage can be reported.
func (s Stage) Passed() string {
	if s < 0 || int(s) >= len(stagesPassed) {
		return "unknown"
	}
	return stagesPassed[s]
}

// RejectionCode describes one rejection code: where an upload finds it,
// what passing its check means, and what a rejection with it says about
// the other checks.
type RejectionCode struct {
	// Code is the stable code, e.g. "unknown_import".
	Code string
	// Stage is the step of the upload that reports it.
	Stage Stage
	// Title says what passing the check means, in a line a checklist
	// shows ("exports _start").
	Title string
	// Stops is the first stage that does not run once this code is
	// reported: the stage after Stage for every code but bad_manifest,
	// after which the module checks still run.
	Stops Stage
	// EndsStage is set for a code that can end its own stage early: the
	// module is not a module (not_wasm, component), does not decode
	// (invalid_module, module_too_complex), or discovery stopped
	// (discovery_failed, discover_unsupported, too_many_pages). Reported
	// alone in its stage, it leaves the stage's other checks unjudged; next
	// to a code without it, the whole stage ran.
	EndsStage bool
}

// RejectionCodes is every rejection code Load, Validate and Discover
// report, in the order an upload meets them. Its titles give the limits
// of lim ("tools/list ends within 16 pages"). inspect's upload checklist,
// check's report and docs/abi.md's tables are made from, or tested
// against, this one list; a Code constant missing from it fails
// TestRejectionCodesAreComplete.
func RejectionCodes(lim limits.Limits) []RejectionCode {
	return []RejectionCode{
		{Code: CodeWorkerExited, Stage: StageRead, EndsStage: true, Stops: StageCheck, Title: "checking the module leaves its worker process alive"},
		{Code: CodeBadManifest, Stage: StageRead, Stops: StageCompile, Title: fmt.Sprintf("%s is JSON with \"abi\": 1", ManifestFile)},
		{Code: CodeMissingModule, Stage: StageRead, Title: ModuleFile + " is present"},
		{Code: CodeModuleTooLarge, Stage: StageRead, Title: fmt.Sprintf("%s is within the module size limit (%s)", ModuleFile, limits.HumanSize(lim.ModuleSize))},
		{Code: CodeNotWasm, Stage: StageCheck, EndsStage: true, Title: ModuleFile + " is a WebAssembly binary"},
		{Code: CodeComponent, Stage: StageCheck, EndsStage: true, Title: "a core module, not a component"},
		{Code: CodeInvalidModule, Stage: StageCheck, EndsStage: true, Title: "the module decodes and validates"},
		{Code: CodeModuleTooComplex, Stage: StageCheck, EndsStage: true, Title: "the module's shape is within the structural bounds"},
		{Code: CodeThreads, Stage: StageCheck, Title: "no shared memory or atomics"},
		{Code: CodeExceptions, Stage: StageCheck, Title: "no exception handling"},
		{Code: CodeMissingStart, Stage: StageCheck, Title: "exports _start"},
		{Code: CodeBadStartSignature, Stage: StageCheck, Title: "_start is () -> ()"},
		{Code: CodeReactor, Stage: StageCheck, Title: "a command, not a reactor (no _initialize)"},
		{Code: CodeMissingMemory, Stage: StageCheck, Title: "exports its memory as \"memory\""},
		{Code: CodeUnknownImport, Stage: StageCheck, Title: "imports only what wasi_snapshot_preview1 and subako_http provide"},
		{Code: CodeImportSignature, Stage: StageCheck, Title: "every import has the provided signature"},
		{Code: CodeNonFunctionImport, Stage: StageCheck, Title: "imports functions only"},
		{Code: CodeMemoryTooLarge, Stage: StageCheck, Title: fmt.Sprintf("initial memory within the memory limit (%s)", limits.HumanSize(lim.Memory))},
		{Code: CodeTableTooLarge, Stage: StageCheck, Title: "initial tables within the memory and table element limits"},
		{Code: CodeCompileTimeout, Stage: StageCompile, Title: "compiles within the compile timeout (" + minutes(lim.CompileTimeout) + ")"},
		{Code: CodeDiscoveryFailed, Stage: StageDiscovery, EndsStage: true, Title: "discovery runs without crashing"},
		{Code: CodeDiscoverUnsupported, Stage: StageDiscovery, EndsStage: true, Title: fmt.Sprintf("server/discover supports %s and tools", protocol.Version)},
		{Code: CodeTooManyPages, Stage: StageDiscovery, EndsStage: true, Title: fmt.Sprintf("tools/list ends within %d pages", lim.MaxPages)},
		{Code: CodeNoTools, Stage: StageTools, Title: "lists at least one tool"},
		{Code: CodeInvalidTool, Stage: StageTools, Title: "every tool is valid (name, inputSchema, outputSchema)"},
		{Code: CodeDuplicateTool, Stage: StageTools, Title: "tool names are unique"},
	}
}

// minutes is d as the docs write a timeout of whole minutes ("5
// minutes"), and as time.Duration prints it otherwise.
func minutes(d time.Duration) string {
	switch {
	case d == time.Minute:
		return "1 minute"
	case d > 0 && d%time.Minute == 0:
		return fmt.Sprintf("%d minutes", d/time.Minute)
	}
	return d.String()
}

// CheckStatus is what a rejection says about one check of RejectionCodes.
type CheckStatus string

// The statuses of a check.
const (
	CheckPassed CheckStatus = "pass"
	CheckFailed CheckStatus = "fail"
	// CheckNotRun: the upload never reached the check (an earlier stage
	// failed, or a failure ended the check's own stage early).
	CheckNotRun CheckStatus = "not_run"
)

// CheckStatuses judges every check of codes against rejections, the
// Rejections of one *RejectedError (none for an accepted package): a
// check failed when a rejection has its code, passed when the upload
// provably ran it, and was not run otherwise. It errs on the side of
// not_run: a check is never called passed that the upload may have
// skipped. A code missing from codes (a newer runtime's) marks every
// check not failed as not run, since nothing says how far the upload got.
func CheckStatuses(codes []RejectionCode, rejections []Rejection) []CheckStatus {
	byCode := make(map[string]RejectionCode, len(codes))
	for _, c := range codes {
		byCode[c.Code] = c
	}
	failed := map[string]bool{}
	stopped := Stage(len(stageNames)) // the first stage that did not run
	// cut[s]: every failure in stage s may have ended it early.
	cut := map[Stage]bool{}
	whole := map[Stage]bool{}
	for _, r := range rejections {
		failed[r.Code] = true
		c, ok := byCode[r.Code]
		if !ok {
			stopped = StageRead
			continue
		}
		stops := c.Stops
		if stops == StageRead { // the zero value: the stage after its own
			stops = c.Stage + 1
		}
		stopped = min(stopped, stops)
		if c.EndsStage {
			cut[c.Stage] = true
		} else {
			whole[c.Stage] = true
		}
	}
	out := make([]CheckStatus, len(codes))
	for i, c := range codes {
		switch {
		case failed[c.Code]:
			out[i] = CheckFailed
		case c.Stage >= stopped, cut[c.Stage] && !whole[c.Stage]:
			out[i] = CheckNotRun
		default:
			out[i] = CheckPassed
		}
	}
	return out
}
