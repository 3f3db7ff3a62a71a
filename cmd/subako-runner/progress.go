package main

import (
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/subako/subako-runner/runtime"
)

// progressTick is how often the status line's clock is redrawn.
const progressTick = 100 * time.Millisecond

// progress shows a status line on a terminal while the host compiles or
// discovers ("compiling module.wasm (14.4 MB)… 3.1 s"), erased when the
// step ends, and logs at debug level whether the compilation cache had the
// module.
type progress struct {
	w        io.Writer // nil: no status line (not a terminal, --quiet, --trace on stderr)
	log      *zap.Logger
	subject  string // the module's name as the line shows it
	cacheDir string // "" with --no-cache

	mu          sync.Mutex
	label       string
	started     time.Time
	stop        chan struct{}
	wg          sync.WaitGroup
	cacheBefore int
}

// newProgress returns the hook of runtime.Config.Progress for the module
// or package at path.
func newProgress(w io.Writer, log *zap.Logger, path, cacheDir string) *progress {
	return &progress{w: w, log: log, subject: moduleName(path), cacheDir: cacheDir}
}

// moduleName is how the status line names the module at path.
func moduleName(path string) string {
	if st, err := os.Stat(path); err == nil && st.IsDir() {
		return filepath.Join(filepath.Base(filepath.Clean(path)), runtime.ModuleFile)
	}
	return filepath.Base(path)
}

func (p *progress) event(ev runtime.ProgressEvent) {
	switch {
	case ev.Step == runtime.StepCompile && !ev.Done:
		n := countFiles(p.cacheDir)
		p.mu.Lock()
		p.cacheBefore = n
		p.mu.Unlock()
		p.start(fmt.Sprintf("compiling %s (%s)…", p.subject, decimalBytes(ev.Bytes)))
	case ev.Step == runtime.StepCompile:
		p.end()
		p.logCompile(ev)
	case ev.Step == runtime.StepDiscover && !ev.Done:
		p.start(fmt.Sprintf("discovering the tools of %s…", p.subject))
	default:
		p.end()
	}
}

// logCompile says at debug level whether the compiled code came from the
// cache: a compilation stores a new file in the cache directory, a hit
// does not.
func (p *progress) logCompile(ev runtime.ProgressEvent) {
	fields := []zap.Field{zap.String("module", p.subject), zap.Int("bytes", ev.Bytes), zap.Duration("duration", ev.Duration)}
	switch {
	case p.cacheDir == "":
		p.log.Debug("compiled the module (no compilation cache)", fields...)
	case countFiles(p.cacheDir) > p.before():
		p.log.Debug("compiled the module and stored it in the compilation cache", append(fields, zap.String("cache", p.cacheDir))...)
	default:
		p.log.Debug("compilation cache hit: the module was not compiled again", append(fields, zap.String("cache", p.cacheDir))...)
	}
}

func (p *progress) before() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.cacheBefore
}

func (p *progress) start(label string) {
	if p.w == nil {
		return
	}
	p.end()
	p.mu.Lock()
	p.label, p.started, p.stop = label, time.Now(), make(chan struct{})
	p.drawLocked()
	stop := p.stop
	p.mu.Unlock()
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		t := time.NewTicker(progressTick)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
				p.mu.Lock()
				p.drawLocked()
				p.mu.Unlock()
			}
		}
	}()
}

func (p *progress) drawLocked() {
	fmt.Fprintf(p.w, "\r\x1b[K%s %.1f s", p.label, time.Since(p.started).Seconds())
}

// end stops the clock and erases the line.
func (p *progress) end() {
	if p.w == nil {
		return
	}
	p.mu.Lock()
	stop := p.stop
	p.stop = nil
	p.mu.Unlock()
	if stop == nil {
		return
	}
	close(stop)
	p.wg.Wait()
	p.mu.Lock()
	fmt.Fprint(p.w, "\r\x1b[K")
	p.mu.Unlock()
}

// decimalBytes is a size as a status line shows it: 14.4 MB.
func decimalBytes(n int) string {
	switch {
	case n >= 1e6:
		return fmt.Sprintf("%.1f MB", float64(n)/1e6)
	case n >= 1e3:
		return fmt.Sprintf("%.1f kB", float64(n)/1e3)
	}
	return fmt.Sprintf("%d B", n)
}

// countFiles counts the files under dir (0 when it is "" or missing).
func countFiles(dir string) int {
	if dir == "" {
		return 0
	}
	n := 0
	filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && !strings.HasSuffix(d.Name(), ".tmp") {
			n++
		}
		return nil
	})
	return n
}
