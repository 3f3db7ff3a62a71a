package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	goruntime "runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"time"

	"github.com/subako/subako-runner/hostmod/subakohttp"
	"github.com/subako/subako-runner/limits"
	"github.com/subako/subako-runner/runtime"
)

// zeros is an endless body.
type zeros struct{}

func (zeros) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}

// downloadReport is what the child prints: one JSON object.
type downloadReport struct {
	Bytes   int64   `json:"bytes"`
	Seconds float64 `json:"seconds"`
	// OpenPeak is VmHWM after opening the package (the open's own peak).
	OpenPeak int64 `json:"openPeak"`
	// RSSBefore is VmRSS just before the call, after a collection.
	RSSBefore int64 `json:"rssBefore"`
	// HWM is the peak RSS during the call: VmHWM, reset before the call
	// when the kernel allows (Reset says whether it did).
	HWM     int64 `json:"hwm"`
	Reset   bool  `json:"reset"`
	Written int64 `json:"written"`
}

// benchDownload serves a body of o.downloadBytes zeros on loopback, uploads
// the httpprobe guest package (artifact and compilation cache), and runs
// the download in a child process that opens the package from them, so the
// child's peak RSS is the call's and not the compiler's or the server's.
func benchDownload(ctx context.Context, o options, t *table) error {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	size := o.downloadBytes
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", strconv.FormatInt(size, 10))
		io.CopyN(w, zeros{}, size)
	})}
	go srv.Serve(ln)
	defer srv.Close()

	dir, err := goPackage(o.work, "httpprobe")
	if err != nil {
		return err
	}
	cache := filepath.Join(o.work, "download-cache")
	store := filepath.Join(o.work, "download-artifact")
	rt, err := runtime.New(ctx, runtime.Config{CompilationCacheDir: cache})
	if err != nil {
		return err
	}
	pkg, err := rt.Load(ctx, dir)
	if err == nil {
		err = pkg.Artifact().Save(store)
	}
	rt.Close(ctx)
	if err != nil {
		return err
	}

	exe, err := os.Executable()
	if err != nil {
		return err
	}
	cctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(cctx, exe,
		"-child-download", dir, "-child-artifact", store, "-child-cache", cache,
		"-child-url", "http://"+ln.Addr().String()+"/", "-child-size", strconv.FormatInt(size, 10))
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("child: %w: %s", err, stderr.Bytes())
	}
	var rep downloadReport
	if err := json.Unmarshal(stdout.Bytes(), &rep); err != nil {
		return fmt.Errorf("child report %q: %w", stdout.Bytes(), err)
	}
	label := fmt.Sprintf("%.0f MiB", float64(size)/(1<<20))
	if size >= 1<<30 && size%(1<<30) == 0 {
		label = fmt.Sprintf("%d GiB", size>>30)
	}
	t.add(fmt.Sprintf("%s HTTP download to a file: throughput", label),
		fmt.Sprintf("%.0f MiB/s", float64(rep.Bytes)/(1<<20)/rep.Seconds), dur(time.Duration(rep.Seconds*float64(time.Second))), 0, "", false)
	what := "peak RSS during the call vs RSS before it"
	if !rep.Reset {
		what = "peak RSS of the child (VmHWM not resettable) vs RSS before the call"
	}
	t.add(fmt.Sprintf("%s HTTP download: %s", label, what),
		mib(rep.HWM), mib(rep.RSSBefore), float64(rep.HWM)/float64(rep.RSSBefore), "≤ 64 MiB", rep.HWM <= 64<<20)
	t.add("  (child peak RSS while opening the package from its artifact)", mib(rep.OpenPeak), "", 0, "", false)
	return nil
}

// childDownload is the child side of benchDownload.
type childDownload struct {
	pkg, artifact, cache, url string
	size                      int64
}

func (c *childDownload) run(ctx context.Context, w io.Writer) error {
	// The body must fit the write budget (file data only: the new file's
	// directory entry counts against MaxEntries).
	lim := limits.Default()
	lim.WriteBudget = max(lim.WriteBudget, c.size)
	rt, err := runtime.New(ctx, runtime.Config{CompilationCacheDir: c.cache, Limits: &lim})
	if err != nil {
		return err
	}
	defer rt.Close(ctx)
	a, err := runtime.ReadArtifact(c.artifact)
	if err != nil {
		return err
	}
	pkg, err := rt.Open(ctx, a, c.pkg)
	if err != nil {
		return err
	}
	openPeak, err := procStatus("VmHWM")
	if err != nil {
		return err
	}
	// Start the call from a collected heap, and restart the high-water mark
	// there (clear_refs 5, Linux 4.0+) so the peak is the call's, not the
	// open's.
	goruntime.GC()
	debug.FreeOSMemory()
	before, err := procStatus("VmRSS")
	if err != nil {
		return err
	}
	reset := os.WriteFile("/proc/self/clear_refs", []byte("5"), 0) == nil
	host := strings.TrimSuffix(strings.TrimPrefix(c.url, "http://"), "/")
	policy, err := subakohttp.NewPolicy(subakohttp.PolicyConfig{
		Allow:        []string{host},
		AllowPrivate: []string{"127.0.0.1/32"},
	})
	if err != nil {
		return err
	}
	req, _ := json.Marshal(map[string]any{"request": map[string]any{
		"url": c.url, "output": map[string]string{"type": "file", "path": "/volume/tmp/big.bin"},
	}})
	start := time.Now()
	res, err := pkg.Call(ctx, runtime.CallRequest{Tool: "http", Arguments: req, Network: policy})
	elapsed := time.Since(start)
	if err != nil {
		return err
	}
	defer res.Release()
	if res.Outcome != runtime.OutcomeOK {
		return fmt.Errorf("outcome %s crash %+v result %s", res.Outcome, res.Crash, res.Result)
	}
	info, err := os.Stat(filepath.Join(res.TmpDir, "big.bin"))
	if err != nil {
		return err
	}
	if info.Size() != c.size {
		return fmt.Errorf("downloaded %d bytes, want %d; result %s", info.Size(), c.size, res.Result)
	}
	peak, err := procStatus("VmHWM")
	if err != nil {
		return err
	}
	return json.NewEncoder(w).Encode(downloadReport{
		Bytes: info.Size(), Seconds: elapsed.Seconds(), OpenPeak: openPeak, RSSBefore: before, HWM: peak, Reset: reset,
		Written: res.Stats.BytesWritten,
	})
}

// procStatus reads a size field of /proc/self/status (VmHWM: the peak
// resident set, VmRSS: the current one), in bytes.
func procStatus(field string) (int64, error) {
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(data), "\n") {
		if rest, ok := strings.CutPrefix(line, field+":"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			return kb << 10, err
		}
	}
	return 0, fmt.Errorf("no %s in /proc/self/status", field)
}
