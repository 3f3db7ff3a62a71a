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

	"github.com/subako/subako-runner/limits"
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
		rep.Upload = judgeUpload(rt.Limits(), nil)
	case errors.As(err, &rej):
		rep.Upload = judgeUpload(rt.Limits(), rej.Rejections)
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

// judgeUpload turns the rejections into the checklist, one row per code
// of runtime.RejectionCodes in the order an upload meets them, judged by
// runtime.CheckStatuses: a row passes only when the upload provably ran
// its check. A code the table does not know (a newer check) is a failed
// row of its own.
func judgeUpload(lim limits.Limits, rejections []runtime.Rejection) []uploadCheck {
	byCode := map[string][]string{}
	for _, r := range rejections {
		byCode[r.Code] = append(byCode[r.Code], r.Message)
	}
	codes := runtime.RejectionCodes(lim)
	statuses := runtime.CheckStatuses(codes, rejections)
	known := map[string]bool{}
	out := make([]uploadCheck, 0, len(codes))
	for i, c := range codes {
		known[c.Code] = true
		out = append(out, uploadCheck{Code: c.Code, Title: c.Title, Status: string(statuses[i]), Messages: byCode[c.Code]})
	}
	for _, r := range rejections {
		if !known[r.Code] {
			known[r.Code] = true
			out = append(out, uploadCheck{Code: r.Code, Title: r.Code, Status: string(runtime.CheckFailed), Messages: byCode[r.Code]})
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
